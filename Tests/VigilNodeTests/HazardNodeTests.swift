import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

/// Issue 15: time acts on hazards on its own. A quiet box (no other reports) ends the hazard
/// warning after its few seconds and drops a road user 10 s after its last report, each with one
/// `HazardDeadline` at that moment; outputs follow at once; replay agrees.
@Suite(.serialized) struct HazardNodeTests {
    @Test func aWarningEndsAndARoadUserLeavesOnAQuietBox() async throws {
        let dir = TemporaryDirectory()
        var config = testConfiguration(dir, advertisers: 0)
        config.projections.hazardSite = HazardSite(latitude: 33.4351, longitude: -112.0108)
        let clock = ManualClock()
        let board = try SimulatedBoard(monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        let running = try NodeThread(node, name: "vigil-test-loop")
        await settled(running)

        // A car 250 ft south of the site, driving north at 25 mph (11.2 m/s).
        let car = HazardRequest(kind: "vehicle", id: "car-1", latitude: 33.4351 - 250 * 0.3048 / 111_195.08, longitude: -112.0108,
                                headingDegrees: 0, speedMetersPerSecond: 11.2)
        let reply = await running.perform(.reportHazard(car))
        #expect(reply?.sequence != nil)
        await advance(clock, running, byMicroseconds: 100_000, step: 50_000)
        #expect(await onLoop(running) { $0.patterns.decisions[.buzzer]?.pattern == OutputPolicy.hazardFlash }, "the warning beeps")
        #expect(await onLoop(running) { $0.patterns.decisions[.amber]?.pattern == OutputPolicy.hazardFlash }, "and flashes")
        #expect(await onLoop(running) { $0.projections.hazards.warning != nil })
        #expect(await onLoop(running) { $0.projections.hazards.hazards.count } == 1)

        // Five seconds on the warning ends by itself; ten, the car is gone.
        await advance(clock, running, byMicroseconds: 5_000_000, step: 100_000)
        #expect(await onLoop(running) { $0.projections.hazards.warning == nil })
        #expect(!(await issue10Level(running, .buzzer)), "the buzzer stops with the warning")
        await advance(clock, running, byMicroseconds: 5_000_000, step: 100_000)
        #expect(await onLoop(running) { $0.projections.hazards.hazards.isEmpty })
        #expect(await onLoop(running) { !$0.scheduler.isArmed(HazardClock.timer) })
        // A report that is refused says why.
        let bad = await running.perform(.reportHazard(HazardRequest(kind: "tank", id: "x", latitude: 0, longitude: 0)))
        #expect(bad?.refusal == .invalid && bad?.error?.contains("vehicle, pedestrian") == true)
        running.requestStop(reason: "test")
        let stopped = try await ended(running)
        let live = stopped.projections.hazards

        let events = try storedEvents(dir)
        let deadlines = events.compactMap { e -> HazardDeadline? in if case .hazardDeadline(let d) = e.body { d } else { nil } }
        #expect(deadlines.count == 2, "one for the warning's end, one for the car's expiry")
        var replayed = Projections(settings: config.projections)
        for e in events { replayed.apply(e) }
        #expect(replayed.hazards.hazards.isEmpty && replayed.hazards.warning == nil && replayed.hazards.warningsStarted == 1)
        #expect(replayed.hazards == live, "the site came from the log's NodeStarted, as the node took it")
        #expect(replayed.hazards.site?.latitude == 33.4351)
    }
}
