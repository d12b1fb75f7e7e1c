import Foundation

/// The feed's newest items, shared by this process's long polls. When a notification says the
/// feed grew, one query reads what is new and every waiting poll answers from here; without it,
/// 200 boxes polling meant 200 queries for each new item, queued on the connection pool, and the
/// last box heard of an SOS long after the first.
///
/// Correctness stays with PostgreSQL: positions commit in order (`HubDatabase.appendToFeed`), so
/// reading "after the highest position read" never skips a row. A poll whose cursor is older than
/// the window asks the database itself. Without a notification for `maxAgeSeconds` (the listener
/// reconnecting, say) the next poll reads again anyway, as polls did before.
actor FeedCache {
    /// Items at most in the window.
    static let capacity = 2_000
    /// Payload bytes at most in the window: an uploaded alert is at most 4 KiB, but a relayed
    /// public warning up to 32 KiB, and 2,000 of those would be 64 MiB in every hub process.
    static let capacityBytes = 8 << 20
    static let maxAgeSeconds = 5.0

    private var window: [HubDatabase.FeedItem] = []
    /// The window holds every item in (floor, through].
    private var floor: UInt64 = 0
    private var through: UInt64 = 0
    private var loaded = false
    private var readGeneration: UInt64 = 0
    private var readAt = ContinuousClock.now
    private var reading: Task<Void, any Error>?

    /// Items after `after` that did not come from `node` (every item when nil), oldest first, as of notification
    /// `generation` (`FeedSignal.generation`, read before this call), with the newest position
    /// and the item at `after`. nil when the window cannot say: a cursor older than the window,
    /// or one past it (this process may lag the one the box used before; only the database says
    /// a position is gone).
    func items(after: UInt64, for node: UInt64?, generation: UInt64, limit: Int,
               database: HubDatabase) async throws -> HubDatabase.FeedPage? {
        if !loaded || generation > readGeneration || ContinuousClock.now - readAt > .seconds(Self.maxAgeSeconds) {
            try await refresh(generation: generation, database: database)
        }
        // The window holds (floor, through]; a cursor at the floor itself (or 0 with an older
        // floor) is answered by the database, below or here.
        guard after >= floor, after <= through else { return nil }
        var out: [HubDatabase.FeedItem] = []
        // The window is in position order: start at the first item after the cursor.
        var low = 0, high = window.count
        while low < high {
            let mid = (low + high) / 2
            if window[mid].position <= after { low = mid + 1 } else { high = mid }
        }
        let atCursor = low > 0 && window[low - 1].position == after ? window[low - 1] : nil
        // A cursor with no item in the window (the floor itself, or a position gone): the
        // database decides.
        if after > 0 && atCursor == nil { return nil }
        for item in window[low...] where node == nil || item.originNode != node {
            out.append(item)
            if out.count == limit { break }
        }
        return HubDatabase.FeedPage(items: out, head: through, atCursor: atCursor)
    }

    /// `window` with its oldest items dropped until it holds at most `capacity` items and
    /// `capacityBytes` of payloads (never its newest item), and the floor that then holds.
    static func trimmed(_ window: [HubDatabase.FeedItem], floor: UInt64) -> ([HubDatabase.FeedItem], UInt64) {
        var drop = max(0, window.count - capacity)
        var bytes = window[drop...].reduce(0) { $0 + $1.payload.count }
        while bytes > capacityBytes, drop < window.count - 1 {
            bytes -= window[drop].payload.count
            drop += 1
        }
        guard drop > 0 else { return (window, floor) }
        let kept = Array(window[drop...])
        return (kept, (kept.first?.position ?? 1) - 1)
    }

    /// One read for every poll waiting on it.
    private func refresh(generation: UInt64, database: HubDatabase) async throws {
        // Wait for the reads under way (another poll may start a newer one meanwhile: the actor
        // is re-entered at each await); read again only if none covered this generation.
        while let current = reading {
            try await current.value
            if loaded && readGeneration >= generation && ContinuousClock.now - readAt <= .seconds(Self.maxAgeSeconds) { return }
            if reading == current { break } // finished; whoever started it has not cleared it yet
        }
        let task = Task { try await read(generation: generation, database: database) }
        reading = task
        defer { if reading == task { reading = nil } }
        try await task.value
    }

    private func read(generation: UInt64, database: HubDatabase) async throws {
        let started = ContinuousClock.now
        if !loaded {
            let tail = try await database.feedTail(limit: Self.capacity)
            guard !loaded else { return }
            through = tail.last?.position ?? 0
            (window, floor) = Self.trimmed(tail, floor: tail.count < Self.capacity ? 0 : (tail.first?.position ?? 1) - 1)
            loaded = true
        } else {
            while true {
                let read = try await database.feedWindow(after: through, limit: Self.capacity)
                // Another read may have appended meanwhile (the actor is re-entered at the await).
                let new = read.filter { $0.position > through }
                window.append(contentsOf: new)
                through = new.last?.position ?? through
                if read.count < Self.capacity { break }
            }
            (window, floor) = Self.trimmed(window, floor: floor)
        }
        readGeneration = max(readGeneration, generation)
        readAt = started
    }
}
