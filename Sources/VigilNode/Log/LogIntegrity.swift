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
    unowned let node: Node
    static let checkTimer = Scheduler.Timer("log-check")
    static let firstCheckAfterNanoseconds: UInt64 = 60_000_000_000
    /// A check of a large log on a slow card takes minutes; one that takes this long is stuck.
    static let timeoutNanoseconds: UInt64 = 1_800_000_000_000
    private var running: (child: ChildProcess, started: UInt64)?
    /// The last verdict, for `vigil status`.
    private(set) var last: String?

    init(node: Node) {
        self.node = node
    }

    func start() throws(NodeError) {
        node.scheduler.register(Self.checkTimer) { [unowned self] in due() }
        guard node.configuration.logCheckExecutable != nil else { return }
        node.scheduler.schedule(Self.checkTimer, afterNanoseconds: Self.firstCheckAfterNanoseconds)
    }

    private func due() {
        if let running {
            guard node.monotonic.nowNanoseconds() &- running.started >= Self.timeoutNanoseconds else { return }
            running.child.kill() // its exit comes through the watch, as a failed check
            return
        }
        guard let executable = node.configuration.logCheckExecutable else { return }
        let child: ChildProcess
        do {
            child = try ChildProcess(path: executable,
                                     arguments: ["log", "check", "--data", FileSystem.canonicalPath(node.configuration.dataDirectory)],
                                     input: [])
        } catch {
            node.logger.warning("the log check could not start", metadata: ["error": "\(error)"])
            scheduleNext()
            return
        }
        running = (child, node.monotonic.nowNanoseconds())
        guard node.loop.watch(child.exitDescriptor, "the log check", handler: { [unowned self] _ in finished() }) else {
            child.kill()
            running = nil // the node is failing (the watch reported it); nothing to wait for
            return
        }
        node.scheduler.schedule(Self.checkTimer, afterNanoseconds: Self.timeoutNanoseconds)
    }

    private func finished() {
        guard let running, let status = running.child.reap() else { return }
        node.loop.unwatch(running.child.exitDescriptor, "the log check")
        self.running = nil
        // A checker killed (timeout) or crashed leaves its read transaction's slot in the lock
        // file, and LMDB would keep every page since that snapshot from reuse: free the slot.
        node.log.clearStaleReaders()
        let said = running.child.standardError().trimmingCharacters(in: .whitespacesAndNewlines)
        let directory = node.configuration.dataDirectory
        switch LogRecovery.CheckExit(rawValue: status) {
        case .healthy?:
            LogRecovery.checkPassed(directory: directory)
            last = "sound"
        case .corruptRecords?:
            LogRecovery.checkPassed(directory: directory)
            last = "sound, but records fail their checksum: \(said)"
            node.logger.error("log records fail their checksum; they are reported and never applied", metadata: ["check": "\(said)"])
        case .damaged?:
            last = "DAMAGED: \(said)"
            LogRecovery.markDamaged(directory: directory)
            if let memory = node.fromMemory {
                // Running from memory (the card stopped taking writes): a restart could not
                // salvage onto this card, and would lose what is held only in memory.
                node.logger.critical("the log is damaged; running from memory, the node stays up",
                                     metadata: ["check": "\(said)", "held_in_memory": "\(memory.taken)"])
            } else {
                node.fail(.logDamaged(said))
                return
            }
        case nil:
            last = "the check failed (status \(status))"
            node.logger.warning("the log check failed", metadata: ["status": "\(status)", "stderr": "\(said)"])
        }
        scheduleNext()
    }

    private func scheduleNext() {
        let interval = node.configuration.logCheckIntervalMicroseconds
        if interval > 0 {
            node.scheduler.schedule(Self.checkTimer, afterNanoseconds: interval &* 1_000)
        } else {
            node.scheduler.cancel(Self.checkTimer)
        }
    }

    func stop() {
        guard let running else { return }
        running.child.kill()
        node.loop.unwatch(running.child.exitDescriptor, "the log check")
        node.scheduler.cancel(Self.checkTimer)
        self.running = nil
    }
}
