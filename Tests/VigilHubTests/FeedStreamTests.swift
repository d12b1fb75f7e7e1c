import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization
import Testing
import VigilHubProtocol
import VigilTestSupport
@testable import VigilHub
@testable import VigilNode

/// The feed as a stream (`FeedStreams`): what a box gets on it, what it never gets, and what ends
/// one. The streams run in the test's process against the hub's real PostgreSQL, with short
/// heartbeats and lifetimes; the last test goes through `vigil-hub serve` over TLS.
@Suite(.serialized, .timeLimit(.minutes(3))) struct FeedStreamTests {
    static let box: UInt64 = 0xB0B0_0000_0000_0001
    static let other: UInt64 = 0xB0B0_0000_0000_0002
    /// Streams that end only when a test ends them (no credential is checked: these boxes are
    /// not enrolled).
    static let longLived = FeedStreams.Settings(heartbeat: .seconds(60), lifetime: .seconds(600), credentialCheck: .seconds(600))

    /// Adds a feed item from `origin` (0: a coordinator), as the hub's own insert does, and says
    /// so to the streams (the NOTIFY the listener would hear).
    static func add(_ db: HubDatabase, _ position: Int64, from origin: UInt64, _ signal: FeedSignal) async throws {
        try await db.client.query("""
            INSERT INTO feed (position, origin_node, origin_epoch, origin_seq, kind, time_us, payload)
            VALUES (\(position), \(Int64(bitPattern: origin)), 0, \(position), 3, \(position), '\\x00'::bytea)
            """, logger: quietLogger)
        await signal.notifyAll()
    }

    /// The next line of a stream, decoded; nil when the stream ended.
    static func next(_ lines: inout AsyncStream<ByteBuffer>.Iterator) async throws -> FeedAnswer? {
        guard let line = await lines.next() else { return nil }
        #expect(line.readableBytesView.last == 0x0A, "every line ends with a newline")
        return try JSONDecoder().decode(FeedAnswer.self, from: Data(line.readableBytesView.dropLast()))
    }

    /// Runs `body` with streams of the given settings over a started hub's database.
    static func withStreams(_ label: String, _ settings: FeedStreams.Settings,
                            _ body: @escaping @Sendable (HubDatabase, FeedSignal, FeedStreams) async throws -> Void) async throws {
        let hub = HubHarness(label)
        try await hub.start()
        try await hub.database { db in
            let signal = FeedSignal()
            let streams = FeedStreams(signal: signal, cache: FeedCache(), database: db, settings: settings, logger: quietLogger)
            let reader = Task { await streams.run() }
            do {
                try await body(db, signal, streams)
            } catch {
                await signal.shutDown()
                await reader.value
                throw error
            }
            await signal.shutDown()
            await reader.value
        }
        await hub.stop()
    }

    @Test func aStreamSendsItsFirstLineAtOnceThenEachNewItemButNeverTheBoxsOwn() async throws {
        try await Self.withStreams("streams-items", Self.longLived) { db, signal, streams in
            try await Self.add(db, 1, from: 0, signal)
            try await Self.add(db, 2, from: Self.box, signal)
            try await Self.add(db, 3, from: 0, signal)
            var mine = try #require(await streams.open(node: Self.box, credentialHash: "", after: 0, at: nil)).lines.makeAsyncIterator()
            var theirs = try #require(await streams.open(node: Self.other, credentialHash: "", after: 3, at: nil)).lines.makeAsyncIterator()
            let first = try #require(try await Self.next(&mine))
            #expect(first.items.map(\.position) == [1, 3], "what is there, less the box's own")
            #expect(first.head == 3 && first.cursor == 3)
            let theirFirst = try #require(try await Self.next(&theirs))
            #expect(theirFirst.items.isEmpty && theirFirst.head == 3 && theirFirst.atCursor != nil, "a cursor at the head: nothing yet, and its check")

            try await Self.add(db, 4, from: Self.box, signal)
            try await Self.add(db, 5, from: 0, signal)
            // The box's own item never comes to it; the other box gets both (in one line or two).
            let next = try #require(try await Self.next(&mine))
            #expect(next.items.map(\.position) == [5] && next.cursor == 5 && next.head == nil && next.atCursor == nil,
                    "later lines carry items only: \(next.items.map(\.position))")
            var got: [UInt64] = []
            while got.count < 2, let line = try await Self.next(&theirs) { got += line.items.map(\.position) }
            #expect(got == [4, 5])
            #expect(await streams.count == 2)
        }
    }

    @Test func streamsAtOneCursorShareOneLine() async throws {
        try await Self.withStreams("streams-shared", Self.longLived) { db, signal, streams in
            try await Self.add(db, 1, from: 0, signal)
            var readers: [AsyncStream<ByteBuffer>.Iterator] = []
            for n in 0..<50 { readers.append(try #require(await streams.open(node: 0xC000 + UInt64(n), credentialHash: "", after: 1, at: nil)).lines.makeAsyncIterator()) }
            for i in readers.indices { _ = try await Self.next(&readers[i]) }
            try await Self.add(db, 2, from: Self.box, signal)
            var lines: [ByteBuffer] = []
            for i in readers.indices { lines.append(try #require(await readers[i].next())) }
            #expect(Set(lines.map { Array($0.readableBytesView) }).count == 1, "the same bytes for every box at the cursor")
            let storage = Set(lines.map { $0.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) } })
            #expect(storage.count == 1, "and one buffer: encoded once, shared")
            let answer = try JSONDecoder().decode(FeedAnswer.self, from: Data(lines[0].readableBytesView))
            #expect(answer.items.map(\.position) == [2])
        }
    }

    @Test func aQuietStreamGetsHeartbeatsAndEndsAfterItsLifetimeAndAtShutdown() async throws {
        let settings = FeedStreams.Settings(heartbeat: .milliseconds(200), lifetime: .seconds(2), credentialCheck: .seconds(600))
        try await Self.withStreams("streams-quiet", settings) { db, signal, streams in
            let opened = ContinuousClock.now
            var lines = try #require(await streams.open(node: Self.box, credentialHash: "", after: 0, at: nil)).lines.makeAsyncIterator()
            var beats = 0
            while let line = try await Self.next(&lines) {
                #expect(line.items.isEmpty)
                beats += 1
            }
            let lasted = ContinuousClock.now - opened
            #expect(beats >= 3, "a first line, then one every 200 ms: \(beats)")
            // It ends at half to one and a half times its lifetime (1 to 3 s); the upper bound has
            // slack because under CI's full suite a round can start seconds late (4.7 s was seen).
            #expect(lasted >= .seconds(1) && lasted < .seconds(10), "it ends after half to one and a half times its lifetime: \(lasted)")
            #expect(await streams.count == 0)

            // At shutdown, an open stream ends and no new one opens.
            var open = try #require(await streams.open(node: Self.box, credentialHash: "", after: 0, at: nil)).lines.makeAsyncIterator()
            _ = try await Self.next(&open)
            await signal.shutDown()
            // The reader marks itself closed before it ends the streams.
            while try await Self.next(&open) != nil {}
            #expect(await streams.open(node: Self.box, credentialHash: "", after: 0, at: nil) == nil)
        }
    }

    @Test func aBoxThatReadsTooSlowlyLosesItsStreamNotTheHubsMemory() async throws {
        let settings = FeedStreams.Settings(heartbeat: .seconds(60), lifetime: .seconds(600), credentialCheck: .seconds(600), buffered: 2)
        try await Self.withStreams("streams-slow", settings) { db, signal, streams in
            let givenBack = Mutex(0)
            let slow = try #require(await streams.open(node: Self.box, credentialHash: "", after: 0, at: nil,
                                                       onClose: { givenBack.withLock { $0 += 1 } }))
            var reader = try #require(await streams.open(node: Self.other, credentialHash: "", after: 0, at: nil)).lines.makeAsyncIterator()
            _ = try await Self.next(&reader)
            for p in Int64(1)...6 {
                try await Self.add(db, p, from: 0, signal)
                // The reading box keeps up, so each item is a round of its own.
                var got: [UInt64] = []
                while got.last != UInt64(p), let line = try await Self.next(&reader) { got += line.items.map(\.position) }
            }
            var held = 0
            for await _ in slow.lines { held += 1 }
            #expect(held == 2, "the lines it had room for, then the end: \(held)")
            #expect(await streams.slowEnded == 1)
            #expect(givenBack.withLock { $0 } == 1, "its box's poll place goes back when the hub ends it, whatever its body does")
            #expect(await streams.count == 1, "the box that reads is still served")
        }
    }

    @Test func aRevokedBoxsStreamEndsAtTheNextCredentialCheck() async throws {
        let settings = FeedStreams.Settings(heartbeat: .seconds(60), lifetime: .seconds(600), credentialCheck: .milliseconds(300))
        try await Self.withStreams("streams-revoked", settings) { db, signal, streams in
            var enrolled: [(node: UInt64, hash: String)] = []
            for name in ["kept", "revoked"] {
                let token = try await db.createEnrolmentToken(name: name)
                let node = UInt64.random(in: 1...UInt64.max) | 1
                guard case .enrolled(_, let secret) = try await db.enrol(token: token, node: node) else { throw CancellationError() }
                enrolled.append((node, HubDatabase.hashHex(secret)))
            }
            var kept = try #require(await streams.open(node: enrolled[0].node, credentialHash: enrolled[0].hash, after: 0, at: nil)).lines.makeAsyncIterator()
            var revoked = try #require(await streams.open(node: enrolled[1].node, credentialHash: enrolled[1].hash, after: 0, at: nil)).lines.makeAsyncIterator()
            let forged = try #require(await streams.open(node: enrolled[0].node, credentialHash: String(repeating: "0", count: 64), after: 0, at: nil))
            _ = try await Self.next(&kept)
            _ = try await Self.next(&revoked)
            #expect(try await db.revoke(name: "revoked", nowSeconds: 1_800_000_000))
            while try await Self.next(&revoked) != nil {}
            for await _ in forged.lines {}
            #expect(await streams.revokedEnded == 2, "the revoked box's stream and one with a secret the hub does not hold")
            try await Self.add(db, 1, from: 0, signal)
            #expect(try await Self.next(&kept)?.items.map(\.position) == [1], "the box still enrolled is still served")
        }
    }

    @Test func aCursorAtWhichTheHubHoldsAnotherItemGetsOneLineAndTheEnd() async throws {
        try await Self.withStreams("streams-lost", Self.longLived) { db, signal, streams in
            for p in Int64(1)...3 { try await Self.add(db, p, from: 0, signal) }
            var lines = try #require(await streams.open(node: Self.box, credentialHash: "", after: 2, at: "0123456789abcdef")).lines.makeAsyncIterator()
            let only = try #require(try await Self.next(&lines))
            #expect(only.items.isEmpty && only.cursor == 2 && only.head == 3)
            #expect(only.atCursor != nil && only.atCursor != "0123456789abcdef", "the hub's fingerprint, for the box to compare")
            #expect(try await Self.next(&lines) == nil)
        }
    }

    /// Through `vigil-hub serve`, as a box follows it: the first answer at once, a coordinator's
    /// alert as it commits; a box holds at most two streams.
    @Test func aBoxFollowsTheFeedOverTLSAndHoldsAtMostTwoStreams() async throws {
        let hub = HubHarness("streams-http")
        try await hub.start()
        let dir = TemporaryDirectory("box-streams")
        let a = try await RefusalTests.join(hub, dir, as: "a")
        let pem = try String(contentsOfFile: hub.hubData + "/tls/hub.crt", encoding: .utf8)
        let client = try HubClient(url: hub.url, certificatePEM: pem, credential: a.credential)
        defer { client.close() }
        let raw = try hub.rawClient()
        var request = HTTPClientRequest(url: hub.url + "/api/v1/boxes/\(NodeIDText.format(a.node))/feed?after=0&stream=1")
        request.headers.add(name: "authorization", value: a.credential.headerValue)
        let held = try await raw.execute(request, timeout: .seconds(30))
        #expect(held.status == .ok && held.headers.first(name: "content-type") == "application/x-ndjson")

        let answers = Mutex<[FeedAnswer]>([])
        let (arrivals, arrived) = AsyncStream.makeStream(of: Void.self)
        let following = Task {
            try await client.followFeed(node: a.node, after: 0, wait: 25) { answer in
                answers.withLock { $0.append(answer) }
                arrived.yield()
                return answers.withLock { $0.count } < 2
            }
        }
        // The box's first answer, then a third stream while two are open: refused at once.
        var told = arrivals.makeAsyncIterator()
        _ = await told.next()
        #expect(answers.withLock { $0.first?.head } == 0)
        let third = try await raw.execute(request, timeout: .seconds(10))
        #expect(third.status == .tooManyRequests)
        _ = try await third.body.collect(upTo: 1 << 16)

        try await hub.database { db in
            try await db.client.query("""
                INSERT INTO feed (position, origin_node, origin_epoch, origin_seq, kind, time_us, payload)
                VALUES (1, 0, 0, 1, 3, 1, '\\x00'::bytea)
                """, logger: quietLogger)
            try await db.client.query("SELECT pg_notify(\(HubDatabase.feedChannel), '')", logger: quietLogger)
        }
        #expect(try await following.value == (answers: 2, streamed: true))
        #expect(answers.withLock { $0.last?.items.map(\.position) } == [1])
        // A cursor the hub's window cannot judge (ahead of its feed) gets one plain answer, read
        // in its request, not a stream.
        var ahead = HTTPClientRequest(url: hub.url + "/api/v1/boxes/\(NodeIDText.format(a.node))/feed?after=99&stream=1")
        ahead.headers.add(name: "authorization", value: a.credential.headerValue)
        let plain = try await raw.execute(ahead, timeout: .seconds(10))
        #expect(plain.status == .ok && plain.headers.first(name: "content-type") == "application/json")
        _ = try await plain.body.collect(upTo: 1 << 16)
        try await raw.shutdown()
        await hub.stop()
    }
}
