import Foundation
import PostgresNIO
import Testing
import VigilCAP
import VigilCore
import VigilEvents
@testable import VigilHub
import VigilTestSupport
@testable import VigilNode

/// The hub polls public warnings feeds once for its network and hands each new message to its
/// boxes on the feed (issue 32, item 1): a box with no feed of its own, and no internet but its
/// hub, hears a warning for its site and sounds it.
@Suite(.serialized) struct WarningRelayTests {
    static let site = CAPPoint(latitude: -33.8688, longitude: 151.2093)

    static func document(_ id: String, sent: UInt64, expires: UInt64) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>\(id)</identifier><sender>bom@example.gov.au</sender>
        <sent>\(CAPTime(microseconds: Int64(sent), offsetMinutes: 660))</sent><status>Actual</status><msgType>Alert</msgType><scope>Public</scope>
        <info><category>Met</category><event>Flash flood</event><urgency>Immediate</urgency><severity>Extreme</severity>
        <certainty>Observed</certainty><expires>\(CAPTime(microseconds: Int64(expires), offsetMinutes: 660))</expires>
        <headline>Flash flood \(id): move to higher ground</headline>
        <area><areaDesc>River flats</areaDesc><polygon>-33.80,151.15 -33.80,151.25 -33.90,151.25 -33.90,151.15 -33.80,151.15</polygon></area></info></alert>
        """
    }

    @Test func aWarningTheHubPollsReachesABoxWithoutFeedsOnceAndSounds() async throws {
        let dir = TemporaryDirectory("relay")
        let server = try await CAPFeedServer(directory: dir.path)
        defer { server.stop() }
        let box = Box("relay-box")
        box.warningSite = Self.site
        // In force both on the box's clock (2026-01-01, manual) and on the hub's (real time):
        // the hub does not relay what has expired.
        let now = box.clock.nowMicroseconds()
        let real = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        try Self.document("R-1", sent: now - 60_000_000, expires: max(now, real) + 3_600_000_000)
            .write(toFile: server.documents + "/flood.xml", atomically: true, encoding: .utf8)
        let feed = server.url("/feed.atom")

        let hub = HubHarness()
        hub.warningsYAML = """
            warnings:
              feeds:
                - url: \(feed)
                  ca_file: \(server.certificate)
                  interval: 5s

            """
        try await hub.start()
        try await box.join(hub, as: "annex")
        try await box.start()
        do {
            try await box.until("the relayed warning", seconds: 60) { $0.projections.warnings.inForceHere.contains { $0.key.identifier == "R-1" } }
        } catch {
            Issue.record("\(error); the hub's log ends:\n\(hub.logTail())")
            throw error
        }
        let warning = try #require(await box.read { $0.projections.warnings.inForceHere.first { $0.key.identifier == "R-1" } } ?? nil)
        #expect(warning.level == .sounds, "Extreme, Immediate, Observed, here")
        #expect(await box.read { $0.projections.warnings.sources[warning.key]?.feed } == server.url("/docs/flood.xml"),
                "its source is the feed's document")
        #expect(warning.origin.feed == "hub:" + feed, "under an origin of its own: the box's own poll of the feed is not overruled")
        #expect(await box.read { $0.patterns.decisions[.buzzer]?.pattern } == OutputPolicy.warningTone)

        // The hub polls again (the feed answers 304 or the same document): nothing new goes on
        // the feed; the message was relayed once.
        func polls() async -> Int {
            let counts = await server.stats()["/feed.atom"] ?? [:]
            return (counts["200"] ?? 0) + (counts["304"] ?? 0)
        }
        // The feed server is another process: asked until it answers, at most the interval and more.
        for _ in 0..<60 where await polls() < 2 { try await Task.sleep(for: .milliseconds(250)) }
        #expect(await polls() >= 2, "the hub polled twice")
        let relayed = try await hub.database { database in
            var n = 0
            for try await (count) in try await database.client.query(
                "SELECT count(*) FROM feed WHERE kind = \(Int32(EventKind.warningReceived.rawValue))").decode(Int64.self) { n = Int(count) }
            return n
        }
        #expect(relayed == 1)
        try await box.stop()
        await hub.stop()
    }

    /// However many hub processes share the database, one polls a feed each interval: the lease
    /// is taken by one, refused to the others until it runs out.
    @Test func oneHubProcessHoldsAFeedsLeaseUntilItRunsOut() async throws {
        let hub = HubHarness()
        try await hub.start()
        let url = "https://alerts.example.gov/cap.atom"
        let first = try #require(try await hub.database { try await $0.leaseWarningFeed(url: url, seconds: 60) })
        #expect(first.seen.isEmpty, "a feed never polled is leased at once")
        #expect(try await hub.database { try await $0.leaseWarningFeed(url: url, seconds: 60) } == nil, "held: another process does not poll")
        try await hub.database {
            try await $0.finishWarningPoll(url: url, lease: first.token, validators: .init(etag: "\"v1\""),
                                           seen: ["https://alerts.example.gov/a.xml": "1"], problem: nil)
        }

        // A lease that runs out is taken by the next poll, which starts from what the last one
        // learned; a poll that outlived its lease saves nothing over the newer one's.
        let other = "https://other.example.gov/cap.xml"
        let short = try #require(try await hub.database { try await $0.leaseWarningFeed(url: other, seconds: 1) })
        // Real time: the lease is PostgreSQL's now(), not this process's clock.
        try await Task.sleep(for: .milliseconds(1_100))
        let next = try #require(try await hub.database { try await $0.leaseWarningFeed(url: other, seconds: 60) })
        try await hub.database { try await $0.finishWarningPoll(url: other, lease: next.token, validators: .init(etag: "\"new\""), seen: [:], problem: nil) }
        try await hub.database { try await $0.finishWarningPoll(url: other, lease: short.token, validators: .init(etag: "\"old\""), seen: [:], problem: nil) }
        let saved = try await hub.database { database in
            var tags: [String] = []
            for try await (url, etag) in try await database.client.query("SELECT url, etag FROM warning_feeds ORDER BY url")
                .decode((String, String?).self) { tags.append("\(url) \(etag ?? "-")") }
            return tags
        }
        #expect(saved == ["https://alerts.example.gov/cap.atom \"v1\"", "https://other.example.gov/cap.xml \"new\""])
        await hub.stop()
    }
}

/// A page of the feed is cut at `pageBytes` of payloads (a box reads a page as one line of at
/// most 2 MiB), and says so, so the reader asks for the rest at once.
struct FeedPageCutTests {
    static func item(_ position: UInt64, bytes: Int) -> HubDatabase.FeedItem {
        HubDatabase.FeedItem(position: position, originNode: 0, kind: 1, timeUs: 0, payload: [UInt8](repeating: 7, count: bytes))
    }

    @Test func aPageOfLargeItemsIsCutAndSaysThereIsMore() {
        let big = (1...80).map { Self.item($0, bytes: HubDatabase.maxRelayedWarning) }
        let page = HubDatabase.FeedPage(items: big, head: 80, atCursor: nil)
        #expect(page.cut && page.items.count == HubDatabase.pageBytes / HubDatabase.maxRelayedWarning)
        #expect(page.items.reduce(0) { $0 + $1.payload.count } <= HubDatabase.pageBytes)
        #expect(page.more(limit: 200))
        // One item larger than a page still goes, alone: a page is never empty while items wait.
        let huge = HubDatabase.FeedPage(items: [Self.item(1, bytes: HubDatabase.pageBytes + 1), Self.item(2, bytes: 10)], head: 2, atCursor: nil)
        #expect(huge.items.map(\.position) == [1] && huge.cut)
        let small = HubDatabase.FeedPage(items: (1...10).map { Self.item($0, bytes: 100) }, head: 10, atCursor: nil)
        #expect(!small.cut && small.items.count == 10 && !small.more(limit: 200))
    }

    /// The shared window of the feed is bounded by bytes as well as by items: 2,000 relayed
    /// warnings would otherwise be 64 MiB in every hub process.
    @Test func theFeedsSharedWindowKeepsAtMost8MiBOfPayloads() {
        let big = (1...2_000).map { Self.item($0, bytes: HubDatabase.maxRelayedWarning) }
        let (window, floor) = FeedCache.trimmed(big, floor: 0)
        #expect(window.reduce(0) { $0 + $1.payload.count } <= FeedCache.capacityBytes)
        #expect(window.count == FeedCache.capacityBytes / HubDatabase.maxRelayedWarning && window.last?.position == 2_000)
        #expect(floor == (window.first?.position ?? 0) - 1, "a cursor below the window asks the database")
        let small = (1...2_100).map { Self.item($0, bytes: 100) }
        let (counted, countedFloor) = FeedCache.trimmed(small, floor: 0)
        #expect(counted.count == FeedCache.capacity && countedFloor == 100)
        let one = [Self.item(1, bytes: FeedCache.capacityBytes + 1)]
        #expect(FeedCache.trimmed(one, floor: 0).0.count == 1, "never the newest")
    }
}

/// What the relay sends on: what some box could want, each message once, a repeat with nothing
/// new never, and at most 120 an hour a feed.
struct RelayJudgementTests {
    static let now: UInt64 = 1_800_000_000_000_000

    static func alert(_ id: String, type: String = "Alert", sentOffset: Int64 = -60, expiresOffset: Int64 = 3_600, scope: String = "Public") throws -> CAPAlert {
        let sent = CAPTime(microseconds: Int64(now) + sentOffset * 1_000_000)
        let expires = CAPTime(microseconds: Int64(now) + expiresOffset * 1_000_000)
        let info = type == "Cancel" || type == "Ack" ? "" : """
            <info><category>Met</category><event>Flood</event><urgency>Immediate</urgency><severity>Extreme</severity>
            <certainty>Observed</certainty><expires>\(expires)</expires><area><areaDesc>A</areaDesc></area></info>
            """
        return try CAPReader.read(Array("""
            <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>\(id)</identifier><sender>s@example.gov</sender>
            <sent>\(sent)</sent><status>Actual</status><msgType>\(type)</msgType><scope>\(scope)</scope>
            \(type == "Alert" ? "" : "<references>s@example.gov,X-0,2026-01-01T00:00:00-00:00</references>")\(info)</alert>
            """.utf8))
    }

    @Test func aRepeatWithNothingNewIsNotRelayedButOneThatMovesTheEndIs() throws {
        var judged = WarningRelay.Judged()
        let first = try Self.alert("X-1")
        #expect(judged.wanted(first, now: Self.now))
        judged.relayed(first, now: Self.now)
        #expect(!judged.wanted(try Self.alert("X-1", sentOffset: -30), now: Self.now), "the same infos with a new sent")
        #expect(judged.wanted(try Self.alert("X-1", sentOffset: -30, expiresOffset: 7_200), now: Self.now), "a new end")
        #expect(!judged.wanted(try Self.alert("X-2", expiresOffset: -1), now: Self.now), "expired")
        #expect(!judged.wanted(try Self.alert("X-3", scope: "Restricted"), now: Self.now), "not public")
        #expect(!judged.wanted(try Self.alert("X-4", type: "Ack"), now: Self.now))
        #expect(judged.wanted(try Self.alert("X-5", type: "Cancel"), now: Self.now), "a cancel always")
    }

    @Test func atMost120AnHourAndAtMost4096Remembered() throws {
        var judged = WarningRelay.Judged()
        var spent = 0
        for n in 0..<130 where judged.spend(now: Self.now + UInt64(n)) { spent += 1 }
        #expect(spent == 120)
        let anHourOn = judged.spend(now: Self.now + 3_600_000_001)
        #expect(anHourOn, "an hour on")
        for n in 0..<5_000 { judged.relayed(try Self.alert("Y-\(n)"), now: Self.now) }
        #expect(judged.last.count <= WarningRelay.Judged.remembered)
    }
}
