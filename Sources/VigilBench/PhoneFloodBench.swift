import VigilCore
import VigilEvents
import VigilLog
import VigilNode
import VigilSystem

/// phone_flood_log_bytes_per_hour: what a hostile phone adds to the log in an hour (issue 28).
///
/// The phone loops as fast as an LE link allows: a link from a new random address every 100 ms,
/// ten EchoAlert messages of 4 KiB each on it (evacuate, fire, medical, sos in turn, each with an
/// id of its own), then it leaves. The simulated hour runs through the box's own `PhoneBudgets`
/// (the decisions `GATTLinks` makes) and the box's projections (phones' calls, staff messages);
/// every message and link event the box would append is encoded as the log stores it
/// (`RecordFormat`), plus LMDB's entry overhead (the staff messages' delivery attempts, a handful,
/// are not counted). The baseline, in the same run, is the same flood under the rules before:
/// a fresh bucket per link (10 at once, one per 0.5 s), and every link logged.
struct PhoneFloodBench {
    static let metric = "phone_flood_log_bytes_per_hour"
    let plan: Plan
    let reporter: Reporter

    struct Outcome {
        var bytes = 0
        var messages = 0
        var linkEvents = 0
        var staffMessages = 0
        var phoneCallsOpened: UInt64 = 0
        var refused = 0
    }

    static let linkEveryMicroseconds: UInt64 = 100_000
    static let writesPerLink = 10
    static let contentBytes = 4_000
    static let hourMicroseconds: UInt64 = 3_600_000_000
    /// LMDB's node header and key per entry (as `SizeBench`).
    static let entryOverhead = 18

    func flood(budgeted: Bool) -> Outcome {
        var settings = ConnectionSettings()
        settings.messageBurst = 10
        settings.messageIntervalMicroseconds = 500_000
        var budgets = PhoneBudgets(PhoneBudgets.Limits(settings), nowNanoseconds: 0)
        var projectionSettings = ProjectionSettings()
        projectionSettings.ladder.staff = ["+34600111222", "+34600333444"]
        projectionSettings.callTree = CallTree(tiers: [CallTree.Tier(afterMicroseconds: 0, recipients: projectionSettings.ladder.staff)],
                                               rounds: 1, repeatAfterMicroseconds: 600_000_000, configured: true)
        var state = Projections(settings: projectionSettings)
        var outcome = Outcome()
        var sequence: UInt64 = 1
        var rng = SplitMix64(seed: 28)
        let categories = ["evacuate", "fire", "medical", "sos"]
        let content = String(repeating: "x", count: Self.contentBytes)
        func append(_ body: EventBody, at time: UInt64) {
            let (kind, payload) = EventCodec.encode(body)
            outcome.bytes += RecordFormat.encoded(LogRecord(kind: kind, timeMicroseconds: time, payload: payload), sequence: sequence).count + Self.entryOverhead
            // The projections only for the budgeted flood: the baseline's 36,000 conversations of
            // 40 KiB each are its cost in bytes, not something to hold here.
            if budgeted { state.apply(Event(sequence: sequence, timeMicroseconds: time, body: body)) }
            sequence += 1
        }
        var started = NodeStarted()
        started.phonesOpenCalls = true
        append(.nodeStarted(started), at: 0)
        var link = 0
        var time: UInt64 = 0
        while time < Self.hourMicroseconds {
            let address = rng.next() & 0x3F_FFFF_FFFF_FF | 0xC0_0000_0000_00
            var logged = true
            if budgeted { logged = budgets.linkEvent(nowNanoseconds: time * 1_000) }
            var change = LinkChanged()
            change.peer = address
            change.peerType = .addressRandom
            change.open = true
            change.role = .peripheral
            if logged { append(.linkChanged(change), at: time); outcome.linkEvents += 1 }
            var ownRate = PhoneBudgets(PhoneBudgets.Limits(settings), nowNanoseconds: time * 1_000)
            for w in 0..<Self.writesPerLink {
                let now = time + UInt64(w) * 1_000
                let category = categories[(link * Self.writesPerLink + w) % categories.count]
                let verdict = budgeted
                    ? budgets.message(from: address, asksForHelp: PhoneBudgets.asksForHelp(category), nowNanoseconds: now * 1_000)
                    : ownRate.message(from: address, asksForHelp: false, nowNanoseconds: now * 1_000)
                guard verdict == .taken else { outcome.refused += 1; continue }
                var m = ChatMessage()
                m.peer = address
                m.peerType = .addressRandom
                m.channel = .message
                m.messageID = "flood-\(link)-\(w)"
                m.category = category
                m.text = content
                append(.chatMessage(m), at: now)
                outcome.messages += 1
            }
            change.open = false
            change.reason = "the peer disconnected"
            if logged { append(.linkChanged(change), at: time + 50_000); outcome.linkEvents += 1 }
            link += 1
            time += Self.linkEveryMicroseconds
        }
        outcome.staffMessages = state.outbox.entries.values.filter { $0.channel == .call }.count
        outcome.phoneCallsOpened = state.calls.openedTotal
        return outcome
    }

    func run() throws {
        progress("\(Self.metric): a simulated hour of a hostile phone, budgeted and as before")
        let budgeted = flood(budgeted: true)
        let before = flood(budgeted: false)
        guard budgeted.messages > 0, before.messages > budgeted.messages else {
            throw BenchError("\(Self.metric): the flood logged \(budgeted.messages) messages (before: \(before.messages))")
        }
        // The bound docs/phones.md states: 310 messages of at most 4 KiB and 304 link events.
        let bound = 310 * (4_096 + 120) + 304 * 80
        reporter.emit(MetricLine(
            metric: Self.metric, value: Double(budgeted.bytes), unit: "bytes", baseline: Double(before.bytes),
            context: [
                ("baseline_is", .string("the same flood with a fresh bucket per link (10, then one per 0.5 s) and every link logged (the rules before issue 28)")),
                ("bound", .int(bound)),
                ("within_bound", .bool(budgeted.bytes <= bound)),
                ("links", .int(Int(Self.hourMicroseconds / Self.linkEveryMicroseconds))),
                ("writes", .int(Int(Self.hourMicroseconds / Self.linkEveryMicroseconds) * Self.writesPerLink)),
                ("messages_logged", .int(budgeted.messages)),
                ("link_events_logged", .int(budgeted.linkEvents)),
                ("writes_refused", .int(budgeted.refused)),
                ("phone_calls_opened", .int(Int(budgeted.phoneCallsOpened))),
                ("staff_messages", .int(budgeted.staffMessages)),
                ("baseline_messages", .int(before.messages)),
                ("baseline_link_events", .int(before.linkEvents)),
                ("simulated", .string("one hour; a link every 100 ms from a new random address, 10 writes of 4 KiB on each")),
            ]))
        guard budgeted.bytes <= bound else {
            throw BenchError("\(Self.metric): \(budgeted.bytes) bytes is over the documented bound of \(bound)")
        }
    }
}
