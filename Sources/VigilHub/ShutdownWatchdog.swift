import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The hub's services by name while they run, so a shutdown that does not finish can say which
/// one holds it.
final class RunningServices: Sendable {
    private let names = Mutex<[String]>([])

    func started(_ name: String) { names.withLock { $0.append(name) } }
    func finished(_ name: String) { names.withLock { if let i = $0.firstIndex(of: name) { $0.remove(at: i) } } }
    var stillRunning: [String] { names.withLock { $0 } }
}

/// A service recorded in `RunningServices` while its `run` has not returned.
struct NamedService<Base: Service>: Service {
    let name: String
    let base: Base
    let running: RunningServices

    func run() async throws {
        running.started(name)
        defer { running.finished(name) }
        try await base.run()
    }
}

/// Ends the process when a shutdown the hub was asked for (SIGTERM, SIGINT) has not finished
/// in `limit`.
///
/// The group escalates a slow graceful shutdown to cancellation after 10 s; a wait that ignores
/// cancellation too would hold the process until the service manager kills it (CI once saw the
/// hub ignore SIGTERM for two minutes). Exiting is safe: the hub keeps nothing outside PostgreSQL,
/// and every upload is one transaction. It logs what was still running, stops the cluster if
/// this process started it, and exits with 70 (EX_SOFTWARE), so the hang is seen and explained,
/// not hidden. Everything here runs on Dispatch's queues, armed by the signal itself (a signal
/// source beside ServiceLifecycle's), never by a task of Swift's cooperative pool, which is what
/// a stuck shutdown may be holding.
final class ShutdownWatchdog: @unchecked Sendable {
    private let limit: Duration
    private let running: RunningServices
    private let inFlight: InFlightRequests
    private let logger: Logger
    private let beforeExit: @Sendable () -> Void
    private let done = Mutex(false)
    private let queue = DispatchQueue(label: "vigil-hub.shutdown-watchdog")
    /// Touched on `queue` only.
    private var sources: [any DispatchSourceSignal] = []
    private var armed = false

    init(limit: Duration, running: RunningServices, inFlight: InFlightRequests, logger: Logger, beforeExit: @escaping @Sendable () -> Void) {
        self.limit = limit
        self.running = running
        self.inFlight = inFlight
        self.logger = logger
        self.beforeExit = beforeExit
    }

    /// Listens for SIGTERM and SIGINT from now on.
    func start() {
        queue.sync {
            for signal in [SIGTERM, SIGINT] {
                let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
                source.setEventHandler { [weak self] in self?.signalled() }
                source.resume()
                sources.append(source)
            }
        }
    }

    /// The shutdown finished: nothing more to watch.
    func finished() {
        done.withLock { $0 = true }
        queue.sync {
            for source in sources { source.cancel() }
            sources = []
        }
    }

    private func signalled() {
        guard !armed else { return }
        armed = true
        queue.asyncAfter(deadline: .now() + .seconds(Int(limit.components.seconds))) { [self] in
            guard !done.withLock({ $0 }) else { return }
            logger.critical("hub: shutdown did not finish; exiting", metadata: [
                "after_seconds": "\(limit.components.seconds)", "still_running": "\(running.stillRunning.joined(separator: ", "))",
                // Which requests hold the HTTPS server's shutdown (a handler that ignores cancellation).
                "requests": "\(inFlight.describe())",
            ])
            beforeExit()
            _exit(70)
        }
    }
}
