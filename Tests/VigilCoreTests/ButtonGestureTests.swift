import Testing
import VigilCore

private typealias Gesture = ButtonGestureDecoder.Gesture

/// A kernel CLOCK_MONOTONIC timestamp about 85 minutes after boot, where the recordings start.
private let t0: UInt64 = 5_104_238_771_000
private let ms: UInt64 = 1_000_000
private let us: UInt64 = 1_000

/// An edge as gpiomon reports it: the line's level (pressed = falling edge on an active-low
/// button) and its kernel timestamp.
private struct RecordedEdge: CustomStringConvertible {
    var at: UInt64
    var pressed: Bool
    var description: String { "\(pressed ? "falling" : "rising ")@\(Double(at - t0) / 1e6) ms" }
}

/// A recording: edges written as (microseconds after t0, pressed).
private func recording(_ edges: [(UInt64, Bool)]) -> [RecordedEdge] {
    edges.map { RecordedEdge(at: t0 + $0.0 * us, pressed: $0.1) }
}

/// What came out, and when it came out (the edge's timestamp or the tick's time).
private struct Emitted: Equatable, CustomStringConvertible {
    var at: UInt64
    var gesture: Gesture
    var description: String { "\(gesture) emitted @\(Double(at - t0) / 1e6) ms" }
}

/// The node's loop in miniature: edges arrive in order; before each one, and after the last
/// one up to `end`, the decoder is ticked whenever its `nextTick` has come (the loop's timer).
private func play(_ edges: [RecordedEdge], until end: UInt64,
                  settings: ButtonGestureDecoder.Settings = .init()) -> (emitted: [Emitted], decoder: ButtonGestureDecoder) {
    var d = ButtonGestureDecoder(settings: settings)
    var out: [Emitted] = []
    func ticks(before limit: UInt64, inclusive: Bool) {
        var guardCount = 0
        while let next = d.nextTick, inclusive ? next <= limit : next < limit {
            out += d.tick(atNanoseconds: next).map { Emitted(at: next, gesture: $0) }
            guardCount += 1
            if guardCount > 8 {
                Issue.record("nextTick does not advance past \(next)")
                return
            }
        }
    }
    for e in edges {
        ticks(before: e.at, inclusive: false)
        out += d.edge(pressed: e.pressed, atNanoseconds: e.at).map { Emitted(at: e.at, gesture: $0) }
    }
    ticks(before: end, inclusive: true)
    return (out, d)
}

/// A press as recorded on the box's arcade button: contact chatter for 7.9 ms, four bounces.
private let pressWithFourBounces: [(UInt64, Bool)] = [
    (0, true), (600, false), (1_900, true), (3_100, false), (4_400, true), (5_800, false), (6_500, true), (7_200, false), (7_900, true),
]

/// A release recorded `at` µs after t0: three bounces over 5.1 ms.
private func releaseWithBounces(at start: UInt64) -> [(UInt64, Bool)] {
    [(start, false), (start + 1_200, true), (start + 2_000, false), (start + 4_500, true), (start + 5_100, false)]
}

@Suite("Button gestures from recorded edges")
struct ButtonGestureTests {
    @Test func aPressWithFourBouncesIsOnePress() {
        let edges = recording(pressWithFourBounces)
        #expect(edges.count == 9)
        #expect(edges.last!.at - edges.first!.at == 7_900 * us)
        let (emitted, d) = play(edges, until: t0 + 500 * ms)
        #expect(emitted == [Emitted(at: t0, gesture: .pressed(atNanoseconds: t0))]) // taken at the first edge, no delay
        #expect(d.pressed)
        // Nothing pending from the bounces: the next thing the decoder waits for is the long press.
        #expect(d.nextTick == t0 + 2_000 * ms)
    }

    @Test func aReleaseWithBouncesIsOneRelease() {
        let edges = recording(pressWithFourBounces + releaseWithBounces(at: 800_000))
        let (emitted, d) = play(edges, until: t0 + 3_000 * ms)
        #expect(emitted == [
            Emitted(at: t0, gesture: .pressed(atNanoseconds: t0)),
            Emitted(at: t0 + 800 * ms, gesture: .shortPress(heldNanoseconds: 800 * ms)),
        ])
        #expect(!d.pressed)
        #expect(d.nextTick == nil)
    }

    @Test func aPressOfOneAndAHalfSecondsIsAShortPress() {
        let edges = recording(pressWithFourBounces + releaseWithBounces(at: 1_500_000))
        let (emitted, _) = play(edges, until: t0 + 5_000 * ms)
        #expect(emitted.map(\.gesture) == [.pressed(atNanoseconds: t0), .shortPress(heldNanoseconds: 1_500 * ms)])
        #expect(emitted.last?.at == t0 + 1_500 * ms)
    }

    @Test func aPressOfTwoAndAHalfSecondsFiresTheLongPressWhileHeld() {
        let press = recording(pressWithFourBounces)
        var (emitted, d) = play(press, until: t0 + 1_999 * ms)
        #expect(emitted.map(\.gesture) == [.pressed(atNanoseconds: t0)])
        // The loop's timer fires at nextTick: the long press, with the button still down.
        let tick = d.nextTick
        #expect(tick == t0 + 2_000 * ms)
        #expect(d.tick(atNanoseconds: t0 + 2_000 * ms - 1) == [])
        #expect(d.tick(atNanoseconds: t0 + 2_000 * ms) == [.longPress(atNanoseconds: t0 + 2_000 * ms)])
        #expect(d.pressed)
        // Fired once; the next threshold is the cancel hold at 8 s (issue 10), nothing before it.
        #expect(d.nextTick == t0 + 8_000 * ms)
        #expect(d.tick(atNanoseconds: t0 + 2_200 * ms) == [])

        // Then released at 2.5 s, with bounces.
        var after: [Gesture] = []
        for e in recording(releaseWithBounces(at: 2_500_000)) { after += d.edge(pressed: e.pressed, atNanoseconds: e.at) }
        #expect(after == [.released(heldNanoseconds: 2_500 * ms)])
        #expect(!d.pressed)

        // The same through the loop in one go.
        (emitted, _) = play(recording(pressWithFourBounces + releaseWithBounces(at: 2_500_000)), until: t0 + 5_000 * ms)
        #expect(emitted == [
            Emitted(at: t0, gesture: .pressed(atNanoseconds: t0)),
            Emitted(at: t0 + 2_000 * ms, gesture: .longPress(atNanoseconds: t0 + 2_000 * ms)),
            Emitted(at: t0 + 2_500 * ms, gesture: .released(heldNanoseconds: 2_500 * ms)),
        ])
    }

    @Test func aReleaseAfterTheThresholdIsALongPressEvenIfTheTickCameLate() {
        // The loop's timer and the release can arrive in one epoll batch, or the loop can be busy;
        // the edges carry their kernel timestamps, so the gesture must not depend on it.
        var d = ButtonGestureDecoder()
        #expect(d.edge(pressed: true, atNanoseconds: t0) == [.pressed(atNanoseconds: t0)])
        let release = d.edge(pressed: false, atNanoseconds: t0 + 2_500 * ms)
        #expect(release == [.longPress(atNanoseconds: t0 + 2_000 * ms), .released(heldNanoseconds: 2_500 * ms)])
        #expect(!d.pressed)
        #expect(d.nextTick == nil)
    }

    /// Every recording in this suite, decoded once with the loop ticking on time and once with no
    /// tick at all until the end: the same gestures, in the same order.
    @Test func theGesturesDoNotDependOnWhenTheLoopTicks() {
        let recordings: [[(UInt64, Bool)]] = [
            pressWithFourBounces,
            pressWithFourBounces + releaseWithBounces(at: 800_000),
            pressWithFourBounces + releaseWithBounces(at: 1_500_000),
            pressWithFourBounces + releaseWithBounces(at: 2_500_000),
            [(0, true), (1_300, false), (2_100, true), (5_000, false)],
            [(0, true), (5_000, false), (500_000, true), (3_000_000, false)],
            [(0, true), (700, false), (1_500, true), (45_000, false), (46_100, true), (48_900, false),
             (100_000, true), (100_400, false), (102_000, true), (160_000, false), (163_500, true), (164_000, false)],
        ]
        for (i, r) in recordings.enumerated() {
            let edges = recording(r)
            let end = t0 + 10_000 * ms
            let onTime = play(edges, until: end).emitted.map(\.gesture)
            var lazy = ButtonGestureDecoder()
            var late: [Gesture] = []
            for e in edges { late += lazy.edge(pressed: e.pressed, atNanoseconds: e.at) }
            late += lazy.tick(atNanoseconds: end)
            #expect(late == onTime, "recording \(i)")
            #expect(!onTime.isEmpty, "recording \(i)")
        }
    }

    @Test func aFiveMillisecondGlitchIsNotAPress() {
        // Leading-edge debounce: the falling edge is taken at once; the rising edge 5 ms later is
        // inside the window, so it is taken when the window ends, 30 ms after the first edge.
        // Held under the 50 ms minimum, it is a glitch: noise must not acknowledge an alarm.
        let edges = recording([(0, true), (1_300, false), (2_100, true), (5_000, false)])
        let (emitted, d) = play(edges, until: t0 + 3_000 * ms)
        #expect(emitted == [
            Emitted(at: t0, gesture: .pressed(atNanoseconds: t0)),
            Emitted(at: t0 + 30 * ms, gesture: .glitch(heldNanoseconds: 30 * ms)),
        ])
        #expect(!d.pressed)
        #expect(d.nextTick == nil)
        #expect(!emitted.contains { if case .longPress = $0.gesture { true } else { false } })
    }

    @Test func twoPressesAHundredMillisecondsApartAreTwoPresses() {
        let edges = recording([
            (0, true), (700, false), (1_500, true), // press 1, one bounce
            (55_000, false), (56_100, true), (58_900, false), // release 1, bounced
            (100_000, true), (100_400, false), (102_000, true), // press 2
            (160_000, false), (163_500, true), (164_000, false), // release 2
        ])
        let (emitted, d) = play(edges, until: t0 + 4_000 * ms)
        #expect(emitted == [
            Emitted(at: t0, gesture: .pressed(atNanoseconds: t0)),
            Emitted(at: t0 + 55 * ms, gesture: .shortPress(heldNanoseconds: 55 * ms)),
            Emitted(at: t0 + 100 * ms, gesture: .pressed(atNanoseconds: t0 + 100 * ms)),
            Emitted(at: t0 + 160 * ms, gesture: .shortPress(heldNanoseconds: 60 * ms)),
        ])
        #expect(!d.pressed)
    }

    @Test func anEdgeExactlyAtTheEndOfTheWindowIsTakenAtOnce() {
        var d = ButtonGestureDecoder()
        _ = d.edge(pressed: true, atNanoseconds: t0)
        #expect(d.edge(pressed: false, atNanoseconds: t0 + 30 * ms) == [.glitch(heldNanoseconds: 30 * ms)])
        // And the next window starts there: an edge at its last nanosecond is bounce...
        #expect(d.edge(pressed: true, atNanoseconds: t0 + 60 * ms - 1) == [])
        #expect(d.nextTick == t0 + 60 * ms)
        // ...taken when the window ends.
        #expect(d.tick(atNanoseconds: t0 + 60 * ms - 1) == [])
        #expect(d.tick(atNanoseconds: t0 + 60 * ms) == [.pressed(atNanoseconds: t0 + 60 * ms)])
        #expect(d.nextTick == t0 + 60 * ms + 2_000 * ms)
    }

    @Test func anEdgeOneNanosecondInsideTheWindowWaitsForItsEnd() {
        var d = ButtonGestureDecoder()
        _ = d.edge(pressed: true, atNanoseconds: t0)
        #expect(d.edge(pressed: false, atNanoseconds: t0 + 30 * ms - 1) == [])
        #expect(d.pressed)
        #expect(d.nextTick == t0 + 30 * ms)
        #expect(d.tick(atNanoseconds: t0 + 30 * ms) == [.glitch(heldNanoseconds: 30 * ms)])
        #expect(d.nextTick == nil)
    }

    @Test func aPendingChangeIsDecidedAtTheBoundaryBeforeAnEdgeOfTheSameNanosecond() {
        var d = ButtonGestureDecoder()
        _ = d.edge(pressed: true, atNanoseconds: t0)
        #expect(d.edge(pressed: false, atNanoseconds: t0 + 10 * ms) == [])
        #expect(d.nextTick == t0 + 30 * ms) // a change is pending
        // The contact closes again exactly as the window ends. The release lasted until the end
        // of the window, so it is taken there (like the 5 ms glitch); the closing edge then falls
        // in the new window and is taken when that one ends.
        #expect(d.edge(pressed: true, atNanoseconds: t0 + 30 * ms) == [.glitch(heldNanoseconds: 30 * ms)])
        #expect(d.nextTick == t0 + 60 * ms)
        #expect(d.tick(atNanoseconds: t0 + 60 * ms) == [.pressed(atNanoseconds: t0 + 60 * ms)])
        #expect(d.pressed)
    }

    @Test func bouncesThatSettleBackInsideTheWindowChangeNothing() {
        var d = ButtonGestureDecoder()
        _ = d.edge(pressed: true, atNanoseconds: t0)
        #expect(d.edge(pressed: false, atNanoseconds: t0 + 10 * ms) == [])
        #expect(d.edge(pressed: true, atNanoseconds: t0 + 30 * ms - 1) == [])
        #expect(d.nextTick == t0 + 2_000 * ms) // nothing pending any more
        #expect(d.tick(atNanoseconds: t0 + 30 * ms) == [])
        #expect(d.pressed)
    }

    @Test func theLongPressThresholdIsInclusive() {
        var d = ButtonGestureDecoder()
        _ = d.edge(pressed: true, atNanoseconds: t0)
        #expect(d.tick(atNanoseconds: t0 + 2_000 * ms - 1) == [])
        #expect(d.tick(atNanoseconds: t0 + 2_000 * ms) == [.longPress(atNanoseconds: t0 + 2_000 * ms)])
        #expect(d.edge(pressed: false, atNanoseconds: t0 + 2_000 * ms) == [.released(heldNanoseconds: 2_000 * ms)])
    }

    @Test func settingsAreHonoured() {
        var settings = ButtonGestureDecoder.Settings()
        settings.debounceNanoseconds = 5 * ms
        settings.longPressNanoseconds = 800 * ms
        settings.minimumPressNanoseconds = 5 * ms
        let edges = recording([(0, true), (2_000, false), (3_000, true), // bounces inside 5 ms
                               (6_000, false), (7_000, true), // a real short release after the window
                               (900_000, false)])
        let (emitted, _) = play(edges, until: t0 + 2_000 * ms, settings: settings)
        #expect(emitted == [
            Emitted(at: t0, gesture: .pressed(atNanoseconds: t0)),
            Emitted(at: t0 + 6 * ms, gesture: .shortPress(heldNanoseconds: 6 * ms)),
            // 7 ms is inside the window that began at 6 ms: taken at its end, 11 ms.
            Emitted(at: t0 + 11 * ms, gesture: .pressed(atNanoseconds: t0 + 11 * ms)),
            Emitted(at: t0 + 811 * ms, gesture: .longPress(atNanoseconds: t0 + 811 * ms)),
            Emitted(at: t0 + 900 * ms, gesture: .released(heldNanoseconds: 889 * ms)),
        ])
    }
}

extension ButtonGestureTests {
    @Test func aPressHeldForTheMinimumIsAShortPressAndOneJustBelowIsAGlitch() {
        var d = ButtonGestureDecoder()
        _ = d.edge(pressed: true, atNanoseconds: t0)
        #expect(d.edge(pressed: false, atNanoseconds: t0 + 50 * ms) == [.shortPress(heldNanoseconds: 50 * ms)])
        _ = d.edge(pressed: true, atNanoseconds: t0 + 100 * ms)
        #expect(d.edge(pressed: false, atNanoseconds: t0 + 150 * ms - 1) == [.glitch(heldNanoseconds: 50 * ms - 1)])
    }

    // MARK: The cancel hold (issue 10)

    /// Fails before issue 10: a press held on past the long press fired nothing more.
    @Test func aPressHeldForEightAndAHalfSecondsFiresTheCancelHoldWhileHeld() {
        let (emitted, d) = play(recording(pressWithFourBounces + releaseWithBounces(at: 8_500_000)), until: t0 + 10_000 * ms)
        #expect(emitted == [
            Emitted(at: t0, gesture: .pressed(atNanoseconds: t0)),
            Emitted(at: t0 + 2_000 * ms, gesture: .longPress(atNanoseconds: t0 + 2_000 * ms)),
            Emitted(at: t0 + 8_000 * ms, gesture: .cancelHold(atNanoseconds: t0 + 8_000 * ms)),
            Emitted(at: t0 + 8_500 * ms, gesture: .released(heldNanoseconds: 8_500 * ms)),
        ])
        #expect(d.nextTick == nil)
    }

    @Test func aReleaseBeforeTheCancelHoldIsOnlyALongPress() {
        let (emitted, _) = play(recording(pressWithFourBounces + releaseWithBounces(at: 7_999_000)), until: t0 + 10_000 * ms)
        #expect(!emitted.contains { if case .cancelHold = $0.gesture { true } else { false } })
        #expect(emitted.last?.gesture == .released(heldNanoseconds: 7_999 * ms))
    }

    @Test func theCancelHoldComesOncePerPressAndCanBeTurnedOff() {
        var d = ButtonGestureDecoder()
        _ = d.edge(pressed: true, atNanoseconds: t0)
        #expect(d.tick(atNanoseconds: t0 + 20_000 * ms) == [
            .longPress(atNanoseconds: t0 + 2_000 * ms), .cancelHold(atNanoseconds: t0 + 8_000 * ms),
        ], "a late tick gives both, in order")
        #expect(d.tick(atNanoseconds: t0 + 30_000 * ms) == [])
        var settings = ButtonGestureDecoder.Settings()
        settings.cancelHoldNanoseconds = 0
        let (emitted, _) = play(recording([(0, true), (20_000_000, false)]), until: t0 + 21_000 * ms, settings: settings)
        #expect(emitted.map(\.gesture) == [.pressed(atNanoseconds: t0), .longPress(atNanoseconds: t0 + 2_000 * ms),
                                          .released(heldNanoseconds: 20_000 * ms)])
    }
}
