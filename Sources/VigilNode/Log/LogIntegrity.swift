import VigilLog
import VigilSystem

/// Checks the running node's log, in a process of its own (`vigil log check`), a minute after
/// start and then every `log.check_interval`. The checker reads data.mdb without LMDB and pins its
/// snapshot with an LMDB read transaction of its own, so a damaged page cannot crash the node and
/// the writer is never held up.
///
/// Sound: the start is marked checked (a crash from now on is not blamed on the log). Records
/// failing their checksum: counted and shown; they are never applied, and nothing else is done.
/// Damaged pages: the directory is marked and the node stops (systemd starts it again); the next
/// start salvages the log before opening it (`LogRecovery.beforeOpen`).
final class LogIntegrity: NodeComponent {
    /// What the check needs of the configuration.
    struct Settings {
        /// `vigil` itself, run as `vigil log check`; nil: no checks (tests, benchmarks).
        var executable: String?
        var dataDirectory: String
        /// `log.check_interval`; 0: only the first check.
        var intervalMicroseconds: UInt64
    }

    unowned let context: any LogMaintenanceContext
    let settings: Settings
    static let checkTimer = Scheduler.Timer("log-check")
    static let firstCheckAfterNanoseconds: UInt64 = 60_000_000_000
    /// A check of a large log on a slow card takes minutes; one that takes this long is stuck.
    static let timeoutNanoseconds: UInt64 = 1_800_000_000_000
    private var running: (child: ChildProcess, started: UInt64)?
    /// The last verdict, for `vigil status`.
    private(set) var last: String?

    init(context: any LogMaintenanceContext, settings: Settings) {
        self.context = context
        self.settings = settings
    }

    func start() throws(NodeError) {
        context.scheduler.register(Self.checkTimer) { [unowned self] in due() }
        guard settings.executable != nil else { return }
        context.scheduler.schedule(Self.checkTimer, afterNanoseconds: Self.firstCheckAfterNanoseconds)
    }

    private func due() {
        if let running {
            guard context.monotonic.nowNanoseconds() &- running.started >= Self.timeoutNanoseconds else { return }
            running.child.kill() // its exit comes through the watch, as a failed check
            return
        }
        guard let executable = settings.executable else { return }
        let child: ChildProcess
        do {
            child = try ChildProcess(path: executable,
                                     arguments: ["log", "check", "--data", FileSystem.canonicalPath(settings.dataDirectory)],
                                     input: [])
        } catch {
            context.logger.warning("the log check could not start", metadata: ["error": "\(error)"])
            scheduleNext()
            return
        }
        running = (child, context.monotonic.nowNanoseconds())
        guard context.watch(child.exitDescriptor, "the log check", handler: { [unowned self] _ in finished() }) else {
            child.kill()
            running = nil // the node is failing (the watch reported it); nothing to wait for
            return
        }
        context.scheduler.schedule(Self.checkTimer, afterNanoseconds: Self.timeoutNanoseconds)
    }

    private func finished() {
        guard let running, let status = running.child.reap() else { return }
        context.unwatch(running.child.exitDescriptor, "the log check")
        self.running = nil
        // A checker killed (timeout) or crashed leaves its read transaction's slot in the lock
        // file, and LMDB would keep every page since that snapshot from reuse: free the slot.
        context.log.clearStaleReaders()
        let said = running.child.standardError().trimmingCharacters(in: .whitespacesAndNewlines)
        let directory = settings.dataDirectory
        switch LogRecovery.CheckExit(rawValue: status) {
        case .healthy?:
            LogRecovery.checkPassed(directory: directory)
            last = "sound"
            // Sound, yet the check said something (damage a first look saw and a second did not).
            if !said.isEmpty { context.logger.warning("the log check found the log sound, and said more", metadata: ["check": "\(said)"]) }
        case .corruptRecords?:
            LogRecovery.checkPassed(directory: directory)
            last = "sound, but records fail their checksum: \(said)"
            context.logger.error("log records fail their checksum; they are reported and never applied", metadata: ["check": "\(said)"])
        case .damaged?:
            last = "DAMAGED: \(said)"
            LogRecovery.markDamaged(directory: directory)
            if let memory = context.fromMemory {
                // Running from memory (the card stopped taking writes): a restart could not
                // salvage onto this card, and would lose what is held only in memory.
                context.logger.critical("the log is damaged; running from memory, the node stays up",
                                     metadata: ["check": "\(said)", "held_in_memory": "\(memory.taken)"])
            } else {
                context.fail(.logDamaged(said))
                return
            }
        case nil:
            last = "the check failed (status \(status))"
            context.logger.warning("the log check failed", metadata: ["status": "\(status)", "stderr": "\(said)"])
        }
        scheduleNext()
    }

    private func scheduleNext() {
        let interval = settings.intervalMicroseconds
        if interval > 0 {
            context.scheduler.schedule(Self.checkTimer, afterNanoseconds: interval &* 1_000)
        } else {
            context.scheduler.cancel(Self.checkTimer)
        }
    }

    func stop() {
        guard let running else { return }
        running.child.kill()
        context.unwatch(running.child.exitDescriptor, "the log check")
        context.scheduler.cancel(Self.checkTimer)
        self.running = nil
    }
}
