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

/// Ends the process when a shutdown the hub was asked for (SIGTERM) has not finished in `limit`.
///
/// The group escalates a slow graceful shutdown to cancellation after 10 s; a wait that ignores
/// cancellation too would hold the process until the service manager kills it (CI once saw the
/// hub ignore SIGTERM for two minutes). Exiting is safe: the hub keeps nothing outside PostgreSQL,
/// and every upload is one transaction. It logs what was still running and exits with 70
/// (EX_SOFTWARE), so the hang is seen and explained, not hidden. The deadline runs on a Dispatch
/// queue, outside Swift's cooperative pool, which is what a stuck task may be holding.
struct ShutdownWatchdog: Service {
    let limit: Duration
    let running: RunningServices
    let done: ShutdownDone
    let logger: Logger

    func run() async throws {
        // Returns when the group begins its graceful shutdown (or is cancelled).
        try? await gracefulShutdown()
        let running = self.running, done = self.done, logger = self.logger, limit = self.limit
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(limit.components.seconds * 1000))) {
            guard !done.isDone else { return }
            logger.critical("hub: shutdown did not finish; exiting", metadata: [
                "after_seconds": "\(limit.components.seconds)", "still_running": "\(running.stillRunning.joined(separator: ", "))",
            ])
            _exit(70)
        }
    }
}

/// Set once the hub's service group has returned.
final class ShutdownDone: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isDone: Bool { value.withLock { $0 } }
}
