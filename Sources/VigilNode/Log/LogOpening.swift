import Logging
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem

/// A start that must check its log before opening it (decision 0002): the last start ended
/// unclean (a power cut, a SIGKILL, a watchdog kill) or a check found damage. Reading the whole
/// file takes seconds to minutes, and the button must not wait for it.
///
/// So the loop runs at once on a *scratch log*, a real `EventLog` in `DATA/opening-log` that is
/// not synced, while a worker thread does what the start used to do before the loop: finish an
/// interrupted salvage, check the log (in a process of its own), salvage it if damaged, open it
/// and restore the projections (`LogRecovery.open`, `Node.restoredProjections`). Only the
/// components a call for help needs run meanwhile (`NodeComponent.runsBeforeLogOpen`): the
/// button, outputs, messages, the alarm centre, the call tree's clock, the control socket, the
/// page and systemd's watchdog. Once the worker is done, the loop takes the log over in one turn
/// (`Node.completeOpening`): the restored projections replace the scratch ones, the events taken
/// meanwhile are appended to the real log in order (fresh sequences, their own times), and the
/// other components start.
///
/// What crosses the turn unchanged: alert ids (counters before the open come from
/// `AlertCounterFloor`), outbox entry ids (derived from alert and resident ids, so an attempt made
/// before the open settles the same entry after it, and nothing is sent twice), and webhook
/// tokens (bound to the call's time). What changes: events' sequences, and so DC-09 sequence
/// numbers of reports not yet acknowledged.
///
/// Misuse: holding an event's scratch sequence across the turn (nothing does: the turn waits until
/// nothing is pending).
final class LogOpening {
    /// The log the loop appends to until the real one is open.
    let scratch: EventLog
    let scratchDirectory: String
    /// When the start began (monotonic, ns), for the status line and the log's notice.
    let startedNanoseconds: UInt64
    /// Events applied before the open, in order, to be appended to the real log.
    private(set) var held: [Event] = []
    /// Housekeeping events past `maximumHeld`: applied, but not carried into the real log.
    private(set) var notCarried: UInt64 = 0
    /// Enough for hours of presses, messages and reports; scan hits never come (the radio
    /// starts after the open).
    static let maximumHeld = 20_000
    /// What the worker found, once it is done; and whether the node stopped before taking it
    /// (then whoever comes second, the worker or the stop, closes the worker's log).
    private let handOff = LockedValue<(outcome: Result<OpenedLog, NodeError>?, abandoned: Bool)>((nil, false))
    private var worker: OSThread?

    /// Whether the worker is done (its outcome waits for the loop).
    var isDone: Bool { handOff.withLock { $0.outcome != nil } }

    /// The worker's outcome, taken by the loop: the log is the node's from now on.
    func takeOutcome() -> Result<OpenedLog, NodeError>? {
        handOff.withLock { state in
            let outcome = state.outcome
            state.outcome = nil
            return outcome
        }
    }

    /// The log as the worker left it for the loop.
    struct OpenedLog: Sendable {
        let log: EventLog
        let projections: Projections
        let salvaged: SalvageReport?
        let seconds: Double
    }

    /// Whether this start must check (or salvage) its log before opening it. A card the kernel
    /// made read-only is opened at once (for reading; the node runs from memory).
    static func isDue(directory: String) -> Bool {
        let dir = FileSystem.canonicalPath(directory)
        guard FileSystem.exists(dir + "/data.mdb"), !FileSystem.isOnReadOnlyFileSystem(dir) else { return false }
        // A salvage a power cut interrupted ran in a start that never ended clean: counted here.
        return FileSystem.exists(dir + "/" + LogRecovery.damagedMarker) || LogRecovery.uncleanStarts(directory: dir) >= 1
    }

    /// Makes the scratch log (anything left by an earlier start is removed first).
    init(configuration: NodeConfiguration, startedNanoseconds: UInt64,
         onDurable: @escaping @Sendable (CommitReport) -> Void) throws(LogError) {
        scratchDirectory = FileSystem.canonicalPath(configuration.dataDirectory) + "/opening-log"
        Self.removeScratch(scratchDirectory)
        var settings = LogConfiguration(directory: scratchDirectory)
        // Not synced: what it holds is carried into the real log within seconds, and a crash
        // before that loses it as a crash would lose events not yet committed. No disk reserve
        // of its own (the real log's is beside it) and a small map.
        settings.sync = .none
        settings.diskReserveBytes = 0
        settings.initialMapSize = 1 << 20
        settings.maxMapSize = 256 << 20
        settings.commitWindowMicroseconds = configuration.log.commitWindowMicroseconds
        scratch = try EventLog.open(settings, onDurable: onDurable)
        self.startedNanoseconds = startedNanoseconds
    }

    /// Starts the worker; `wake` tells the loop it is done.
    func begin(configuration: NodeConfiguration, logger: Logger, onDurable: @escaping @Sendable (CommitReport) -> Void,
               monotonic: any MonotonicClock, wake: @escaping @Sendable () -> Void) throws(SystemError) {
        let handOff = self.handOff
        worker = try OSThread(name: "vigil-log-open") {
            let began = monotonic.nowNanoseconds()
            let outcome: Result<OpenedLog, NodeError>
            do throws(NodeError) {
                let (log, salvaged) = try LogRecovery.open(configuration, logger: logger, onDurable: onDurable)
                do throws(LogError) {
                    let projections = try Node.restoredProjections(from: log, configuration: configuration, logger: logger)
                    outcome = .success(OpenedLog(log: log, projections: projections, salvaged: salvaged,
                                                 seconds: Double(monotonic.nowNanoseconds() &- began) / 1e9))
                } catch {
                    log.close()
                    outcome = .failure(.log(error))
                }
            } catch {
                outcome = .failure(error)
            }
            let kept = handOff.withLock { state in
                if state.abandoned { return false }
                state.outcome = outcome
                return true
            }
            if !kept, case .success(let opened) = outcome { opened.log.close() }
            wake()
        }
    }

    /// An event applied before the open: kept to be appended to the real log. Past
    /// `maximumHeld` only what matters to people is kept (`RunningFromMemory.mattersToPeople`:
    /// presses, alerts, takes, messages' outcomes), which people make at their own pace.
    func hold(_ event: Event) {
        guard held.count < Self.maximumHeld || RunningFromMemory.mattersToPeople(event.body.kind) else {
            notCarried &+= 1
            return
        }
        held.append(event)
    }

    /// Closes and removes the scratch log. The worker's log, if the node stops before taking it
    /// over, is closed too, now or when the worker is done (the next start opens it again).
    func close() {
        scratch.close()
        Self.removeScratch(scratchDirectory)
        let left = handOff.withLock { state in
            state.abandoned = true
            let outcome = state.outcome
            state.outcome = nil
            return outcome
        }
        if case .success(let opened)? = left { opened.log.close() }
    }

    /// The worker is done (it exits right after handing off): its thread is joined.
    func joinWorker() {
        worker?.join()
        worker = nil
    }

    private static func removeScratch(_ directory: String) {
        for name in ["data.mdb", "lock.mdb", "disk-reserve"] { FileSystem.remove(directory + "/" + name) }
        FileSystem.removeEmptyDirectory(directory)
    }
}
