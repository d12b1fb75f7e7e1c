import Foundation
import Testing
import VigilBoard
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

@Suite struct CheckInButtonTests {
    @Test func aPressOfAResidentsButtonIsTheirCheckInAndGivesNoSOSFeedback() async throws {
        let dir = TemporaryDirectory()
        var config = testConfiguration(dir, advertisers: 1)
        config.gestures.longPressNanoseconds = 300_000_000
        var profile = BoardProfile.simulated
        profile.checkInButtons = ["room-3": BoardProfile.Line(offset: 6, activeLow: true)]
        config.board = profile
        let clock = ManualClock()
        let board = try SimulatedBoard(profile: profile, monotonic: clock)
        let node = try Node(configuration: config, clock: clock, monotonic: clock, logger: quietLogger, board: board)
        node.onLoop { n in
            let sim = n.board as? SimulatedBoard
            try? sim?.press(holdMicroseconds: 150_000, bounces: 2, line: 6)     // a check-in
            try? sim?.press(holdMicroseconds: 10_000, afterMicroseconds: 400_000, line: 6) // a glitch: nothing
        }
        let stopped = try await run(node, on: clock, forMicroseconds: 900_000, step: 10_000)
        let stoppedBoard = try #require(stopped.board as? SimulatedBoard)

        let events = try storedEvents(dir)
        let checkIns = events.compactMap { e -> CheckIn? in if case .checkIn(let c) = e.body { c } else { nil } }
        #expect(checkIns.count == 1)
        #expect(checkIns.first?.resident == "room-3")
        #expect(checkIns.first?.source == .checkInButton)
        let edges = events.compactMap { e -> ButtonInput? in if case .buttonInput(let b) = e.body { b } else { nil } }
        #expect(!edges.isEmpty && edges.allSatisfy { $0.role == "checkin:room-3" && $0.line == 6 })
        // A check-in button is not the SOS button: no SOS, no held-button feedback.
        #expect(!events.contains { if case .alertRaised = $0.body { true } else { false } })
        #expect(stopped.projections.alarms.buttonEdgeSequence == 0, "no SOS-button edge was recorded")
        #expect(!stoppedBoard.transitions.contains { $0.line == .red })
    }

    @Test func boardProfilesReadCheckInButtons() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let file = dir.path + "/board.yaml"
        try """
        name: test
        chip: vigil-sim
        button: {line: 0, active_low: true}
        outputs:
          red: {line: 1}
        checkin_buttons:
          room-7: {line: 6, active_low: true}
          room-8: {line: 7}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let profile = try NodeConfiguration.loadBoard(named: file)
        #expect(profile.checkInButtons["room-7"] == BoardProfile.Line(offset: 6, activeLow: true))
        #expect(profile.checkInButtons["room-8"] == BoardProfile.Line(offset: 7, activeLow: false))
        #expect(profile.checkInResident(line: 7) == "room-8")

        try "name: t\nchip: c\nbutton: {line: 0}\ncheckin_buttons:\n  room-7: {lin: 6}\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect { _ = try NodeConfiguration.loadBoard(named: file) } throws: { error in
            "\(error)".contains("board.yaml:5") && "\(error)".contains("checkin_buttons.room-7")
        }
    }
}
