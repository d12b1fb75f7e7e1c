import ArgumentParser
import Foundation
import VigilCore
import VigilEvents
import VigilNode

struct ResidentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resident", abstract: "Enrol, change, remove and list residents who must check in.",
        subcommands: [AddResident.self, SetResident.self, RemoveResident.self, ListResidents.self])
}

/// Settings shared by `resident add` and `resident set`; unset options keep their value.
struct ResidentOptions: ParsableArguments {
    @Option(help: "Display name.") var name: String?
    @Option(help: "Check-in mode: time (prompt every interval), pulse (emergency unless data keeps coming) or off.")
    var mode: String?
    @Option(help: "Interval between prompts (time) or the emergency horizon (pulse), e.g. 4h.") var interval: String?
    @Option(help: "Time to answer \"are you OK?\" before contacts are texted (default 20m).") var confirm: String?
    @Option(help: "Text to loud alarm (default 5m).") var textToAlarm: String?
    @Option(help: "Loud alarm to contacts being told (default 5m).") var alarmToNotify: String?
    @Option(help: "A contact as NAME=ADDRESS (repeat for more); replaces the list.") var contact: [String] = []
    @Option(help: "Night window in local time, e.g. 22:00-07:00 (\"none\" removes it).") var night: String?
    @Option(help: "Local time offset from UTC in minutes for the night window, e.g. 60.") var utcOffset: Int?
    @Option(help: "A pause as START/END in ISO 8601 (repeat for more); replaces the list.") var pause: [String] = []
    @Option(help: "Address of the resident's BLE tag (AA:BB:CC:DD:EE:FF); its presence counts as a sign of life.")
    var tag: String?

    func apply(to r: inout Resident) throws {
        if let name { r.name = name }
        if let mode {
            switch mode {
            case "time": r.mode = .time
            case "pulse": r.mode = .pulse
            case "off": r.mode = .off
            default: throw CLIError("--mode must be time, pulse or off", code: 64)
            }
        }
        if let interval { r.intervalUs = try duration(interval, "--interval") }
        if let confirm { r.confirmUs = try duration(confirm, "--confirm") }
        if let textToAlarm { r.textToAlarmUs = try duration(textToAlarm, "--text-to-alarm") }
        if let alarmToNotify { r.alarmToNotifyUs = try duration(alarmToNotify, "--alarm-to-notify") }
        if !contact.isEmpty {
            r.contacts = try contact.map { text in
                let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[1].isEmpty else { throw CLIError("--contact must be NAME=ADDRESS", code: 64) }
                var c = Contact()
                c.name = parts[0]
                c.address = parts[1]
                return c
            }
        }
        if let night {
            if night == "none" {
                r.clearNight()
            } else {
                let ends = night.split(separator: "-").map(String.init)
                guard ends.count == 2, let start = minutes(ends[0]), let end = minutes(ends[1]) else {
                    throw CLIError("--night must look like 22:00-07:00", code: 64)
                }
                r.night.startMinute = start
                r.night.endMinute = end
            }
        }
        if let utcOffset {
            guard (-840...840).contains(utcOffset) else { throw CLIError("--utc-offset must be within ±840 minutes", code: 64) }
            r.night.utcOffsetMinutes = Int32(utcOffset)
        }
        if !pause.isEmpty {
            r.pauses = try pause.map { text in
                let ends = text.split(separator: "/").map(String.init)
                guard ends.count == 2, let start = iso(ends[0]), let end = iso(ends[1]), end > start else {
                    throw CLIError("--pause must be START/END in ISO 8601, END after START", code: 64)
                }
                var p = Pause()
                p.startUs = start
                p.endUs = end
                return p
            }
        }
        if let tag {
            guard let address = parseAddress(tag) else { throw CLIError("--tag must be an address like C0:11:22:33:44:55", code: 64) }
            r.bleTag = address
        }
    }

    private func duration(_ text: String, _ option: String) throws -> UInt64 {
        guard let us = HumanDuration.parseMicroseconds(text), us >= 1_000_000 else {
            throw CLIError("\(option) must be a duration of at least 1s, such as 20m or 4h", code: 64)
        }
        return us
    }

    private func minutes(_ text: String) -> UInt32? {
        let hm = text.split(separator: ":").compactMap { UInt32($0) }
        guard hm.count == 2, hm[0] < 24, hm[1] < 60 else { return nil }
        return hm[0] * 60 + hm[1]
    }

    private func iso(_ text: String) -> UInt64? {
        guard let date = try? Date(text, strategy: .iso8601) else { return nil }
        return UInt64(max(0, date.timeIntervalSince1970 * 1_000_000))
    }
}

/// The node's current projections, read from its log (checkpoint + tail).
func currentState(_ dir: String) throws -> Projections {
    try Replay.currentState(try openForReading(dir), settings: ProjectionSettings())
}

/// The resident `id` as the log knows it, or a clear error.
func existingResident(_ id: String, _ dir: String) throws -> EscalationBook.ResidentState {
    guard let r = try currentState(dir).escalations.residents[id] else { throw CLIError("no resident \(id)") }
    return r
}

func parseAddress(_ text: String) -> UInt64? {
    let bytes = text.split(separator: ":").compactMap { UInt8($0, radix: 16) }
    guard bytes.count == 6 else { return nil }
    return bytes.reduce(0) { $0 << 8 | UInt64($1) }
}

struct AddResident: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Enrol a resident.")
    @Argument(help: "Resident id, e.g. room-12.") var id: String
    @OptionGroup var settings: ResidentOptions
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            guard !id.isEmpty, !id.contains(" "), id.count <= 64 else { throw CLIError("a resident id is 1-64 characters without spaces", code: 64) }
            if let existing = try? currentState(dir), existing.escalations.residents[id] != nil {
                throw CLIError("resident \(id) exists; use `vigil resident set \(id)`")
            }
            var r = Resident()
            r.id = id
            r.mode = .time
            r.intervalUs = 4 * 3_600_000_000
            try settings.apply(to: &r)
            let seq = try EventWriter.append(.residentEnrolled(r), dataDirectory: dir)
            FileOutput.standardOutput.write("enrolled \(id) (event \(seq))\n")
        }
    }
}

struct SetResident: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "set", abstract: "Change a resident's settings.")
    @Argument var id: String
    @OptionGroup var settings: ResidentOptions
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            var r = Resident(try existingResident(id, dir))
            try settings.apply(to: &r)
            let seq = try EventWriter.append(.residentUpdated(r), dataDirectory: dir)
            FileOutput.standardOutput.write("updated \(id) (event \(seq))\n")
        }
    }
}

struct RemoveResident: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a resident.")
    @Argument var id: String
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            _ = try existingResident(id, dir)
            var removed = ResidentRemoved()
            removed.id = id
            let seq = try EventWriter.append(.residentRemoved(removed), dataDirectory: dir)
            FileOutput.standardOutput.write("removed \(id) (event \(seq))\n")
        }
    }
}

struct ListResidents: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Residents and where each stands.")
    @OptionGroup var options: DataOptions
    @Flag(help: "JSON output.") var json = false

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            let state = try currentState(dir)
            let residents = state.escalations.residents.values.sorted { $0.id < $1.id }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                FileOutput.standardOutput.write(String(decoding: try encoder.encode(residents), as: UTF8.self) + "\n")
                return
            }
            if residents.isEmpty { FileOutput.standardOutput.write("no residents\n") }
            for r in residents {
                let next = state.escalations.nextDeadline(for: r)
                    .map { "next: \($0.step) at \(EventFormatting.time($0.dueMicroseconds))" } ?? "no deadline"
                let name = r.name.isEmpty ? "" : " (\(r.name))"
                FileOutput.standardOutput.write("\(r.id)\(name): \(r.checkInMode) every \(HumanDuration.format(microseconds: r.intervalMicroseconds)), step \(r.ladderStep), \(r.contacts.count) contacts; \(next)\n")
            }
        }
    }
}

extension Resident {
    /// The event payload for a resident as the projection holds it (for `resident set`).
    init(_ s: EscalationBook.ResidentState) {
        self.init()
        id = s.id
        name = s.name
        mode = s.checkInMode
        intervalUs = s.intervalMicroseconds
        confirmUs = s.confirmMicroseconds
        textToAlarmUs = s.textToAlarmMicroseconds
        alarmToNotifyUs = s.alarmToNotifyMicroseconds
        contacts = s.contacts.map { var c = Contact(); c.name = $0.name; c.address = $0.address; return c }
        pauses = s.pauses.map { var p = Pause(); p.startUs = $0.start; p.endUs = $0.end; return p }
        if let n = s.night {
            night.startMinute = n.startMinute
            night.endMinute = n.endMinute
            night.utcOffsetMinutes = n.utcOffsetMinutes
        }
        bleTag = s.bleTag
    }
}

struct CheckInCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "checkin", abstract: "Record that a resident is OK (\"I'm OK\").")
    @Argument var resident: String
    @Option(help: "A heart-rate reading in bpm instead of a plain check-in.") var heartRate: Double?
    @Option(help: "The Heart Rate Measurement flags byte that came with the reading.") var flags: UInt32?
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            var c = CheckIn()
            c.resident = resident
            c.source = heartRate == nil ? .checkInCli : .checkInHeartRate
            if let heartRate { c.value = heartRate }
            if let flags { c.heartRateFlags = flags & 0xFF }
            let seq = try EventWriter.append(.checkIn(c), dataDirectory: dir)
            let counts = EscalationBook.isPositive(c) ? "" : " (not counted: implausible reading or no sensor contact)"
            FileOutput.standardOutput.write("checked in \(resident) (event \(seq))\(counts)\n")
        }
    }
}

struct AcknowledgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ack", abstract: "Silence the alarms sounding now.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            var ack = AlarmAcknowledged()
            ack.by = "cli"
            let seq = try EventWriter.append(.alarmAcknowledged(ack), dataDirectory: dir)
            FileOutput.standardOutput.write("acknowledged (event \(seq))\n")
        }
    }
}
