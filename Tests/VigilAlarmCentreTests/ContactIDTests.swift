import Testing
@testable import VigilAlarmCentre

@Suite struct ContactIDTests {
    @Test func eventIsWrittenAsQualifierCodePartitionZone() throws {
        let event = try ContactIDEvent(.newEvent, code: 120, partition: 1, zone: 5)
        #expect(event.description == "1120 01 005")
        #expect(String(decoding: event.data(account: "1234"), as: UTF8.self) == "#1234|1120 01 005")
        #expect(try ContactIDEvent(.status, code: 0, partition: 99, zone: 999).description == "6000 99 999")
    }

    @Test func fieldsOutsideTheirDigitsAreRefused() {
        #expect(throws: DC09EncodeError.eventCodeOutOfRange(1000)) { try ContactIDEvent(.newEvent, code: 1000, partition: 1, zone: 0) }
        #expect(throws: DC09EncodeError.eventCodeOutOfRange(-1)) { try ContactIDEvent(.newEvent, code: -1, partition: 1, zone: 0) }
        #expect(throws: DC09EncodeError.partitionOutOfRange(100)) { try ContactIDEvent(.restore, code: 120, partition: 100, zone: 0) }
        #expect(throws: DC09EncodeError.zoneOutOfRange(1000)) { try ContactIDEvent(.restore, code: 120, partition: 1, zone: 1000) }
    }

    @Test("each report is sent with the code of Vigil's table", arguments: [
        (AlarmReport.raised(.sos(call: 12)), "1120 01 012"),
        (.cleared(.sos(call: 12)), "3120 01 012"),
        (.raised(.medical(resident: 7)), "1100 01 007"),
        (.cleared(.medical(resident: 7)), "3100 01 007"),
        (.raised(.missedCheckIn(resident: 345)), "1102 01 345"),
        (.cleared(.missedCheckIn(resident: 345)), "3102 01 345"),
        (.raised(.eventLogDamaged), "1304 01 000"),
        (.cleared(.eventLogDamaged), "3304 01 000"),
        (.raised(.runningFromMemory), "1300 01 000"),
        (.cleared(.runningFromMemory), "3300 01 000"),
        (.raised(.radioLost), "1330 01 000"),
        (.cleared(.radioLost), "3330 01 000"),
        (.periodicTest, "1602 01 000"),
    ])
    func reportsUseTheirCodes(report: AlarmReport, expected: String) {
        #expect(report.contactID().description == expected)
    }

    @Test func numbersBeyondThreeDigitsWrapSoEveryReportEncodes() {
        #expect(AlarmReport.raised(.sos(call: 1_005)).contactID().zone == 5)
        #expect(AlarmReport.raised(.sos(call: -1)).contactID().zone == 999)
        #expect(AlarmReport.raised(.medical(resident: .min)).contactID().zone < 1000)
        #expect(AlarmReport.periodicTest.contactID(partition: 105).partition == 5)
        #expect(AlarmReport.raised(.sos(call: .max)).contactID(partition: .min).description.count == 11)
    }
}
