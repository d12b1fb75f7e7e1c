import ArgumentParser
import Foundation
import VigilEvents
import VigilLog
import VigilNode
import VigilSystem

struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log", abstract: "Read, check and salvage the event log.",
        subcommands: [Tail.self, Stats.self, Check.self, Salvage.self])
}

struct Tail: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the last events (JSON Lines with --json).")

    @OptionGroup var options: DataOptions

    @Flag(name: .short, help: "Keep printing events as they are appended.")
    var follow = false

    @Option(name: [.customShort("n"), .customLong("count")], help: "How many events to print first.")
    var count: Int = 20

    @Option(help: "Only events of this kind (\(EventKind.known.map(\.name).joined(separator: ", "))).")
    var kind: String?

    @Flag(help: "JSON Lines output.")
    var json = false

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            var filter: EventKind?
            if let kind {
                guard let k = EventKind(name: kind) else {
                    throw CLIError("unknown kind \(kind); kinds are \(EventKind.known.map(\.name).joined(separator: ", "))", code: 64)
                }
                filter = k
            }
            guard count >= 0 else { throw CLIError("-n must not be negative", code: 64) }
            let log = try openForReading(dir)
            // What the hub holds, read with the log: events that leave the box say synced or pending.
            let joined = !((try? HubLinks.load(dataDirectory: dir).hubs.isEmpty) ?? true)
            func readMark() throws -> HubSyncMark? {
                let mark = try HubSyncMark.read(log)
                return joined || !mark.book.hub.isEmpty ? mark : nil
            }
            var mark = try readMark()
            var last = try printInitial(log, filter: filter, mark: mark)
            guard follow else { return }
            // Woken by inotify when the node commits; no polling loop.
            let watch = try FileWatch(path: dir + "/data.mdb")
            while true {
                mark = try readMark()
                last = try printFrom(log, start: last + 1, filter: filter, mark: mark)
                _ = try watch.wait(timeoutMilliseconds: -1)
            }
        }
    }

    private func printInitial(_ log: EventLog, filter: EventKind?, mark: HubSyncMark?) throws -> UInt64 {
        // Without a filter the last N are the last N sequences; with one, keep a ring of N.
        var ring: [Event] = []
        var errors: [String] = []
        var lastSeen: UInt64 = 0
        try log.read { txn in
            let lastSeq = try txn.lastSequence()
            lastSeen = lastSeq
            let start = filter == nil && lastSeq > UInt64(count) ? lastSeq - UInt64(count) + 1 : 0
            try txn.forEach(from: start) { result in
                switch Replay.input(result) {
                case .event(let e):
                    if filter == nil || e.body.kind == filter {
                        ring.append(e)
                        if ring.count > count { ring.removeFirst() }
                    }
                case .undecodable(let error):
                    if filter == nil { errors.append(error.description) }
                }
                return true
            }
        }
        for e in errors { printError(e) }
        for e in ring { emit(e, mark) }
        return lastSeen
    }

    private func printFrom(_ log: EventLog, start: UInt64, filter: EventKind?, mark: HubSyncMark?) throws -> UInt64 {
        var last = start - 1
        try log.read { txn in
            try txn.forEach(from: start) { result in
                switch Replay.input(result) {
                case .event(let e):
                    last = e.sequence
                    if filter == nil || e.body.kind == filter { emit(e, mark) }
                case .undecodable(let error):
                    last = error.sequence
                    printError(error.description)
                }
                return true
            }
        }
        return last
    }

    private func emit(_ event: Event, _ mark: HubSyncMark?) {
        // On a box with a hub, events that leave the box say whether the hub holds them yet.
        let sync = mark?.state(of: event)
        FileOutput.standardOutput.write((json ? EventFormatting.jsonLine(event, sync: sync) : EventFormatting.textLine(event, sync: sync)) + "\n")
    }
}

struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Counts, sizes and pages of the event log.")

    @OptionGroup var options: DataOptions

    @Flag(help: "One JSON object.")
    var json = false

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            let log = try openForReading(dir)
            var byKind: [String: (count: Int, bytes: Int)] = [:]
            var unreadable = 0
            var first: UInt64 = 0, last: UInt64 = 0, firstTime: UInt64 = 0, lastTime: UInt64 = 0
            let pages = try log.read { txn -> PageStatistics in
                try txn.forEach(from: 0) { result in
                    switch result {
                    case .success(let view):
                        let name = EventKind(rawValue: Int(view.kind)).map(\.name) ?? "kind-\(view.kind)"
                        byKind[name, default: (0, 0)].count += 1
                        byKind[name, default: (0, 0)].bytes += view.payload.count
                        if first == 0 { first = view.sequence; firstTime = view.timeMicroseconds }
                        last = view.sequence
                        lastTime = view.timeMicroseconds
                    case .failure:
                        unreadable += 1
                    }
                    return true
                }
                return try txn.eventsPageStatistics()
            }
            let space = try log.spaceUsage()
            if json {
                var kinds: [String: [String: Int]] = [:]
                for (k, v) in byKind { kinds[k] = ["count": v.count, "payload_bytes": v.bytes] }
                let object: [String: Any] = [
                    "first_sequence": first, "last_sequence": last, "entries": pages.entries, "unreadable": unreadable,
                    "kinds": kinds, "leaf_pages": pages.leafPages, "branch_pages": pages.branchPages,
                    "overflow_pages": pages.overflowPages, "page_size": pages.pageSize, "depth": pages.depth,
                    "bytes_per_event": pages.entries == 0 ? 0 : Double(pages.totalBytes) / Double(pages.entries),
                    "used_bytes": space.usedBytes, "map_bytes": space.mapBytes,
                ]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                FileOutput.standardOutput.write(String(decoding: data, as: UTF8.self) + "\n")
                return
            }
            var out = "events \(first)...\(last): \(pages.entries) stored, \(unreadable) unreadable\n"
            if firstTime > 0 { out += "from \(EventFormatting.time(firstTime)) to \(EventFormatting.time(lastTime))\n" }
            for (k, v) in byKind.sorted(by: { $0.value.count > $1.value.count }) {
                out += "  \(k): \(v.count) events, \(v.bytes) payload bytes (\(v.count == 0 ? 0 : v.bytes / v.count) each)\n"
            }
            let perEvent = pages.entries == 0 ? 0 : Double(pages.totalBytes) / Double(pages.entries)
            out += "pages: \(pages.leafPages) leaf, \(pages.branchPages) branch, \(pages.overflowPages) overflow of \(pages.pageSize) B; depth \(pages.depth); \(String(format: "%.1f", perEvent)) B per event on disk\n"
            out += "file: \(space.usedBytes >> 10) KiB used, map \(space.mapBytes >> 20) MiB\n"
            FileOutput.standardOutput.write(out)
        }
    }
}

struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the event log's pages and every record's checksum, without LMDB (safe on a damaged card).",
        discussion: """
        Exit status: 0 the log is sound; 3 pages are damaged (the node salvages the log at its next \
        start, or stop it and run `vigil log salvage`); 4 some records fail their checksum (they are \
        reported and never applied); 1 the check could not run. Safe while a node runs.
        """)

    @OptionGroup var options: DataOptions
    @Flag(help: "Print the report as JSON.") var json = false
    /// The node's check before it opens its log: nothing writes it, so damage is not looked at twice.
    @Flag(help: .hidden) var nothingWrites = false

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            // Pinning the snapshot maps the file through LMDB (only its meta pages are read).
            exitOnMemoryFault(message: "vigil: the event log in \(dir) is damaged beyond what LMDB can open: salvage it "
                              + "(stop the node and run `vigil log salvage`; a node does it at its next start)\n", status: 3)
            let report: LogCheckReport
            do { report = try LogCheck.checkLive(directory: dir, nothingWrites: nothingWrites) } catch let error as LogError { throw CLIError(error.description) }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                FileOutput.standardOutput.write(String(decoding: try encoder.encode(report), as: UTF8.self) + "\n")
            } else {
                var out = "log \(dir): \(report.records) records checked (\(report.firstSequence)...\(report.lastSequence))"
                if report.unchecked > 0 { out += ", \(report.unchecked) from before checksums (read, not checkable)" }
                out += ", \(report.pages) pages of \(report.pageSize) bytes, in \(String(format: "%.2f", report.seconds)) s\n"
                FileOutput.standardOutput.write(out)
            }
            if let first = report.unconfirmedDamage.first {
                // On stderr, in JSON mode too: the node logs what the check says there.
                printError("a first look saw \(report.unconfirmedDamage.count) damaged pages (\(first)) that a later snapshot "
                           + "did not: most likely a read that overlapped a commit; if it recurs, suspect the card")
            }
            let verdict = LogRecovery.exitStatus(report)
            // One line on stderr for whoever runs it (the node reads it into its log).
            switch verdict {
            case .healthy:
                if !json { FileOutput.standardOutput.write("sound\n") }
            case .corruptRecords:
                printError("\(report.corruptRecords.reduce(0) { $0 + $1.count }) records fail their checksum: sequences \(LogSalvageText.ranges(report.corruptRecords))")
            case .damaged:
                printError("DAMAGED: \(report.damagedPages.count) pages (\(report.damagedPages.first ?? "")); "
                           + (report.pinned ? "" : "(read without pinning a snapshot: if a node is writing, check again) ")
                           + (report.unreachable.isEmpty ? "" : "sequences in doubt: \(LogSalvageText.ranges(report.unreachable)); ")
                           + "salvage it: stop the node and run `vigil log salvage` (a node does it at its next start)")
            }
            if verdict != .healthy { throw ExitCode(verdict.rawValue) }
        }
    }
}

struct Salvage: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy every record that can be trusted out of a damaged log into a fresh one.",
        discussion: """
        The damaged data.mdb is moved, untouched, to corrupt-TIME/ in the data directory. Only \
        records whose checksum matches are copied; what is lost is reported (and logged as \
        log-salvaged). Refused while a node runs: a node salvages a damaged log by itself at its \
        next start.
        """)

    @OptionGroup var options: DataOptions
    @Flag(help: "Print the report as JSON.") var json = false
    @Flag(help: "Salvage even a log the check finds sound (drops records that fail their checksum).") var force = false
    @Option(help: .hidden) var forNode: String?

    func run() async throws {
        try await reportingErrors {
            let dir = try options.load().configuration.dataDirectory
            if let forNode {
                // Run by a starting node, which holds the directory's lock and logs the event.
                let report: SalvageReport
                do { report = try LogSalvage.salvage(directory: dir) } catch let error as LogError { throw CLIError(error.description) }
                try JSONEncoder().encode(report).write(to: URL(fileURLWithPath: forNode))
                return
            }
            let outcome: (SalvageReport, LogCheckReport)?
            do {
                outcome = try await LogRecovery.salvageByOperator(dataDirectory: dir, force: force)
            } catch let error as NodeError {
                if case .alreadyRunning = error {
                    throw CLIError("a node is running on \(dir); it salvages a damaged log by itself at its next start (or stop it, then run this)")
                }
                throw CLIError(error.description)
            } catch let error as LogError {
                throw CLIError(error.description)
            }
            guard let (report, _) = outcome else {
                FileOutput.standardOutput.write(json ? "{\"salvaged\":false}\n" : "the log is sound: nothing to salvage (--force to rewrite it anyway)\n")
                return
            }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                FileOutput.standardOutput.write(String(decoding: try encoder.encode(report), as: UTF8.self) + "\n")
                return
            }
            var out = "salvaged in \(String(format: "%.2f", report.seconds)) s: \(report.recovered) records kept"
            if report.recoveredOutsideTree > 0 { out += " (\(report.recoveredOutsideTree) found outside the damaged tree)" }
            out += ", \(report.lostCount) lost"
            if !report.lost.isEmpty { out += " (\(LogSalvageText.ranges(report.lost)))" }
            if report.tailUnknown { out += ", and an unknown number after \(report.highestRecovered)" }
            out += "\nthe damaged file is kept in \(report.keptAside); new events start at \(report.nextSequence)\n"
            FileOutput.standardOutput.write(out)
        }
    }
}
