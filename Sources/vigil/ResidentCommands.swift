import ArgumentParser
import Foundation
import VigilCore
import VigilEvents
import VigilNode
import VigilRadio

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
    @Option(help: "Address of the resident's BLE tag (AA:BB:CC:DD:EE:FF); seen in range is shown as last seen (it is not a sign of life).")
    var tag: String?
    @Option(help: "The resident's own address for texts (the ladder's second step goes there); \"\" clears.")
    var address: String?
    @Option(help: "Room or bed, in messages to contacts and staff; \"\" clears.") var room: String?
    @Option(help: "A weekly pause in local time, e.g. 'Mon-Fri 09:00-12:00' or 'Sat,Sun 22:00-02:00' (repeat for more); replaces the list; \"none\" clears.")
    var weekly: [String] = []
    @Option(help: "IANA time zone for the night window and weekly pauses, e.g. Europe/Madrid (follows daylight saving); \"none\" clears.")
    var timeZone: String?
    @Option(name: .customLong("hr-sensor"), help: "The resident's heart-rate sensor (Heart Rate service 0x180D), AA:BB:CC:DD:EE:FF, with /random for a random address; the box links to it, pairs with it at the first link and keeps the bond (decision 0005), and logs its readings as check-ins; \"none\" removes it and its bond (set none, then the address, to pair a strap again).")
    var heartRateSensor: String?

    /// The settings given on the command line for resident `id` (unset options stay nil).
    func settings(for id: String) throws -> ResidentSettings {
        var r = ResidentSettings(id: id)
        r.name = name
        if let mode {
            guard let m = ResidentSettings.Mode(rawValue: mode) else { throw CLIError("--mode must be time, pulse or off", code: 64) }
            r.mode = m
        }
        if let interval { r.intervalMicroseconds = try duration(interval, "--interval") }
        if let confirm { r.confirmMicroseconds = try duration(confirm, "--confirm") }
        if let textToAlarm { r.textToAlarmMicroseconds = try duration(textToAlarm, "--text-to-alarm") }
        if let alarmToNotify { r.alarmToNotifyMicroseconds = try duration(alarmToNotify, "--alarm-to-notify") }
        if !contact.isEmpty {
            r.contacts = try contact.map { text in
                let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[1].isEmpty else { throw CLIError("--contact must be NAME=ADDRESS", code: 64) }
                return ResidentSettings.Contact(name: parts[0], address: parts[1])
            }
        }
        if let night {
            if night == "none" {
                r.clearNight = true
            } else {
                let ends = night.split(separator: "-").map(String.init)
                guard ends.count == 2, let start = minutes(ends[0]), let end = minutes(ends[1]) else {
                    throw CLIError("--night must look like 22:00-07:00", code: 64)
                }
                r.night = ResidentSettings.Night(startMinute: start, endMinute: end)
            }
        }
        if let utcOffset {
            guard (-840...840).contains(utcOffset) else { throw CLIError("--utc-offset must be within ±840 minutes", code: 64) }
            r.utcOffsetMinutes = Int32(utcOffset)
        }
        if !pause.isEmpty {
            r.pauses = try pause.map { text in
                let ends = text.split(separator: "/").map(String.init)
                guard ends.count == 2, let start = iso(ends[0]), let end = iso(ends[1]), end > start else {
                    throw CLIError("--pause must be START/END in ISO 8601, END after START", code: 64)
                }
                return ResidentSettings.Pause(startMicroseconds: start, endMicroseconds: end)
            }
        }
        if let tag {
            guard let address = parseAddress(tag) else { throw CLIError("--tag must be an address like C0:11:22:33:44:55", code: 64) }
            r.tag = address
        }
        r.ownAddress = address
        r.room = room
        if weekly == ["none"] {
            r.weekly = []
        } else if !weekly.isEmpty {
            r.weekly = try weekly.map { text in
                guard let slot = Self.parseWeekly(text) else {
                    throw CLIError("--weekly must look like 'Mon-Fri 09:00-12:00' (days Mon..Sun, ranges and commas)", code: 64)
                }
                return slot
            }
        }
        if let heartRateSensor {
            if heartRateSensor == "none" {
                r.heartRateSensor = ""
            } else {
                guard let sensor = LEAddress(heartRateSensor), sensor.value != 0 else {
                    throw CLIError("--hr-sensor must be an address like C0:11:22:33:44:55 (with /random for a random one), or none", code: 64)
                }
                r.heartRateSensor = sensor.description
            }
        }
        if let timeZone {
            if timeZone == "none" {
                r.timeZone = ""
            } else {
                guard TimeZoneFiles.load(timeZone) != nil else {
                    throw CLIError("--time-zone: \(timeZone) is not in the time zone database (\(TimeZoneFiles.directory))", code: 64)
                }
                r.timeZone = timeZone
            }
        }
        return r
    }

    static let dayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// "Mon-Fri 09:00-12:00", "Sat,Sun 22:00-02:00", "Fri-Mon 08:00-09:00".
    static func parseWeekly(_ text: String) -> ResidentSettings.Weekly? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard parts.count == 2 else { return nil }
        var days: UInt32 = 0
        for item in parts[0].lowercased().split(separator: ",") {
            let ends = item.split(separator: "-").map { dayNames.firstIndex(of: String($0.prefix(3))) }
            guard (1...2).contains(ends.count), let first = ends.first ?? nil, let last = ends.last ?? nil else { return nil }
            var d = first
            while true {
                days |= 1 << UInt32(d)
                if d == last { break }
                d = (d + 1) % 7
            }
        }
        let times = parts[1].split(separator: "-").map(String.init)
        guard days != 0, times.count == 2, let start = minutesOfDay(times[0]), let end = minutesOfDay(times[1]), start != end else { return nil }
        return ResidentSettings.Weekly(days: days, startMinute: start, endMinute: end)
    }

    static func minutesOfDay(_ text: String) -> UInt32? {
        let hm = text.split(separator: ":").compactMap { UInt32($0) }
        guard hm.count == 2, hm[0] < 24, hm[1] < 60 else { return nil }
        return hm[0] * 60 + hm[1]
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
            let reply = try CommandSender.send(.enrolResident(try settings.settings(for: id)), dataDirectory: dir)
            FileOutput.standardOutput.write("enrolled \(id) (event \(reply.sequence ?? 0))\n")
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
            let reply = try CommandSender.send(.updateResident(try settings.settings(for: id)), dataDirectory: dir)
            FileOutput.standardOutput.write("updated \(id) (event \(reply.sequence ?? 0))\n")
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
            let reply = try CommandSender.send(.removeResident(ResidentReference(id: id)), dataDirectory: dir)
            FileOutput.standardOutput.write("removed \(id) (event \(reply.sequence ?? 0))\n")
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
                let sensor = state.sensors.byResident[r.id].map { "; " + Self.describe($0) } ?? ""
                FileOutput.standardOutput.write("\(r.id)\(name): \(r.checkInMode) every \(HumanDuration.format(microseconds: r.intervalMicroseconds)), step \(r.ladderStep), \(r.contacts.count) contacts; \(next)\(sensor)\n")
                for line in Self.told(r, state) { FileOutput.standardOutput.write("  \(line)\n") }
            }
        }
    }
}

extension ListResidents {
    /// Who was told what in the resident's current ladder, step by step, and how each message
    /// stands: what was said to whom, never more than the outbox knows.
    static func told(_ r: EscalationBook.ResidentState, _ state: Projections) -> [String] {
        guard r.step > 0 else { return [] }
        let prefix = "\(r.id)/\(r.ladder)/"
        var lines = state.outbox.entries.values.filter { $0.id.hasPrefix(prefix) }
            .sorted { ($0.createdSequence, $0.id) < ($1.createdSequence, $1.id) }
            .map { e in "\(e.id.dropFirst(prefix.count)): \(e.recipients.joined(separator: ", ")) (\(standing(e)))" }
        if r.ownAddress.isEmpty { lines.insert("no phone of their own: asked by the box only", at: 0) }
        if let call = state.calls.calls[CallBook.id(resident: r.id, ladder: r.ladder)] {
            let taken = call.taken.map { "; taken by \($0.by)" } ?? (call.isOpen ? "; not taken yet" : "")
            lines.append("call \(call.code): told \(call.told.isEmpty ? "nobody" : call.told.joined(separator: ", "))\(taken)")
        }
        return lines
    }

    /// "delivered", "received by the centre", "pending", "not delivered: why".
    static func standing(_ e: Outbox.Entry) -> String {
        if e.delivered { return e.channel == .arc ? "received by the centre" : "delivered" }
        return e.attempts == 0 ? "pending" : "not delivered after \(e.attempts) attempts: \(e.lastError)"
    }

    /// "heart-rate sensor C0:…: linked, last 72 bpm (contact) at TIME", from the log.
    static func describe(_ sensor: SensorLinks.Sensor) -> String {
        let address = sensor.address
        var text = "heart-rate sensor \(address): " + (sensor.linked ? (sensor.bonded ? "linked, bonded" : "linked, unbonded") : "not linked")
        if !sensor.linked, !sensor.closeReason.isEmpty { text += " (\(sensor.closeReason))" }
        if sensor.lastReadingMicroseconds > 0 {
            text += ", last \(Int(sensor.lastBeatsPerMinute)) bpm (\(sensor.lastContact)"
                + (sensor.lastPositive ? "" : ", not a sign of life") + ") at \(EventFormatting.time(sensor.lastReadingMicroseconds))"
        }
        return text
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
            let reply = try CommandSender.send(.checkIn(CheckInRequest(resident: resident, heartRate: heartRate, heartRateFlags: flags)),
                                               dataDirectory: dir)
            var c = CheckIn()
            c.source = heartRate == nil ? .checkInCli : .checkInHeartRate
            if let heartRate { c.value = heartRate }
            if let flags { c.heartRateFlags = flags & 0xFF }
            let counts = EscalationBook.isPositive(c) ? "" : " (not counted: implausible reading or no sensor contact)"
            FileOutput.standardOutput.write("checked in \(resident) (event \(reply.sequence ?? 0))\(counts)\n")
        }
    }
}

struct AcknowledgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ack", abstract: "Silence the alarms sounding now.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            let reply = try CommandSender.send(.silenceAlarms(SilenceRequest(by: "cli")), dataDirectory: dir)
            FileOutput.standardOutput.write("acknowledged (event \(reply.sequence ?? 0))\n")
        }
    }
}
