import Foundation
import NIOCore
import VigilNode
import VigilSystem

/// The page's live stream: one reader of the node's snapshots however many browsers watch. Each
/// snapshot is rendered once per audience (viewers, staff) into one Server-Sent Events message,
/// and every browser's stream gets those bytes; a browser that falls behind skips to the newest
/// (its stream keeps one message), so a slow phone holds up nobody.
final class LiveFeed: Sendable {
    struct Message: Sendable {
        var sequence: UInt64
        var snapshot: NodeSnapshot
        /// The whole SSE message (`id:`, `event: state`, `data:`), for viewers and for staff.
        var viewing: ByteBuffer
        var acting: ByteBuffer

        func bytes(acting: Bool) -> ByteBuffer { acting ? self.acting : viewing }
    }

    private struct State {
        var latest: Message?
        /// When the last snapshot came (monotonic seconds): a loop that stops publishing is stuck.
        var receivedSeconds: UInt64?
        var browsers: [UInt64: AsyncStream<Message>.Continuation] = [:]
        var next: UInt64 = 0
        var finished = false
    }
    private let state = LockedValue(State())
    /// At most this many browsers stream at once (bounded memory); more are told to retry.
    static let maximumBrowsers = 256

    /// Monotonic seconds (injected: tests drive it).
    private let now: @Sendable () -> UInt64

    init(now: @escaping @Sendable () -> UInt64) { self.now = now }

    var latest: Message? { state.withLock { $0.latest } }

    /// Seconds since the loop last published a snapshot (nil: never yet).
    var secondsSinceSnapshot: UInt64? {
        let t = now()
        return state.withLock { s in s.receivedSeconds.map { t >= $0 ? t - $0 : 0 } }
    }
    var browsers: Int { state.withLock { $0.browsers.count } }

    /// Reads the node's snapshots until it stops.
    func run(_ snapshots: AsyncStream<NodeSnapshot>) async {
        for await snapshot in snapshots {
            let message = Self.render(snapshot)
            let t = now()
            let browsers = state.withLock { s -> [AsyncStream<Message>.Continuation] in
                s.latest = message
                s.receivedSeconds = t
                return Array(s.browsers.values)
            }
            for b in browsers { b.yield(message) }
        }
        finish()
    }

    /// Ends every browser's stream, and any that would start (the server shuts down).
    func finish() {
        let browsers = state.withLock { s -> [AsyncStream<Message>.Continuation] in
            s.finished = true
            defer { s.browsers.removeAll() }
            return Array(s.browsers.values)
        }
        for b in browsers { b.finish() }
    }

    /// A browser's stream: the newest message at once unless the browser already has it
    /// (`lastEventID`, from EventSource's Last-Event-ID after a reconnect), then each new one.
    /// Nil when too many browsers stream already.
    func stream(lastEventID: UInt64?) -> AsyncStream<Message>? {
        let (stream, continuation) = AsyncStream<Message>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id: UInt64? = state.withLock { s in
            guard s.browsers.count < Self.maximumBrowsers else { return nil }
            let id = s.next
            s.next += 1
            if s.finished {
                continuation.finish()
            } else {
                s.browsers[id] = continuation
            }
            if let latest = s.latest, latest.sequence != lastEventID { continuation.yield(latest) }
            return id
        }
        guard let id else { return nil }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.browsers.removeValue(forKey: id) }
        }
        return stream
    }

    static func render(_ s: NodeSnapshot) -> Message {
        let forViewers = s.forPublic()
        func message(acting: Bool) -> ByteBuffer {
            let viewer = PageRenderer.Viewer(acting: acting, csrf: "")
            // Viewers read the public view, as the page and the API give it.
            let s = acting ? s : forViewers
            var sections: [String: String] = [:]
            for name in PageRenderer.sections { sections[name] = PageRenderer.section(name, s, viewer: viewer) }
            let payload = StreamPayload(sequence: s.sequence, time: PageRenderer.clock(s.timeMicroseconds), sections: sections)
            let json = (try? JSONEncoder().encode(payload)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
            // JSON has no raw newline, so one `data:` line carries it.
            return ByteBuffer(string: "id: \(s.sequence)\nevent: state\ndata: \(json)\n\n")
        }
        return Message(sequence: s.sequence, snapshot: s, viewing: message(acting: false), acting: message(acting: true))
    }

    struct StreamPayload: Codable {
        var sequence: UInt64
        var time: String
        var sections: [String: String]
    }
}
