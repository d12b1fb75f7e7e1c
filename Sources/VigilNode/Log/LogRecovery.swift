import Foundation
import Logging
import VigilEvents
import VigilLog
import VigilSystem

/// Text for lost sequence ranges ("120...180, 455"), the first `limit` of them.
public enum LogSalvageText {
    public static func ranges(_ ranges: [LogSalvaged.Range], limit: Int = 8) -> String {
        self.ranges(ranges.map { LogCheckReport.SequenceRange(first: $0.first, last: $0.last) }, limit: limit)
    }

    public static func ranges(_ ranges: [LogCheckReport.SequenceRange], limit: Int = 8) -> String {
        ranges.prefix(limit).map(\.description).joined(separator: ", ") + (ranges.count > limit ? ", ..." : "")
    }
}

/// What a node does about a damaged log before it opens it, and the event that records a salvage.
public enum LogRecovery {
    /// At most this many lost ranges go into the event (`lost_count` counts them all).
    static let maximumRangesLogged = 64

    /// The first event of a salvaged log.
    public static func event(_ report: SalvageReport, trigger: String) -> LogSalvaged {
        var e = LogSalvaged()
        e.lost = report.lost.prefix(maximumRangesLogged).map { range in
            var r = LogSalvaged.Range()
            r.first = range.first
            r.last = range.last
            return r
        }
        e.lostCount = report.lostCount
        e.recovered = report.recovered
        e.recoveredOutsideTree = report.recoveredOutsideTree
        e.highestRecovered = report.highestRecovered
        e.keptAside = report.keptAside
        e.damagedPages = UInt32(clamping: report.check.damagedPages.count)
        e.firstDamage = String((report.check.damagedPages.first ?? report.check.corruptRecords.first.map { "record \($0) fails its checksum" } ?? "").prefix(512))
        e.trigger = trigger
        e.seconds = report.seconds
        e.tailUnknown = report.tailUnknown
        return e
    }
}

extension LogRecovery {
    /// In the data directory: a start whose log check has not finished yet. Found at the next
    /// start, it means that start (or the run after it) ended before its log was checked, perhaps
    /// because reading the log crashed it: the log is then checked before it is opened.
    static let uncheckedStartMarker = "log-check-pending"
    /// In the data directory: a check found the log damaged; the next start salvages it.
    static let damagedMarker = "log-damaged"

    /// Opens the node's log: `beforeOpen` first; then, if LMDB refuses the file as damaged (not
    /// merely of another version), salvages it and opens the fresh one. Returns the log and what a
    /// salvage did.
    static func open(_ configuration: NodeConfiguration, logger: Logger,
                     onDurable: @escaping @Sendable (CommitReport) -> Void) throws(NodeError) -> (EventLog, SalvageReport?) {
        let directory = FileSystem.canonicalPath(configuration.dataDirectory)
        var salvaged: SalvageReport?
        // A card the kernel made read-only (often while a node ran, so markers of that run are
        // still there and cannot be replaced): nothing before the open can be written.
        if FileSystem.isOnReadOnlyFileSystem(directory) && FileSystem.exists(directory + "/data.mdb") {
            return (try unwritable(directory: directory, .system(SystemError("statvfs", directory, errno: .readOnlyFileSystem)), logger: logger), nil)
        }
        do {
            salvaged = try beforeOpen(directory: directory, executable: configuration.logCheckExecutable, logger: logger)
        } catch .system(let error) where LogError.system(error).isReadOnlyFileSystem && FileSystem.exists(directory + "/data.mdb") {
            return (try unwritable(directory: directory, LogError.system(error), logger: logger), nil)
        }
        do {
            return (try EventLog.open(configuration.log, onDurable: onDurable), salvaged)
        } catch where error.isReadOnlyFileSystem {
            return (try unwritable(directory: directory, error, logger: logger), salvaged)
        } catch where error.isDamage && salvaged == nil {
            logger.critical("the event log cannot be opened: it is damaged; salvaging it", metadata: ["error": "\(error)"])
            salvaged = salvage(directory: directory, executable: configuration.logCheckExecutable, logger: logger)
            FileSystem.remove(directory + "/" + damagedMarker)
            restartCount(directory: directory)
        } catch {
            throw .log(error)
        }
        do {
            return (try EventLog.open(configuration.log, onDurable: onDurable), salvaged)
        } catch {
            throw .log(error)
        }
    }

    /// A card the kernel turned read-only (what ext4 does after an I/O error with
    /// errors=remount-ro, and what many cards do at the end of their life): the log is opened for
    /// reading only and the node runs from memory on it (docs/log.md "Failing safe").
    private static func unwritable(directory: String, _ error: LogError, logger: Logger) throws(NodeError) -> EventLog {
        logger.critical("the data directory is read-only: opening the log for reading only; the node will run from memory",
                        metadata: ["error": "\(error)"])
        do { return try EventLog.openUnwritable(directory: directory, failure: error) } catch { throw .log(error) }
    }

    /// What `vigil log check` exits with.
    public enum CheckExit: Int32 {
        case healthy = 0
        case damaged = 3
        case corruptRecords = 4
    }

    public static func exitStatus(_ report: LogCheckReport) -> CheckExit {
        if !report.isStructurallySound { return .damaged }
        return report.corruptRecords.isEmpty ? .healthy : .corruptRecords
    }

    /// Before a node opens its log: finishes a salvage a power cut interrupted; checks the log
    /// (in a process of its own when `executable` is given) if the last start never finished its
    /// check or a check found damage; salvages a damaged log, in a process of its own too. Returns
    /// what the salvage did, for the `LogSalvaged` event the node then logs first.
    ///
    /// Never throws for a damaged log: if even the salvage fails, the damaged file is moved aside
    /// and the node starts on a fresh log, so the button and the alarms work whatever the card
    /// did. Throws only when the directory itself cannot be written.
    static func beforeOpen(directory given: String, executable: String?, logger: Logger) throws(NodeError) -> SalvageReport? {
        // Absolute: the check and the salvage run in "/" (see `runToCompletion`).
        let directory = FileSystem.canonicalPath(given)
        do { try LogSalvage.finishInterrupted(directory: directory) } catch { throw .log(error) }
        let data = directory + "/data.mdb"
        let damaged = FileSystem.exists(directory + "/" + damagedMarker)
        // How many starts in a row ended without a clean stop or a passing check (this one counts).
        let unclean = uncleanStarts(directory: directory) + 1
        do {
            try markStart(directory: directory, unclean: unclean)
        } catch where error.errno == .noSpace {
            // A full card: the log's disk reserve is for exactly this; without it, the start
            // goes on unmarked (the button matters more than the check of an unclean start).
            FileSystem.remove(directory + "/disk-reserve")
            do {
                try markStart(directory: directory, unclean: unclean)
            } catch {
                logger.critical("the card is full: this start is not marked, so an unclean stop will not be checked", metadata: ["error": "\(error)"])
            }
        } catch {
            throw .system(error)
        }
        guard FileSystem.exists(data), damaged || unclean > 1 else { return nil }
        logger.notice("checking the event log before opening it", metadata: [
            "why": "\(damaged ? "a check found it damaged" : "\(unclean - 1) start(s) in a row ended before the log was checked")",
        ])
        var verdict = check(directory: directory, executable: executable, logger: logger)
        let forcedBefore = FileSystem.exists(directory + "/" + forcedSalvageMarker)
        if verdict != .damaged && unclean > maximumUncleanStarts && !forcedBefore {
            // The check passes, yet start after start ends without a clean stop: damage the check
            // cannot see may be crashing LMDB. A salvage rebuilds the file from its records (and
            // keeps the old one), which ends such a loop.
            logger.critical("the node keeps stopping before its log is checked; salvaging the log to rule it out",
                            metadata: ["starts": "\(unclean - 1)"])
            // Once, until a check passes: a box that keeps losing power must not fill its card
            // with copies of a sound log.
            try? FileSystem.createExclusive(directory + "/" + forcedSalvageMarker, contents: [])
            verdict = .damaged
        }
        switch verdict {
        case .healthy, .corruptRecords:
            FileSystem.remove(directory + "/" + damagedMarker)
            return nil
        case .damaged:
            let report = salvage(directory: directory, executable: executable, logger: logger)
            FileSystem.remove(directory + "/" + damagedMarker)
            restartCount(directory: directory)
            return report
        }
    }

    /// A salvage forced by unclean starts was made; no other is forced until a check passes.
    static let forcedSalvageMarker = "log-forced-salvage"

    private static func markStart(directory: String, unclean: Int) throws(SystemError) {
        // Checked: on a file system ext4 stopped writing (a journal aborted after an I/O error,
        // not remounted read-only, so statvfs does not say so) this is where EROFS shows first.
        try FileSystem.removeIfPresent(directory + "/" + uncheckedStartMarker)
        try FileSystem.createExclusive(directory + "/" + uncheckedStartMarker, contents: Array("\(unclean)\n".utf8))
    }

    /// After a salvage this start counts as the first of a fresh file.
    static func restartCount(directory: String) {
        FileSystem.remove(directory + "/" + uncheckedStartMarker)
        try? FileSystem.createExclusive(directory + "/" + uncheckedStartMarker, contents: Array("1\n".utf8))
    }

    /// Unclean starts after which a log whose check passes is salvaged anyway.
    static let maximumUncleanStarts = 3
    /// Limits on the checks and the salvage a start waits for: a card that stalls must not keep
    /// the node (and its button) from starting. A 4 GiB log at an SD card's 40 MB/s reads in
    /// about 100 s; the salvage reads it twice and writes it once.
    static let checkTimeoutMilliseconds: Int32 = 15 * 60_000
    static let salvageTimeoutMilliseconds: Int32 = 60 * 60_000

    /// The starts counted in the data directory's mark (0 without one; 1 for an old empty mark).
    static func uncleanStarts(directory: String) -> Int {
        guard let data = FileManager.default.contents(atPath: directory + "/" + uncheckedStartMarker) else { return 0 }
        return Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 1
    }

    /// The check's verdict; a checker that crashes or fails counts as damage (a salvage is never
    /// destructive: the file is kept aside).
    static func check(directory: String, executable: String?, logger: Logger) -> CheckExit {
        func inProcess() -> CheckExit {
            do { return exitStatus(try LogCheck.check(directory: directory)) } catch {
                logger.error("the log check failed", metadata: ["error": "\(error)"])
                return .damaged
            }
        }
        guard let executable else { return inProcess() }
        let output = directory + "/log-check.out"
        defer { FileSystem.remove(output) }
        do {
            let status = try runToCompletion(path: executable, arguments: ["log", "check", "--data", directory, "--nothing-writes"], outputPath: output,
                                             timeoutMilliseconds: checkTimeoutMilliseconds)
            if let exit = CheckExit(rawValue: status) { return exit }
            logger.error("the log check ended badly", metadata: [
                "status": "\(status)", "output": "\((try? String(contentsOfFile: output, encoding: .utf8))?.prefix(500) ?? "")",
            ])
        } catch {
            logger.error("the log check could not run", metadata: ["error": "\(error)"])
            return inProcess()
        }
        return .damaged
    }

    /// Salvages in a process of its own (or in-process without an executable); if that fails,
    /// moves the damaged file aside so the node starts on a fresh log.
    static func salvage(directory given: String, executable: String?, logger: Logger) -> SalvageReport {
        let directory = FileSystem.canonicalPath(given)
        let before = try? FileSystem.entry(directory + "/data.mdb")
        if let executable {
            let output = directory + "/log-salvage.out", reportPath = directory + "/log-salvage.json"
            defer { FileSystem.remove(output); FileSystem.remove(reportPath) }
            do {
                let status = try runToCompletion(path: executable,
                                                 arguments: ["log", "salvage", "--data", directory, "--for-node", reportPath],
                                                 outputPath: output, timeoutMilliseconds: salvageTimeoutMilliseconds)
                if status == 0, let data = FileManager.default.contents(atPath: reportPath),
                   let report = try? JSONDecoder().decode(SalvageReport.self, from: data) {
                    logSalvage(report, logger: logger)
                    return report
                }
                logger.error("the log salvage ended badly", metadata: [
                    "status": "\(status)", "output": "\((try? String(contentsOfFile: output, encoding: .utf8))?.prefix(500) ?? "")",
                ])
            } catch {
                logger.error("the log salvage could not run", metadata: ["error": "\(error)"])
            }
        } else {
            do {
                let report = try LogSalvage.salvage(directory: directory)
                logSalvage(report, logger: logger)
                return report
            } catch {
                logger.error("the log salvage failed", metadata: ["error": "\(error)"])
            }
        }
        var report = SalvageReport()
        report.tailUnknown = true
        // A salvage that got as far as its fresh log (and was cut short after, or could not write
        // its report) is finished, not thrown away.
        try? LogSalvage.finishInterrupted(directory: directory)
        if let now = try? FileSystem.entry(directory + "/data.mdb"), let before,
           [now.device, now.inode] != [before.device, before.inode] {
            report.check.damagedPages = ["the salvage ran, but its report was lost"]
            logger.critical("the event log was salvaged, but how much was kept is not known")
            return report
        }
        // Last resort: keep the file, untouched, and start afresh.
        report.check.damagedPages = ["the salvage failed; nothing was copied"]
        do {
            report.keptAside = try LogSalvage.setAside(directory: directory)
            // A salvage that had finished its fresh log (then failed before moving the old one)
            // takes the place now free.
            try? LogSalvage.finishInterrupted(directory: directory)
            if FileSystem.exists(directory + "/data.mdb") {
                report.check.damagedPages = ["the salvage ran, but its report was lost"]
                logger.critical("the event log was salvaged, but how much was kept is not known", metadata: ["kept": "\(report.keptAside)"])
                return report
            }
            logger.critical("the damaged log could not be salvaged; it is kept aside and the node starts on a fresh log",
                            metadata: ["kept": "\(report.keptAside)"])
        } catch {
            logger.critical("the damaged log could not even be moved aside", metadata: ["error": "\(error)"])
        }
        return report
    }

    private static func logSalvage(_ report: SalvageReport, logger: Logger) {
        logger.critical("the event log was damaged and has been salvaged", metadata: [
            "recovered": "\(report.recovered)", "lost": "\(report.lostCount)\(report.tailUnknown ? " and an unknown number at the end" : "")",
            "lost_ranges": "\(LogSalvageText.ranges(report.lost))", "kept": "\(report.keptAside)",
            "seconds": "\(report.seconds)",
        ])
    }

    /// The node's log check has finished and found the log sound: a crash from now on is not
    /// the log's doing until the next start.
    static func checkedThisStart(directory: String) {
        FileSystem.remove(directory + "/" + uncheckedStartMarker)
    }

    /// A check passed while the node ran: the start is checked, and a salvage may be forced again.
    static func checkPassed(directory: String) {
        checkedThisStart(directory: directory)
        FileSystem.remove(directory + "/" + forcedSalvageMarker)
    }

    /// A running check found damage: the next start salvages.
    static func markDamaged(directory: String) {
        try? FileSystem.createExclusive(directory + "/" + damagedMarker, contents: [])
    }

    /// `vigil log salvage` run by a person: refuses while a node runs (the node salvages by itself
    /// at its next start), salvages, and logs `LogSalvaged` (trigger "operator") in the fresh log.
    /// `force`: salvage a log the check finds sound (to drop records that fail their checksums).
    /// Returns nil when the log is sound and `force` is not given.
    public static func salvageByOperator(dataDirectory: String, force: Bool,
                                         now: UInt64 = realtimeMicroseconds()) async throws -> (SalvageReport, LogCheckReport)? {
        let lock = try NodeBootstrap.lockDataDirectory(dataDirectory)
        defer { lock.unlock() }
        try LogSalvage.finishInterrupted(directory: dataDirectory)
        guard FileSystem.exists(dataDirectory + "/data.mdb") else { throw LogError.missing(directory: dataDirectory) }
        let check = try LogCheck.check(directory: dataDirectory)
        guard force || !check.isHealthy else { return nil }
        let report = try LogSalvage.salvage(directory: dataDirectory, now: now)
        let log = try EventLog.open(LogConfiguration(directory: dataDirectory))
        defer { log.close() }
        let (kind, payload) = EventCodec.encode(.logSalvaged(event(report, trigger: "operator")))
        let record = LogRecord(kind: kind, timeMicroseconds: now, payload: payload)
        _ = try await log.appendDurably(record, priority: .critical)
        FileSystem.remove(dataDirectory + "/" + damagedMarker)
        return (report, check)
    }
}
