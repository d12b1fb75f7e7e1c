import Foundation

/// At most `width` pieces of blocking work at once, each on its own thread (never on the event
/// loops or Swift's cooperative pool); the others wait their turn.
public actor Gate {
    let width: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    public init(width: Int) { self.width = width }

    public nonisolated func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await enter()
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            Thread.detachNewThread { continuation.resume(returning: work()) }
        }
        await leave()
        return result
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
