import Foundation
import Logging
import Hummingbird
import NIOCore
import ServiceLifecycle
import VigilEvents
import VigilHubProtocol

/// The feed as streams (`GET /api/v1/boxes/{node}/feed?stream=1`): a box holds one request open
/// and gets a line, a `FeedAnswer` as newline-delimited JSON, for each change, instead of a long
/// poll answered and asked again.
///
/// One reader serves every stream of this process: after each notification it reads what is new
/// once (through `FeedCache`), encodes one line per cursor, and hands that same buffer to every
/// stream at that cursor; only a box whose own items are among them gets a line of its own
/// (a box is never sent what it sent). With long polls, every box cost the hub a whole answer and
/// a new request (TLS, HTTP, routing, a credential check) per item: 10,000 boxes heard an SOS
/// after 5.1 s (p99) on two cores. A stream costs a write.
///
/// The contract, for the box: the first line comes at once and carries `head` and `at_cursor`
/// (the cursor check a long poll makes); later lines carry items (and a `cursor` that may pass the
/// box's own items), or nothing every `heartbeat` (so a quiet stream is not taken for a dead
/// one). When the hub holds another item at the box's cursor than it took, the first line says so
/// and the stream ends. Every `credentialCheck` one query checks the credentials of every open
/// stream (and notes their boxes' contact): a revoked box's stream ends then. A stream also ends
/// after about `lifetime` (so boxes spread again over the hub's processes), at shutdown, and when
/// the box reads too slowly to keep `buffered` lines: it opens a new one from its cursor, and
/// nothing is lost.
actor FeedStreams {
    struct Settings: Sendable {
        var heartbeat: Duration = .seconds(20)
        /// Each stream lasts from half to one and a half times this, at random, so boxes that
        /// all came at once (a hub restarted) do not all open their next one at once.
        var lifetime: Duration = .seconds(600)
        /// How often the credentials of every open stream are checked, in one query.
        var credentialCheck: Duration = .seconds(30)
        /// Lines held for a stream whose box does not read them, at most.
        var buffered = 16
        var pageLimit = 200
    }

    /// One open stream: its lines, and its place, given back by `close`.
    struct Subscription: Sendable {
        let id: UInt64
        let lines: AsyncStream<ByteBuffer>
    }

    private struct Subscriber {
        let node: UInt64
        /// The SHA-256 of its credential, hex, as the hub stores it.
        let credentialHash: String
        /// The last position this stream has looked at (its own items included).
        var cursor: UInt64
        /// The fingerprint of the item the box took at its cursor, checked on the first line.
        let at: String?
        var owesFirstLine = true
        /// The notification its cursor is current with.
        var generation: UInt64 = 0
        var lastSent: ContinuousClock.Instant
        let ends: ContinuousClock.Instant
        let continuation: AsyncStream<ByteBuffer>.Continuation
        /// Gives back what the stream holds outside (its box's poll place), once, when the hub
        /// ends it: not when its HTTP body ends, which a box that stops reading can put off for
        /// ever.
        let onClose: @Sendable () -> Void
        /// Lines its buffer had room for after the last one handed to it.
        var room: Int
    }

    let settings: Settings
    private let signal: FeedSignal
    private let cache: FeedCache
    private let database: HubDatabase
    private let logger: Logger
    private var subscribers: [UInt64: Subscriber] = [:]
    /// Streams that owe a read before the next notification: a first line, or the rest of a
    /// page. A round without a new notification or a tick visits only these, so 10,000 boxes
    /// opening their next stream (150 a second) do not each cost a pass over every stream.
    private var owing: Set<UInt64> = []
    /// The notification and the time of the last round that visited every stream.
    private var lastFullRound: (generation: UInt64, at: ContinuousClock.Instant)?
    /// When the next credential check is due, and whether one is under way.
    private var credentialCheckDue = ContinuousClock.now
    private var checkingCredentials = false
    private var nextID: UInt64 = 0
    private var closed = false
    private let kicks: AsyncStream<Void>
    private let kicker: AsyncStream<Void>.Continuation
    /// Streams ended because their box read too slowly (a figure for the log and tests).
    private(set) var slowEnded = 0
    /// Streams ended because their box's credential no longer holds.
    private(set) var revokedEnded = 0

    init(signal: FeedSignal, cache: FeedCache, database: HubDatabase, settings: Settings = .init(), logger: Logger) {
        self.signal = signal
        self.cache = cache
        self.database = database
        self.settings = settings
        self.logger = logger
        (kicks, kicker) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    var count: Int { subscribers.count }

    /// A new stream for `node` from `after`; its first line follows at once. nil once the hub is
    /// shutting down.
    func open(node: UInt64, credentialHash: String, after: UInt64, at: String?,
              onClose: @escaping @Sendable () -> Void = {}) -> Subscription? {
        guard !closed else { return nil }
        nextID += 1
        let id = nextID
        let (lines, continuation) = AsyncStream.makeStream(of: ByteBuffer.self, bufferingPolicy: .bufferingOldest(settings.buffered))
        let now = ContinuousClock.now
        subscribers[id] = Subscriber(node: node, credentialHash: credentialHash, cursor: after, at: at, lastSent: now,
                                     ends: now + settings.lifetime * Double.random(in: 0.5...1.5), continuation: continuation,
                                     onClose: onClose, room: settings.buffered)
        owing.insert(id)
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            Task { await self.close(id) }
        }
        kicker.yield()
        return Subscription(id: id, lines: lines)
    }

    func close(_ id: UInt64) {
        owing.remove(id)
        guard let s = subscribers.removeValue(forKey: id) else { return }
        s.continuation.finish()
        s.onClose()
    }

    /// The reader: a round after each notification, and at least every quarter heartbeat (for
    /// heartbeats and ends). Returns when the hub shuts down, every stream ended.
    func run() async {
        // Ticks for heartbeats (a quarter of one) and for credential checks, whichever is
        // sooner; a round's own tests decide what each tick does.
        let signal = self.signal, kicker = self.kicker, tick = min(settings.heartbeat, settings.credentialCheck) / 4
        let relay = Task {
            var seen = await signal.generation
            while await !signal.isClosing {
                await signal.wait(after: seen, seconds: Double(tick.components.seconds) + Double(tick.components.attoseconds) / 1e18)
                seen = await signal.generation
                kicker.yield()
            }
            kicker.yield()
        }
        credentialCheckDue = ContinuousClock.now + settings.credentialCheck
        defer { relay.cancel() }
        for await _ in kicks {
            if await signal.isClosing { break }
            await round()
        }
        closed = true
        for id in Array(subscribers.keys) { close(id) }
    }

    /// A failed credential check, or read of the feed, is tried again after this long.
    static let retryAfterFailure: Duration = .seconds(5)

    /// Serves every stream that owes a line: new items, a first line, a heartbeat, or its end.
    private func round() async {
        let generation = await signal.generation
        let started = ContinuousClock.now
        // The credential check in a task of its own when due: its query (up to 10,000 rows)
        // never holds up a round, so an SOS never waits for it.
        if !checkingCredentials && started >= credentialCheckDue {
            checkingCredentials = true
            Task {
                let checked = await self.checkCredentials()
                await self.credentialsChecked(checked)
            }
        }
        // A round every quarter heartbeat reads again even without a notification (through the
        // window, whose reads are at most `FeedCache.maxAgeSeconds` old): a LISTEN connection
        // that died without a word must not hold an SOS back until the stream ends.
        // (A fifth, below the relay's quarter: each of its ticks makes one, though a round starts
        // a little after its tick. At a quarter, every other tick was skipped, and a quiet
        // stream's heartbeat came up to 30 s late: the box's read timeout.)
        let timely = lastFullRound.map { started - $0.at >= settings.heartbeat / 5 } ?? true
        let full = timely || lastFullRound?.generation != generation
        if full { lastFullRound = (generation, started) }
        var pages: [UInt64: HubDatabase.FeedPage] = [:]
        var sharedLines: [UInt64: ByteBuffer] = [:]
        var quietLines: [UInt64: ByteBuffer] = [:]
        var again = false
        var failed: (any Error)?
        for id in (full ? Array(subscribers.keys) : Array(owing)).sorted() {
            guard let s = subscribers[id] else { continue }
            let now = ContinuousClock.now
            if now >= s.ends {
                close(id)
                continue
            }
            if !s.owesFirstLine && s.generation >= generation && !timely {
                if now - s.lastSent >= settings.heartbeat {
                    let line = quietLines[s.cursor] ?? Self.line(FeedAnswer(items: [], cursor: s.cursor))
                    quietLines[s.cursor] = line
                    send(line, to: id, now: now)
                }
                continue
            }
            // The window read for this cursor (every origin), once per round; the database when
            // the window cannot judge the cursor (a box catching up from long ago).
            var page = pages[s.cursor]
            var filtered = false
            do {
                if page == nil, let read = try await cache.items(after: s.cursor, for: nil, generation: generation,
                                                                 limit: settings.pageLimit, database: database) {
                    pages[s.cursor] = read
                    page = read
                }
                if page == nil {
                    page = try await database.feedPage(after: s.cursor, for: s.node, limit: settings.pageLimit)
                    filtered = true
                }
            } catch {
                failed = error
                continue
            }
            // The stream may have ended while the read waited.
            guard var current = subscribers[id], let page else { continue }
            let mine = filtered ? [] : page.items.filter { $0.originNode == current.node }
            let items = mine.isEmpty ? page.items : page.items.filter { $0.originNode != current.node }
            let looked = filtered ? (items.last?.position ?? current.cursor) : (page.items.last?.position ?? current.cursor)
            // Filtered by the database or not, the page's own items are what filled or cut it.
            let more = page.more(limit: settings.pageLimit)
            if current.owesFirstLine {
                let atCursor = page.atCursor.map { FeedAnswer.digestText(FeedItemDigest.of(kind: $0.kind, timeMicroseconds: $0.timeUs, payload: $0.payload)) }
                let lost = current.at != nil && current.cursor > 0 && atCursor != current.at
                send(Self.line(FeedAnswer(items: lost ? [] : Self.entries(items), cursor: lost ? current.cursor : looked,
                                          head: page.head, atCursor: atCursor)), to: id, now: now)
                if lost {
                    close(id)
                    continue
                }
            } else if !items.isEmpty {
                let line: ByteBuffer
                if mine.isEmpty && !filtered {
                    line = sharedLines[current.cursor] ?? Self.line(FeedAnswer(items: Self.entries(items), cursor: looked))
                    sharedLines[current.cursor] = line
                } else {
                    line = Self.line(FeedAnswer(items: Self.entries(items), cursor: looked))
                }
                send(line, to: id, now: now)
            } else if now - current.lastSent >= settings.heartbeat {
                let line = quietLines[looked] ?? Self.line(FeedAnswer(items: [], cursor: looked))
                quietLines[looked] = line
                send(line, to: id, now: now)
            }
            guard let after = subscribers[id] else { continue }
            current.owesFirstLine = false
            current.cursor = looked
            if current.generation < generation && !more { current.generation = generation }
            if more { owing.insert(id) } else { owing.remove(id) }
            current.lastSent = after.lastSent
            current.room = after.room
            subscribers[id] = current
            // The next page at once only while the box keeps up: a box catching up reads it as
            // fast as it can, and one that does not gets the rest at the next timely round, not
            // a buffer of pages the hub holds for it.
            if more && current.room > settings.buffered / 2 { again = true }
        }
        if let failed {
            logger.warning("hub: feed streams could not read the feed; trying again at the next change or tick",
                           metadata: ["error": "\(String(reflecting: failed))"])
        }
        if again { kicker.yield() }
    }

    private func credentialsChecked(_ succeeded: Bool) {
        checkingCredentials = false
        credentialCheckDue = ContinuousClock.now + (succeeded ? settings.credentialCheck : Self.retryAfterFailure)
    }

    /// Ends the streams of boxes revoked (or enrolled again with another secret) since they
    /// opened. A failed check is tried again at the next round: the streams stay meanwhile, as
    /// a box that reads the feed harms nothing while the database cannot say.
    private func checkCredentials() async -> Bool {
        let checked = subscribers.map { (id: $0.key, node: $0.value.node, hash: $0.value.credentialHash) }
        let valid: Set<String>
        do {
            valid = try await database.credentialsStillHeld(checked.map { (node: $0.node, hash: $0.hash) })
        } catch {
            logger.warning("hub: feed streams could not check their boxes' credentials; trying again",
                           metadata: ["error": "\(String(reflecting: error))"])
            return false
        }
        for s in checked where !valid.contains(s.hash) && subscribers[s.id] != nil {
            revokedEnded += 1
            logger.notice("hub: a feed stream ended: its box's credential no longer holds", metadata: ["node": "\(NodeIDText.format(s.node))"])
            close(s.id)
        }
        return true
    }

    /// Hands a line to a stream; one whose box has not read the lines held already is ended
    /// (it reads again from its cursor).
    private func send(_ line: ByteBuffer, to id: UInt64, now: ContinuousClock.Instant) {
        guard var s = subscribers[id] else { return }
        switch s.continuation.yield(line) {
        case .enqueued(let remaining):
            s.lastSent = now
            s.room = remaining
            subscribers[id] = s
        case .dropped:
            slowEnded += 1
            logger.notice("hub: a feed stream ended: its box reads too slowly", metadata: ["node": "\(NodeIDText.format(s.node))"])
            close(id)
        case .terminated:
            close(id)
        @unknown default:
            close(id)
        }
    }

    static func entries(_ items: [HubDatabase.FeedItem]) -> [FeedEntry] {
        items.map {
            FeedEntry(position: $0.position, origin: $0.originNode == 0 ? "" : NodeIDText.format($0.originNode),
                      kind: $0.kind, timeUs: $0.timeUs, payload: Data($0.payload).base64EncodedString())
        }
    }

    static func line(_ answer: FeedAnswer) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var data = (try? encoder.encode(answer)) ?? Data(#"{"cursor":0,"items":[]}"#.utf8)
        data.append(0x0A)
        return ByteBuffer(bytes: data)
    }
}

/// The streams' reader, as a service beside the server.
struct FeedStreamsService: Service {
    let streams: FeedStreams
    let signal: FeedSignal

    func run() async throws {
        await withGracefulShutdownHandler {
            await streams.run()
        } onGracefulShutdown: {
            Task { await signal.shutDown() }
        }
    }
}

/// A stream's places (in `FeedStreams` and `PollLimit`), given back once: by `release`, or when
/// the lease is dropped unreleased.
final class StreamLease: Sendable {
    private let giveBack: @Sendable () -> Void
    private let released = OnceFlag()

    init(_ giveBack: @escaping @Sendable () -> Void) { self.giveBack = giveBack }

    func release() {
        guard released.set() else { return }
        giveBack()
    }

    deinit { release() }
}
