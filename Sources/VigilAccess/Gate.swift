import Foundation

/// At most `width` pieces of blocking work at once, each on its own thread (never on the event
/// loops or Swift's cooperative pool); the others wait their turn.
public actor Gate {
    let width: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    public init(width: Int) { self.width = width }

    /// Pieces running and waiting now (for tests and status).
    var load: (running: Int, waiting: Int) { (running, waiting.count) }

    public nonisolated func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await enter()
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            Thread.detachNewThread { continuation.resume(returning: work()) }
        }
        await leave()
        return result
    }

    /// `run`, unless `maxWaiting` pieces already wait their turn: then nil at once (a caller
    /// answers "busy" rather than queueing without bound).
    public nonisolated func run<T: Sendable>(maxWaiting: Int, _ work: @escaping @Sendable () -> T) async -> T? {
        guard await admit(maxWaiting: maxWaiting) else { return nil }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            Thread.detachNewThread { continuation.resume(returning: work()) }
        }
        await leave()
        return result
    }

    private func admit(maxWaiting: Int) async -> Bool {
        if running < width {
            running += 1
            return true
        }
        guard waiting.count < maxWaiting else { return false }
        await withCheckedContinuation { waiting.append($0) }
        return true
    }

    private func enter() async {
        if running < width {
            running += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func leave() {
        if waiting.isEmpty { running -= 1 } else { waiting.removeFirst().resume() }
    }
}
