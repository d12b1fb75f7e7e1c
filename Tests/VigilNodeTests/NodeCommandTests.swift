import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilSystem
@testable import VigilNode

/// The one command model: typed values on the wire, judged in one place.
@Suite struct NodeCommandTests {
    static let commands: [NodeCommand] = [
        .ping, .status,
        .press(ButtonPress(holdMicroseconds: 2_500_000, bounces: 2, resident: "room-1")),
        .checkIn(CheckInRequest(resident: "room-12", heartRate: 64, heartRateFlags: 6)),
        .enrolResident({ var s = ResidentSettings(id: "room-12"); s.name = "Ana"; s.mode = .pulse
                         s.contacts = [.init(name: "Luis", address: "+34600000000")]; return s }()),
        .updateResident({ var s = ResidentSettings(id: "room-12"); s.clearNight = true; return s }()),
        .removeResident(ResidentReference(id: "room-12")),
        .silenceAlarms(SilenceRequest(by: "cli")),
        .raiseAlert(AlertRequest(kind: "flood", severity: "warning", lifetimeMicroseconds: 3_600_000_000, latitude: 52.5, longitude: 13.4)),
        .cancelAlert(AlertCancelRequest(id: "1a2b:3", reason: "over")),
        .acknowledgeAlert(AlertReference(id: "1a2b:4")),
        .recordKeysPublished(KeysPublishedRecord(keys: 14, firstInterval: 1, lastInterval: 2, path: "/tmp/x")),
        .reportHazard(HazardRequest(kind: "work-zone", id: "z1", latitude: 33.4351, longitude: -112.0108, lifetimeMicroseconds: 7_200_000_000)),
    ]

    @Test(arguments: commands.indices)
    func everyCommandRoundTripsThroughItsJSON(_ index: Int) throws {
        let command = Self.commands[index]
        let json = try JSONEncoder().encode(command)
        #expect(try JSONDecoder().decode(NodeCommand.self, from: json) == command)
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(object["command"] as? String == command.name)
    }

    @Test func anUnknownCommandOrMissingArgumentsIsADecodingError() {
        for text in [#"{"command":"format-disk"}"#, #"{"command":"check-in"}"#, #"{"arguments":{}}"#, "status", "{}"] {
            #expect(throws: (any Error).self, "\(text)") { try JSONDecoder().decode(NodeCommand.self, from: Data(text.utf8)) }
        }
    }

    /// The same interpreter judges commands for a stopped node (the CLI appends itself then).
    @Test func theInterpreterRefusesWithAReasonAndBuildsTheEventOtherwise() {
        var state = Projections()
        var resident = Resident()
        resident.id = "room-12"
        resident.mode = .time
        resident.intervalUs = 3_600_000_000
        state.apply(.event(Event(sequence: 1, timeMicroseconds: 1_000, body: .residentEnrolled(resident))))
        let interpreter = CommandInterpreter.offline(state: state, nowMicroseconds: 2_000)

        guard case .refused(.conflict, let exists) = interpreter.interpret(.enrolResident(ResidentSettings(id: "room-12"))) else {
            Issue.record("enrolling twice was accepted")
            return
        }
        #expect(exists.contains("exists"))
        guard case .refused(.invalid, _) = interpreter.interpret(.enrolResident(ResidentSettings(id: "has space"))) else {
            Issue.record("a bad id was accepted")
            return
        }
        guard case .refused(.conflict, _) = interpreter.interpret(.removeResident(ResidentReference(id: "nobody"))) else {
            Issue.record("removing nobody was accepted")
            return
        }
        var change = ResidentSettings(id: "room-12")
        change.intervalMicroseconds = 7_200_000_000
        guard case .event(.residentUpdated(let updated), _) = interpreter.interpret(.updateResident(change)) else {
            Issue.record("a valid update was refused")
            return
        }
        #expect(updated.intervalUs == 7_200_000_000 && updated.mode == .time, "unset settings keep their value")
        guard case .refused(.unavailable, let why) = interpreter.interpret(.raiseAlert(AlertRequest(kind: "fire", lifetimeMicroseconds: 60_000_000))) else {
            Issue.record("an alert was accepted for a stopped node")
            return
        }
        #expect(why.contains("not running"))
        // A running node without a shelter key: a call for help goes to the call tree (issue 27);
        // a warning, which exists to go on the air, is refused.
        let keyless = CommandInterpreter(context: .init(projections: state, pending: PendingEvents(), nodeID: 0xAB, nowMicroseconds: 2_000,
                                                        hasShelterKey: false, maxAlertLifetimeMicroseconds: 3_600_000_000))
        guard case .event(.alertRaised(let sos), _) = keyless.interpret(.raiseAlert(AlertRequest(kind: "sos", lifetimeMicroseconds: 60_000_000))) else {
            Issue.record("an SOS was refused without a radio")
            return
        }
        #expect(sos.kind == .sos && sos.id == AlertID(origin: 0xAB, counter: 1))
        guard case .refused(.unavailable, let noKey) = keyless.interpret(.raiseAlert(AlertRequest(kind: "fire", lifetimeMicroseconds: 60_000_000))) else {
            Issue.record("a warning was accepted without a radio")
            return
        }
        #expect(noKey.contains("shelter key"))
        guard case .event(.checkIn(let c), _) = interpreter.interpret(.checkIn(CheckInRequest(resident: "room-12", heartRate: 70, heartRateFlags: 0x1FF))) else {
            Issue.record("a check-in was refused")
            return
        }
        #expect(c.source == .checkInHeartRate && c.heartRateFlags == 0xFF)
    }

    /// The CLI tells "no node" from "a node that took the request and did not answer" (a loop
    /// busy or stuck): `vigil status` says the second is running, not that it is not.
    @Test func aClientTellsNoNodeFromANodeThatTookTheRequestButNeverAnswered() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("control-silent-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(throws: ControlClientError.self) { try ControlClient.send(.status, dataDirectory: dir, timeoutMilliseconds: 100) }
        do {
            _ = try ControlClient.send(.status, dataDirectory: dir, timeoutMilliseconds: 100)
        } catch .unreachable {
        } catch {
            Issue.record("no socket: \(error), not unreachable")
        }
        // A listener that never accepts: the kernel queues the connection and the request, and
        // no answer comes (the timeout is the client's own SO_RCVTIMEO, 100 ms here).
        let listener = try UnixSocket.listen(path: dir + "/control.sock")
        do {
            _ = try ControlClient.send(.status, dataDirectory: dir, timeoutMilliseconds: 100)
            Issue.record("a silent node answered")
        } catch .noAnswer(let ms) {
            #expect(ms == 100)
        } catch {
            Issue.record("silent node: \(error), not noAnswer")
        }
        _ = listener
    }
}
