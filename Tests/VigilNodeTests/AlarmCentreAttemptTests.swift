import Testing
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
