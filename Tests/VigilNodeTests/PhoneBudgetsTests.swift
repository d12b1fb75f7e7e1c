import Testing
@testable import VigilNode

/// Issue 28: what phones may cost the box holds across reconnects and address rotation, and a
/// flood of other messages leaves phones' calls for help a reserve.
struct PhoneBudgetsTests {
    static let second: UInt64 = 1_000_000_000

    static func budgets() -> PhoneBudgets {
        var settings = ConnectionSettings()
        settings.messageBurst = 10
        settings.messageIntervalMicroseconds = 500_000
        return PhoneBudgets(PhoneBudgets.Limits(settings), nowNanoseconds: 0)
    }

    @Test func anAddressKeepsItsRateAcrossReconnects() {
        var b = Self.budgets()
        // Ten at once, as before; the link closing and opening again (same address) gives nothing.
        for _ in 0..<10 { #expect(b.message(from: 1, asksForHelp: false, nowNanoseconds: 0) == .taken) }
        #expect(b.message(from: 1, asksForHelp: false, nowNanoseconds: 0) == .phoneOverRate)
        #expect(b.message(from: 1, asksForHelp: false, nowNanoseconds: Self.second / 2) == .taken, "one per interval")
    }

    @Test func rotatingAddressesMeetTheBoxsBudgetNotTheirOwn() {
        var b = Self.budgets()
        var taken = 0
        for n in 0..<1_000 where b.message(from: UInt64(n), asksForHelp: false, nowNanoseconds: 0) == .taken { taken += 1 }
        #expect(taken == 60)
        #expect(b.message(from: 5_000, asksForHelp: false, nowNanoseconds: 0) == .boxBusy, "not this phone's fault: no strike")
        #expect(b.message(from: 5_001, asksForHelp: false, nowNanoseconds: 20 * Self.second) == .taken, "one every 20 s")
        #expect(b.rememberedCount == 256)
    }

    @Test func aFloodOfOtherMessagesLeavesPhonesCallsForHelpTheirReserve() {
        var b = Self.budgets()
        for n in 0..<1_000 { _ = b.message(from: UInt64(n), asksForHelp: false, nowNanoseconds: 0) }
        #expect(b.message(from: 9_999, asksForHelp: false, nowNanoseconds: 0) == .boxBusy)
        for n in 0..<10 { #expect(b.message(from: 10_000 + UInt64(n), asksForHelp: true, nowNanoseconds: 0) == .taken) }
        #expect(b.message(from: 20_000, asksForHelp: true, nowNanoseconds: 0) == .boxBusy, "the reserve is bounded too")
        // A minute on: the shared budget's refill (3) spent by others again, the reserve's own one is there.
        let minute = 60 * Self.second
        for n in 0..<3 { _ = b.message(from: 30_000 + UInt64(n), asksForHelp: false, nowNanoseconds: minute) }
        #expect(b.message(from: 30_010, asksForHelp: false, nowNanoseconds: minute) == .boxBusy)
        #expect(b.message(from: 30_011, asksForHelp: true, nowNanoseconds: minute) == .taken, "one a minute for calls for help")
    }

    @Test func linkEventsAreShedOverTheirBudget() {
        var b = Self.budgets()
        var logged = 0
        for _ in 0..<100 where b.linkEvent(nowNanoseconds: 0) { logged += 1 }
        #expect(logged == 32)
        let refilled = b.linkEvent(nowNanoseconds: 30 * Self.second)
        let again = b.linkEvent(nowNanoseconds: 30 * Self.second)
        #expect(refilled && !again, "one every 30 s")
    }
}
