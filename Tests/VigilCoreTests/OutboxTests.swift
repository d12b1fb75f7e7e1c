import Testing
import VigilCore
import VigilEvents

private let second = LadderHarness.second
private let minute = LadderHarness.minute
private let hour = LadderHarness.hour

@Suite("Outbox")
struct OutboxTests {
    /// A resident whose ladder has reached the text: two entries, prompt and text.
    static func withTwoEntries() -> LadderHarness {
        var h = LadderHarness()
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1")))
        h.run(until: h.now + 4 * hour + 20 * minute)
        return h
    }

    @Test func entriesStayPendingUntilDelivered() {
        var h = Self.withTwoEntries()
        #expect(h.outbox.pending.map(\.id) == ["r1/1/prompt", "r1/1/text"]) // oldest first
        #expect(h.outbox.pending.allSatisfy { $0.attempts == 0 && !$0.delivered })
        // A new entry is due at once.
        let text = h.outbox.entries["r1/1/text"]!
        #expect(h.outbox.nextAttemptMicroseconds(text) == text.createdMicroseconds)

        h.append(LadderEvents.attempt("r1/1/text", 1, delivered: false, error: "modem busy"))
        #expect(h.outbox.pending.map(\.id) == ["r1/1/prompt", "r1/1/text"])
        #expect(h.outbox.entries["r1/1/text"]?.lastError == "modem busy")
        #expect(h.outbox.failedAttempts == 1)

        let delivered = h.append(LadderEvents.attempt("r1/1/text", 2, delivered: true))
        #expect(h.outbox.pending.map(\.id) == ["r1/1/prompt"])
        let entry = h.outbox.entries["r1/1/text"]
        #expect(entry?.delivered == true)
        #expect(entry?.deliveredSequence == delivered.sequence)
        #expect(entry?.attempts == 2)
        #expect(entry?.lastError == "")
        #expect(h.outbox.deliveredTotal == 1)
    }

    @Test func failedAttemptsBackOffExponentiallyUpToTheCap() {
        var h = Self.withTwoEntries()
        #expect(h.outbox.retryBaseMicroseconds == 5 * second)
        #expect(h.outbox.retryMaxMicroseconds == 10 * minute)
        var expected: [UInt64] = []
        var actual: [UInt64] = []
        for attempt in UInt32(1)...12 {
            h.run(until: h.now + 1 * second)
            let event = h.append(LadderEvents.attempt("r1/1/prompt", attempt, delivered: false, error: "timeout"))
            let entry = h.outbox.entries["r1/1/prompt"]!
            #expect(entry.lastAttemptMicroseconds == event.timeMicroseconds)
            actual.append(h.outbox.nextAttemptMicroseconds(entry) - event.timeMicroseconds)
            expected.append(min(10 * minute, 5 * second << UInt64(attempt - 1)))
        }
        // 5 s, 10 s, 20 s, 40 s, 80 s, 160 s, 320 s, then 600 s.
        #expect(actual == expected)
        #expect(actual.prefix(3) == [5 * second, 10 * second, 20 * second])
        #expect(actual.suffix(5).allSatisfy { $0 == 10 * minute })
        #expect(h.outbox.failedAttempts == 12)
        #expect(h.outbox.pending.count == 2)
    }

    @Test func theBackoffHonoursTheConfiguredCap() {
        var h = Self.withTwoEntries()
        h.state.outbox.retryMaxMicroseconds = 30 * second
        var backoff: [UInt64] = []
        for attempt in UInt32(1)...6 {
            let event = h.append(LadderEvents.attempt("r1/1/prompt", attempt, delivered: false))
            backoff.append(h.outbox.nextAttemptMicroseconds(h.outbox.entries["r1/1/prompt"]!) - event.timeMicroseconds)
        }
        #expect(backoff == [5, 10, 20, 30, 30, 30].map { $0 * second })
        // The setting is part of the checkpoint.
        let restored = try? Projections.decoded(h.state.encoded())
        #expect(restored?.outbox.retryMaxMicroseconds == 30 * second)
    }

    @Test func aDeliveredEntryIgnoresLaterAttempts() {
        var h = Self.withTwoEntries()
        h.append(LadderEvents.attempt("r1/1/prompt", 1, delivered: true))
        let before = h.outbox
        // A late failure report and a second "delivered" (a notifier that answered twice).
        h.append(LadderEvents.attempt("r1/1/prompt", 2, delivered: false, error: "late"))
        h.append(LadderEvents.attempt("r1/1/prompt", 3, delivered: true))
        #expect(h.outbox == before)
        #expect(h.outbox.deliveredTotal == 1)
        #expect(!h.outbox.pending.contains { $0.id == "r1/1/prompt" })
    }

    @Test func anAttemptForAnUnknownEntryChangesNothing() {
        var h = Self.withTwoEntries()
        let before = h.outbox
        h.append(LadderEvents.attempt("r9/1/text", 1, delivered: true))
        h.append(LadderEvents.attempt("", 1, delivered: false))
        #expect(h.outbox == before)
    }

    @Test func onlyTheNewestDeliveredEntriesAreKept() {
        var h = LadderHarness()
        h.state.outbox.keepDelivered = 2
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1", interval: 1 * hour)))
        // Four ladders' prompts, each answered.
        for _ in 0..<4 {
            h.run(until: h.escalations.earliestDeadline!.dueMicroseconds)
            h.append(checkIn("r1"))
        }
        #expect(h.outbox.entries.count == 4)
        h.run(until: h.now + 1 * hour + 22 * minute) // a fifth prompt and its text: never delivered
        let ids = ["r1/1/prompt", "r1/2/prompt", "r1/3/prompt", "r1/4/prompt"]
        // Delivered out of order: 3, 1, 4, 2.
        for id in [ids[2], ids[0], ids[3], ids[1]] { h.append(LadderEvents.attempt(id, 1, delivered: true)) }
        #expect(h.outbox.deliveredTotal == 4)
        // The two delivered last are kept; the pending ones are never forgotten.
        #expect(Set(h.outbox.entries.values.filter(\.delivered).map(\.id)) == [ids[3], ids[1]])
        #expect(h.outbox.pending.map(\.id).sorted() == ["r1/5/prompt", "r1/5/text"])
        let forgotten = h.outbox
        // A late attempt for a forgotten entry brings nothing back.
        h.append(LadderEvents.attempt(ids[0], 2, delivered: false))
        #expect(h.outbox == forgotten)
    }

    /// The radio's entries (an SOS also makes a call for help's messages: CallBookTests).
    func broadcasts(_ h: LadderHarness) -> [Outbox.Entry] { h.outbox.entries.values.filter { $0.channel == .broadcast } }

    @Test func anSOSRaisedHereCreatesABroadcastEntry() {
        var h = LadderHarness()
        let raised = h.append(.alertRaised(alert(origin: 0xB0C5, counter: 3)))
        let id = AlertID(origin: 0xB0C5, counter: 3).text
        let entry = h.outbox.entries["sos/\(id)/raised"]
        #expect(entry?.channel == .broadcast)
        #expect(entry?.recipients == [])
        #expect(entry?.createdSequence == raised.sequence)
        #expect(broadcasts(h).count == 1)
        // Delivered (the radio sent it); a duplicate of the same alert neither creates a second
        // entry nor makes the first one pending again.
        h.append(LadderEvents.attempt("sos/\(id)/raised", 1, delivered: true))
        h.append(.alertRaised(alert(origin: 0xB0C5, counter: 3)))
        #expect(broadcasts(h).count == 1)
        #expect(h.outbox.entries["sos/\(id)/raised"]?.createdSequence == raised.sequence)
        #expect(h.outbox.entries["sos/\(id)/raised"]?.delivered == true)
        #expect(h.outbox.pending.filter { $0.channel == .broadcast }.isEmpty)

        let cancelled = h.append(cancellation(origin: 0xB0C5, counter: 3, by: 0xB0C5))
        let cancelEntry = h.outbox.entries["sos/\(id)/cancelled"]
        #expect(cancelEntry?.channel == .broadcast)
        #expect(cancelEntry?.createdSequence == cancelled.sequence)
        #expect(broadcasts(h).count == 2)
        // Cancelling twice sends one cancellation.
        h.append(cancellation(origin: 0xB0C5, counter: 3, by: 0xB0C5))
        #expect(broadcasts(h).count == 2)
        #expect(h.outbox.entries["sos/\(id)/cancelled"]?.createdSequence == cancelled.sequence)
    }

    @Test func aReceivedAlertCreatesNoEntry() {
        var h = LadderHarness()
        h.append(.alertReceived(alert(origin: 0xFACE, counter: 1, hops: 2)))
        h.append(cancellation(origin: 0xFACE, counter: 1, by: 0xFACE)) // cancelled by its origin
        h.append(cancellation(origin: 0xDEAD, counter: 9)) // never heard of
        #expect(h.outbox.entries.isEmpty)
    }

    @Test func entriesAndAttemptsSurviveACheckpoint() throws {
        var h = Self.withTwoEntries()
        h.append(LadderEvents.attempt("r1/1/prompt", 1, delivered: false, error: "x"))
        h.append(LadderEvents.attempt("r1/1/text", 1, delivered: true))
        var restarted = try h.restartedFromCheckpoint()
        #expect(restarted.outbox == h.outbox)
        #expect(restarted.outbox.pending.map(\.id) == ["r1/1/prompt"])
        #expect(restarted.outbox.nextAttemptMicroseconds(restarted.outbox.pending[0])
            == h.outbox.entries["r1/1/prompt"]!.lastAttemptMicroseconds + 5 * second)
        restarted.append(LadderEvents.attempt("r1/1/prompt", 2, delivered: true))
        #expect(restarted.outbox.pending.isEmpty)
    }
}

/// The one back-off rule, with the figures of its two users: the radio (250 ms doubling to 30 s)
/// and the outbox (5 s doubling to 10 min).
@Suite("Back-off")
struct BackoffTests {
    static let ms: UInt64 = 1_000

    @Test func theRadiosBackOffDoublesFromAQuarterSecondToThirtySeconds() {
        var b = Backoff(base: 250 * Self.ms, max: 30_000 * Self.ms)
        let delays = (0..<10).map { _ in b.next() }
        #expect(delays == [250, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000].map { $0 * Self.ms })
        #expect(b.failures == 10)
    }

    @Test func theOutboxsBackOffDoublesFromFiveSecondsToTenMinutes() {
        let b = Backoff(base: 5 * second, max: 10 * minute)
        let delays = (UInt32(1)...10).map { b.delay(afterFailures: $0) }
        #expect(delays == [5, 10, 20, 40, 80, 160, 320, 600, 600, 600].map { $0 * second })
    }

    @Test func noFailureMeansNoWait() {
        #expect(Backoff(base: 5, max: 10).delay(afterFailures: 0) == 0)
        #expect(Backoff(base: 0, max: 10).delay(afterFailures: 3) == 0)
    }

    @Test func aLongStreakStaysAtTheCapWithoutOverflowing() {
        let b = Backoff(base: 5 * second, max: 10 * minute)
        #expect(b.delay(afterFailures: 64) == 10 * minute)
        #expect(b.delay(afterFailures: 65) == 10 * minute)
        #expect(b.delay(afterFailures: .max) == 10 * minute)
        let huge = Backoff(base: UInt64.max / 2, max: .max)
        #expect(huge.delay(afterFailures: 2) == UInt64.max - 1)
        #expect(huge.delay(afterFailures: 3) == .max, "saturates instead of wrapping")
        #expect(Backoff(base: 1, max: .max).delay(afterFailures: 64) == 1 << 63)
    }

    @Test func aBaseAboveTheCapWaitsTheCap() {
        #expect(Backoff(base: 10, max: 4).delay(afterFailures: 1) == 4)
    }

    @Test func resetStartsTheNextStreakAtTheBase() {
        var b = Backoff(base: 250 * Self.ms, max: 30_000 * Self.ms)
        #expect(b.isFresh)
        _ = b.next()
        _ = b.next()
        #expect(!b.isFresh)
        b.reset()
        #expect(b.isFresh)
        #expect(b.next() == 250 * Self.ms)
    }

    @Test func theOutboxUsesTheSameRuleWithItsSettings() {
        var outbox = Outbox()
        #expect(outbox.retry == Backoff(base: 5 * second, max: 10 * minute))
        outbox.retryMaxMicroseconds = 30 * second
        #expect(outbox.retry.delay(afterFailures: 4) == 30 * second)
    }
}
