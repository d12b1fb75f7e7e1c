import Logging
import PostgresNIO
import ServiceLifecycle

/// Wakes the long polls of this hub process when any hub process commits a feed item: one
/// connection LISTENs on the feed's channel (NOTIFY is sent in the inserting transaction, so it
/// arrives after the commit, in every process). A lost connection is made again; polls that
/// waited meanwhile end at their timeout and ask again, so nothing is missed.
actor FeedSignal {
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    private var nextID: UInt64 = 0
    /// The hub is shutting down: long polls answer now instead of holding the shutdown up.
    private var closing = false

    var isClosing: Bool { closing }
    /// Notifications so far. A poll reads it before it queries the feed and waits only if it is
    /// unchanged, so a commit that lands between the query and the wait is not missed.
    private(set) var generation: UInt64 = 0

    func shutDown() {
        closing = true
        notifyAll()
    }

    /// Resumes every waiter.
    func notifyAll() {
        generation &+= 1
        let all = waiters
        waiters.removeAll()
        for (id, w) in all {
            released.insert(id) // its own timeout's release, still to come, must not park again
            w.resume()
        }
    }

    /// Waits until a notification after `seen` (a `generation` read earlier) or `seconds`,
    /// whichever comes first.
    func wait(after seen: UInt64, seconds: Double) async {
        guard !closing, generation == seen else { return }
        nextID += 1
        let id = nextID
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.park(id, seen: seen) }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                await self.release(id)
            }
            await group.next()
            group.cancelAll()
            await self.release(id)
        }
        finish(id)
    }

    /// Ids released before they parked (the timeout won the race to the actor).
    private var released: Set<UInt64> = []

    /// Parks unless woken meanwhile: the park runs on the actor after `wait` has left it, and a
    /// notification in between found no waiter to resume (10,000 boxes polling hit this: their
    /// SOS came at the poll's timeout, 25 s late), so it checks the generation again here.
    private func park(_ id: UInt64, seen: UInt64) async {
        if released.remove(id) != nil || generation != seen || closing { return }
        await withCheckedContinuation { waiters[id] = $0 }
    }

    private func release(_ id: UInt64) {
        if let waiter = waiters.removeValue(forKey: id) { waiter.resume() } else { released.insert(id) }
    }

    /// Forgets a finished wait's id.
    private func finish(_ id: UInt64) { released.remove(id) }
}

/// The LISTEN side, as a service beside the server.
struct FeedListener: Service {
    let client: PostgresClient
    let signal: FeedSignal
    let logger: Logger

    func run() async throws {
        // At shutdown: long polls answer at once, and the LISTEN ends (it would wait for ever).
        try await withGracefulShutdownHandler {
            try await cancelWhenGracefulShutdown { try await listen() }
        } onGracefulShutdown: {
            Task { await signal.shutDown() }
        }
    }

    private func listen() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: HubDatabase.feedChannel) { notifications in
                        // Wake everyone once the listener is up: a poll that started before it
                        // may have missed a notification.
                        await signal.notifyAll()
                        for try await _ in notifications { await signal.notifyAll() }
                    }
                }
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                logger.warning("hub: the feed listener lost its connection; listening again", metadata: ["error": "\(String(reflecting: error))"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }
}

/// Long polls held open per box in this process: a box needs one (two while a poll it gave up on
/// is still being answered), and a misbehaving one must not hold the server's tasks and database
/// connections. Polls over the limit are refused at once (429).
actor PollLimit {
    static let perBox = 2
    private var open: [UInt64: Int] = [:]

    func enter(_ node: UInt64) -> Bool {
        let count = open[node, default: 0]
        guard count < Self.perBox else { return false }
        open[node] = count + 1
        return true
    }

    func leave(_ node: UInt64) {
        let count = open[node, default: 1] - 1
        open[node] = count > 0 ? count : nil
    }
}

/// Key-file parts served at once by this hub process: each is read whole from PostgreSQL (up to
/// 64 MiB), and every box fetches a new file as soon as the feed offers it. Past the limit a box
/// is told to come back (503 `busy`, Retry-After), so memory stays bounded by the limit, not by
/// the number of boxes. A slot is held until its bytes are written; one whose writer never ran
/// (the box went away first) is taken back after `lease`, so a lost slot cannot shut the door.
actor KeyFileSlots {
    static let limit = 4
    /// Longer than a box waits for a part (10 minutes), so a slow transfer keeps its slot.
    static let lease: Duration = .seconds(660)
    private var held: [UInt64: ContinuousClock.Instant] = [:]
    private var next: UInt64 = 0

    /// A slot's token, or nil when all are taken.
    func enter() -> UInt64? {
        let now = ContinuousClock.now
        held = held.filter { now - $0.value < Self.lease }
        guard held.count < Self.limit else { return nil }
        next &+= 1
        held[next] = now
        return next
    }

    func leave(_ token: UInt64) { held[token] = nil }
}
