import Testing
import VigilCore
@testable import VigilNode

/// The pure decision of one attempt at the alarm centre: receivers in order, a NAK resent once.
struct AlarmCentreAttemptTests {
    @Test func anACKDeliversAtTheReceiverThatGaveIt() {
        var plan = AlarmCentreAttempt(receivers: ["a:1", "b:2"])
        #expect(plan.first == .connect(0))
        #expect(plan.record(.connectFailed("refused")) == .connect(1))
        #expect(plan.record(.acknowledged) == .delivered(1))
    }

    @Test func aNAKIsResentOnceThenTheNextReceiverIsTried() {
        var plan = AlarmCentreAttempt(receivers: ["a:1", "b:2"])
        #expect(plan.record(.negative) == .resend)
        #expect(plan.record(.negative) == .connect(1))
        #expect(plan.record(.negative) == .resend, "each receiver gets its own resend")
        guard case .failed(let why) = plan.record(.silent) else {
            Issue.record("the attempt should fail after the last receiver")
            return
        }
        #expect(why == "a:1: NAK; b:2: no reply")
    }

    @Test func noReceiversFailsAtOnce() {
        #expect(AlarmCentreAttempt(receivers: []).first == .failed("no receiver is configured"))
    }
}

/// The numbers the centre sees: DC-09 sequence numbers and Contact ID zones.
struct AlarmCentreNumberTests {
    @Test func reportsTakeSequenceNumbersInTurnBelowTheTests() {
        #expect(AlarmCentreLink.sequence(forReport: 1).value == 1)
        #expect(AlarmCentreLink.sequence(forReport: 4_999).value == 4_999)
        #expect(AlarmCentreLink.sequence(forReport: 5_000).value == 1)
    }

    @Test func callNumbersWrapIntoOneToNineHundredNinetyNine() {
        #expect(AlarmCentreLink.report(AlarmSignal(.sos, number: 1)).contactID().zone == 1)
        #expect(AlarmCentreLink.report(AlarmSignal(.sos, number: 999)).contactID().zone == 999)
        #expect(AlarmCentreLink.report(AlarmSignal(.sos, number: 1_000)).contactID().zone == 1)
        #expect(AlarmCentreLink.report(AlarmSignal(.radioLost)).contactID().zone == 0)
        #expect(AlarmCentreLink.report(AlarmSignal(.missedCheckIn, restore: true, number: 3)).contactID().description == "3102 01 003")
    }
}
