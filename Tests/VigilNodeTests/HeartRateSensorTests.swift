import Foundation
import Testing
import VigilCore
import VigilEvents
@testable import VigilNode
import VigilRadio

/// What the node decides about residents' heart-rate sensors without a radio: the setting as
/// the interpreter takes it, and which readings are logged. The links themselves are held on a
/// real kernel in the VM (Tests/vm/hr-sensor.sh).
@Suite struct HeartRateSensorTests {
    func state() -> Projections {
        var state = Projections()
        var resident = Resident()
        resident.id = "r1"
        resident.mode = .pulse
        resident.intervalUs = 600_000_000
        state.apply(.event(Event(sequence: 1, timeMicroseconds: 1_000, body: .residentEnrolled(resident))))
        return state
    }

    func update(_ state: Projections, _ change: (inout ResidentSettings) -> Void) -> CommandInterpreter.Outcome {
        var settings = ResidentSettings(id: "r1")
        change(&settings)
        return CommandInterpreter.offline(state: state, nowMicroseconds: 2_000).interpret(.updateResident(settings))
    }

    @Test func theSensorIsSetKeptThroughOtherChangesAndCleared() throws {
        var state = state()
        guard case .event(.residentUpdated(let withSensor), _) = update(state, { $0.heartRateSensor = "C3:11:22:33:44:55/random" }) else {
            Issue.record("a sensor was refused")
            return
        }
        #expect(withSensor.heartRateSensor == 0xC3_11_22_33_44_55 && withSensor.heartRateSensorType == .addressRandom)
        state.apply(.event(Event(sequence: 2, timeMicroseconds: 2_000, body: .residentUpdated(withSensor))))
        #expect(state.sensors.byResident["r1"]?.peer == 0xC3_11_22_33_44_55)

        guard case .event(.residentUpdated(let renamed), _) = update(state, { $0.name = "Ana" }) else {
            Issue.record("a rename was refused")
            return
        }
        #expect(renamed.heartRateSensor == 0xC3_11_22_33_44_55 && renamed.heartRateSensorType == .addressRandom, "unset settings keep the sensor")

        guard case .event(.residentUpdated(let cleared), _) = update(state, { $0.heartRateSensor = "" }) else {
            Issue.record("clearing was refused")
            return
        }
        #expect(cleared.heartRateSensor == 0)

        guard case .event(.residentUpdated(let publicOne), _) = update(state, { $0.heartRateSensor = "00:1b:dc:07:32:8e" }) else {
            Issue.record("a public address was refused")
            return
        }
        #expect(publicOne.heartRateSensor == 0x00_1B_DC_07_32_8E && publicOne.heartRateSensorType == .addressPublic)
        // A private random address changes: the box could neither find the strap again nor bond.
        guard case .refused(_, let why) = update(state, { $0.heartRateSensor = "43:11:22:33:44:55/random" }) else {
            Issue.record("a resolvable private address was taken as a sensor")
            return
        }
        #expect(why.contains("static"))
    }

    @Test func aSensorAnotherResidentHasIsRefused() {
        var state = state()
        guard case .event(.residentUpdated(let withSensor), _) = update(state, { $0.heartRateSensor = "C3:11:22:33:44:55/random" }) else {
            Issue.record("a sensor was refused")
            return
        }
        state.apply(.event(Event(sequence: 2, timeMicroseconds: 2_000, body: .residentUpdated(withSensor))))
        var second = ResidentSettings(id: "r2")
        second.heartRateSensor = "C3:11:22:33:44:55/random"
        guard case .refused(.conflict, let why) = CommandInterpreter.offline(state: state, nowMicroseconds: 3_000).interpret(.enrolResident(second)) else {
            Issue.record("a second resident was given r1's sensor")
            return
        }
        #expect(why.contains("r1's"))
        second.heartRateSensor = "C3:11:22:33:44:56/random"
        guard case .event(.residentEnrolled, _) = CommandInterpreter.offline(state: state, nowMicroseconds: 3_000).interpret(.enrolResident(second)) else {
            Issue.record("another sensor was refused")
            return
        }
    }

    @Test(arguments: ["C3:11:22:33:44", "not an address", "00:00:00:00:00:00", "C3:11:22:33:44:55/static"])
    func aSensorThatIsNotAnAddressIsRefused(_ text: String) {
        guard case .refused(.invalid, let why) = update(state(), { $0.heartRateSensor = text }) else {
            Issue.record("\(text) was accepted")
            return
        }
        #expect(why.contains("heart-rate sensor"))
    }

    /// A sensor notifies about once a second; the card hears from it once a minute while it says
    /// the same, and at once (but at most once a second) when it stops or starts saying "alive".
    @Test func readingsAreLoggedOnTheFirstOnAChangeAndOncePerInterval() {
        let second: UInt64 = 1_000_000_000
        let interval = 60 * second
        func logs(_ positive: Bool, at t: UInt64, after last: (UInt64, Bool)?) -> Bool {
            HeartRateSensors.logs(positive: positive, atNanoseconds: t, after: last.map { (nanoseconds: $0.0, positive: $0.1) }, intervalNanoseconds: interval)
        }
        #expect(logs(true, at: 5 * second, after: nil), "the first reading on a link")
        #expect(!logs(true, at: 30 * second, after: (5 * second, true)), "the same, within the interval")
        #expect(logs(true, at: 65 * second, after: (5 * second, true)), "the same, an interval on")
        #expect(logs(false, at: 7 * second, after: (5 * second, true)), "contact lost: at once")
        #expect(!logs(false, at: 5 * second + second / 2, after: (5 * second, true)), "a change within a second waits")
        #expect(logs(true, at: 9 * second, after: (7 * second, false)), "contact back")
        #expect(!logs(true, at: 4 * second, after: (5 * second, true)), "a clock that went back is not an interval")
    }

    /// The page shows staff the last reading; a pulse is health data, so the public view and the
    /// API without a token or session get only whether the sensor is linked.
    @Test func thePageShowsTheReadingToStaffAndOnlyTheLinkToThePublic() throws {
        var state = state()
        var withSensor = Resident()
        withSensor.id = "r1"
        withSensor.mode = .pulse
        withSensor.intervalUs = 600_000_000
        withSensor.heartRateSensor = 0xC3_11_22_33_44_55
        withSensor.heartRateSensorType = .addressRandom
        var link = LinkChanged()
        link.peer = 0xC3_11_22_33_44_55
        link.peerType = .addressRandom
        link.open = true
        link.role = .sensor
        link.resident = "r1"
        var reading = CheckIn()
        reading.resident = "r1"
        reading.source = .checkInHeartRate
        reading.value = 72
        reading.heartRateFlags = 0x06
        for (i, body) in [EventBody.residentUpdated(withSensor), .linkChanged(link), .checkIn(reading)].enumerated() {
            state.apply(.event(Event(sequence: UInt64(i + 2), timeMicroseconds: 5_000 + UInt64(i), body: body)))
        }
        let snapshot = NodeSnapshot(state: state, decisions: [:], live: nil, timeMicroseconds: 10_000)
        let sensor = try #require(snapshot.residents.first?.sensor)
        #expect(sensor.device == "C3:11:22:33:44:55/random" && sensor.linked)
        #expect(sensor.beatsPerMinute == 72 && sensor.contact == "contact" && sensor.counted == true)
        let shown = try #require(snapshot.forPublic().residents.first?.sensor)
        #expect(shown.linked && shown.beatsPerMinute == nil && shown.contact == nil && shown.counted == nil)
        #expect(shown.device == nil && shown.readingMicroseconds == nil)
    }

    @Test func theSettingsAreReadFromTheConfiguration() throws {
        let config = try NodeConfiguration.load(text: """
            connections:
              heart_rate_sensors: false
              max_sensors: 3
              heart_rate_every: 2s
            """, file: "test.yaml")
        #expect(!config.connections.heartRateSensors && config.connections.maximumSensors == 3)
        #expect(config.connections.heartRateLogIntervalMicroseconds == 2_000_000)
        #expect(NodeConfiguration().connections.heartRateSensors, "on by default: linking out serves nothing to peers")
        #expect(throws: ConfigurationError.self) { try NodeConfiguration.load(text: "connections:\n  max_sensors: 0\n", file: "t.yaml") }
        #expect(NodeConfiguration().connections.sensorBonds == .auto, "bonds where the kernel can take them")
        for (text, mode) in [("auto", SensorBondMode.auto), ("true", .on), ("on", .on), ("false", .off), ("no", .off)] {
            #expect(try NodeConfiguration.load(text: "connections:\n  sensor_bonds: \(text)\n", file: "t.yaml").connections.sensorBonds == mode)
        }
        #expect(throws: ConfigurationError.self) { try NodeConfiguration.load(text: "connections:\n  sensor_bonds: maybe\n", file: "t.yaml") }
    }

    @Test func keysOfSensorsNoLongerEnrolledAreDeletedOfflineSoAReEnrolmentPairsAfresh() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sensor-keys-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let kept = LEAddress(value: 0xC3_11_22_33_44_55, kind: .random), gone = LEAddress(value: 0x00_AA_01_01_00_01, kind: .public)
        let keys = [kept, gone].map { LongTermKey(peer: $0, keyType: 2, central: 0, encryptionSize: 16, encryptedDiversifier: 0, random: 0,
                                                  value: Array(repeating: 9, count: 16)) }
        #expect(try StoredSensorKeys.delete(notIn: [kept], dataDirectory: dir).isEmpty, "no file: nothing to do")
        try Data(SensorKeyFile.format(keys).utf8).write(to: URL(fileURLWithPath: StoredSensorKeys.path(in: dir)))
        #expect(try StoredSensorKeys.delete(notIn: [kept], dataDirectory: dir) == [gone])
        let left = SensorKeyFile.parse(try String(contentsOfFile: StoredSensorKeys.path(in: dir), encoding: .utf8))
        #expect(left.keys.map(\.peer) == [kept] && left.problems.isEmpty)
        #expect(try StoredSensorKeys.delete(notIn: [kept], dataDirectory: dir).isEmpty, "and only once")
        // A line that does not parse (hand-edited, CRLF) is kept as it was, never dropped silently.
        let path = StoredSensorKeys.path(in: dir)
        try (String(contentsOfFile: path, encoding: .utf8) + "C3:11:22:33:44:55/random 2 0 16 0 00 zz\r\n").write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try StoredSensorKeys.delete(notIn: [], dataDirectory: dir) == [kept])
        #expect(try String(contentsOfFile: path, encoding: .utf8).contains("00 zz\r"))
    }
}
