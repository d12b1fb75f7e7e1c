import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import VigilBoard
import VigilCore
@testable import VigilNode
@testable import VigilWeb
import VigilSystem

/// The page's live updates (issue 13, item 1): Server-Sent Events whose id is the log sequence,
/// one internal stream however many viewers, at most four updates a second.
@Suite(.serialized) struct LiveStreamTests {
    /// One parsed SSE message.
    struct Message: Sendable {
        var id: UInt64
        var event: String
        var data: String
        var sections: [String: String] {
            (try? JSONDecoder().decode(LiveFeed.StreamPayload.self, from: Data(data.utf8)))?.sections ?? [:]
        }
    }

    /// Reads `/events` in a task of its own; messages arrive on `messages`.
    final class EventStream: Sendable {
        let messages: AsyncStream<Message>
        private let task: Task<Void, Never>

        init(_ web: WebHarness, cookie: String?, lastEventID: UInt64? = nil) async throws {
            var request = HTTPClientRequest(url: web.base + "/events")
            if let cookie { request.headers.add(name: "cookie", value: cookie) }
            if let lastEventID { request.headers.add(name: "last-event-id", value: "\(lastEventID)") }
            let response = try await web.client.execute(request, timeout: .seconds(120))
            #expect(response.status == .ok && response.headers.first(name: "content-type") == "text/event-stream")
            let (messages, continuation) = AsyncStream<Message>.makeStream()
            self.messages = messages
            task = Task {
                var text = ""
                do {
                    for try await buffer in response.body {
                        text += String(buffer: buffer)
                        while let end = text.range(of: "\n\n") {
                            let block = String(text[..<end.lowerBound])
                            text = String(text[end.upperBound...])
                            var id: UInt64?, event = "", data = ""
                            for line in block.split(separator: "\n") {
                                if line.hasPrefix("id: ") { id = UInt64(line.dropFirst(4)) }
                                if line.hasPrefix("event: ") { event = String(line.dropFirst(7)) }
                                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
                            }
                            if let id { continuation.yield(Message(id: id, event: event, data: data)) }
                        }
                    }
                } catch {}
                continuation.finish()
            }
        }

        func close() { task.cancel() }
    }

    /// The first message `holds` is true of, while `drive` moves the node along; nil if the
    /// stream ended first. A stuck test ends at the harness's request timeout, never by a sleep.
    static func first(_ stream: EventStream, _ holds: @escaping @Sendable (Message) -> Bool) async -> Message? {
        for await m in stream.messages where holds(m) { return m }
        return nil
    }

    @Test func anSOSReachesEveryViewerAsALiveUpdateWhoseIDIsItsSequence() async throws {
        try await WebHarness.with("live-sos") { (web: WebHarness) async throws in
            let (cookie, _) = try await web.signIn()
            let staff = try await EventStream(web, cookie: cookie)
            let other = try await EventStream(web, cookie: cookie)
            var firstIterator = staff.messages.makeAsyncIterator()
            let opening = try #require(await firstIterator.next())
            #expect(opening.event == "state" && opening.sections["help"]?.contains("No call for help") == true)
            #expect(opening.sections.keys.sorted() == PageRenderer.sections.sorted())
            #expect(opening.id == (await web.read { $0.projections.appliedThrough }))

            // The big button, held: an SOS.
            web.node.onLoop { n in try? (n.board as? SimulatedBoard)?.press(holdMicroseconds: 2_500_000) }
            await web.advance(byMicroseconds: 3_000_000)
            let sosSequence = try #require(await web.read { n in n.projections.alerts.active.first { $0.raisedHere }?.firstSequence })
            for stream in [staff, other] {
                let update = try #require(await Self.first(stream) { $0.id >= sosSequence && $0.sections["help"]?.contains("SOS") == true })
                #expect(update.sections["help"]?.contains("raised here") == true)
                #expect(update.sections["lights"]?.contains("class=\"line red on\"") == true, "the red light's SOS shows")
                #expect(update.sections["help"]?.contains("action=\"/act/cancel\"") == true, "staff get the form to cancel it")
            }
            #expect(web.feedBrowsers == 2, "one internal stream, two browsers on it")

            // Signed out elsewhere: the open stream ends within seconds, not at the next reload.
            let csrf = try #require(WebHarness.csrf(in: try await web.get("/", cookie: cookie).body))
            #expect(try await web.post("/logout", form: "csrf=\(csrf)", cookie: cookie).status == .seeOther)
            web.seconds.advance(6)
            await web.advance(byMicroseconds: 5_100_000) // a heartbeat: a message to send, or not
            // Both streams end (a stream the box kept open would hang here until the request's
            // timeout), and the box no longer feeds them.
            for stream in [staff, other] { for await _ in stream.messages {} }
            #expect(web.feedBrowsers == 0, "the box ended both streams of the signed-out session")
            staff.close()
            other.close()
        }
    }

    @Test func updatesComeAtMostFourASecondAndAResumedStreamGetsOnlyWhatItLacks() async throws {
        try await WebHarness.with("live-rate", publicView: true) { (web: WebHarness) async throws in
            // A crowded radio: a scan window closes every 300 ms, each a durable event.
            let viewer = try await EventStream(web, cookie: nil)
            let times = LockedValue<[UInt64]>([])
            let reader = Task {
                for await m in viewer.messages {
                    let payload = try? JSONDecoder().decode(LiveFeed.StreamPayload.self, from: Data(m.data.utf8))
                    #expect(payload?.sections["residents"]?.contains("action=") == false, "a viewer gets no forms")
                    times.withLock { $0.append(m.id) }
                }
            }
            await web.advance(byMicroseconds: 3_000_000)
            let published = await web.read { $0.publisher.published }
            // 3 s of a busy node: at most one snapshot per 250 ms (and the first at once).
            #expect(published.count >= 2 && published.count <= 14, "\(published.count) snapshots")
            for (a, b) in zip(published, published.dropFirst()) {
                #expect(b - a >= SnapshotPublisher.minimumIntervalNanoseconds, "snapshots \(b - a) ns apart")
            }
            viewer.close()
            reader.cancel()

            // Reconnecting with the newest id: nothing is sent again until something changes.
            let feed = LiveFeed(now: { 0 })
            let (snapshots, source) = AsyncStream<NodeSnapshot>.makeStream()
            let run = Task { await feed.run(snapshots) }
            let snapshot = try #require(web.node.snapshots.latest)
            source.yield(snapshot)
            _ = await Self.firstMessage(feed.stream(lastEventID: nil))
            var resumed = try #require(feed.stream(lastEventID: snapshot.sequence)).makeAsyncIterator()
            var older = try #require(feed.stream(lastEventID: snapshot.sequence - 1)).makeAsyncIterator()
            #expect(await older.next()?.sequence == snapshot.sequence, "a browser that lacks it gets the newest at once")
            var next = snapshot
            next.sequence += 1
            source.yield(next)
            #expect(await resumed.next()?.sequence == snapshot.sequence + 1, "the resumed stream's first message is the new one")
            source.finish()
            await run.value
        }
    }

    static func firstMessage(_ stream: AsyncStream<LiveFeed.Message>?) async -> LiveFeed.Message? {
        guard let stream else { return nil }
        for await m in stream { return m }
        return nil
    }
}
