import Testing
import VigilSystem

/// The debug-build check that loop-owned state is only touched on the loop thread.
@Suite struct ThreadOwnerTests {
    @Test func onlyTheClaimingThreadMayTouchWhileClaimed() throws {
        let owner = ThreadOwner()
        #expect(owner.callerMayTouch, "nobody owns it yet")
        let seenFromLoop = LockedValue<Bool?>(nil)
        let thread = try OSThread(name: "test-loop") {
            owner.claim()
            seenFromLoop.withLock { $0 = owner.callerMayTouch }
        }
        thread.join()
        #expect(seenFromLoop.withLock { $0 } == true, "the owner may")
        #expect(!owner.callerMayTouch, "another thread may not while the loop owns it")
        owner.release()
        #expect(owner.callerMayTouch, "after the loop stopped, anyone may read")
    }
}
