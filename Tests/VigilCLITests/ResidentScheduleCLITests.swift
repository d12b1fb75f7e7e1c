import Foundation
import Testing

/// Issue 10, item 8 (and 3, 4): `vigil resident add|set` take the resident's own address, room,
/// weekly pauses and time zone. Fails on the old CLI: the options did not exist.
@Suite(.serialized) struct ResidentScheduleCLITests {
    @Test func addressRoomWeeklyPausesAndTimeZoneAreSetAndCleared() throws {
        let dir = TemporaryDirectory()
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "200ms"]).status == 0)
        let add = try CLI.run(["resident", "add", "room-12", "--address", "+34600000222", "--room", "12B",
                               "--weekly", "Mon-Fri 09:00-12:00", "--weekly", "Sat,Sun 22:00-02:00",
                               "--time-zone", "Europe/Madrid", "--data", dir.path])
        #expect(add.status == 0, "\(add.stderr)")

        func resident() throws -> [String: Any] {
            let list = try CLI.run(["resident", "list", "--json", "--data", dir.path])
            let residents = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
            return try #require(residents.first)
        }
        var r = try resident()
        #expect(r["ownAddress"] as? String == "+34600000222")
        #expect(r["room"] as? String == "12B")
        #expect(r["timeZone"] as? String == "Europe/Madrid")
        let weekly = try #require(r["weekly"] as? [[String: Any]])
        #expect(weekly.count == 2)
        #expect(weekly.first?["days"] as? Int == 0b001_1111)
        #expect(weekly.first?["startMinute"] as? Int == 9 * 60)
        #expect(weekly.first?["endMinute"] as? Int == 12 * 60)
        #expect(weekly.last?["days"] as? Int == 0b110_0000)
        #expect(weekly.last?["endMinute"] as? Int == 2 * 60)

        // set replaces the list, "none" clears it and the zone; the rest stays.
        #expect(try CLI.run(["resident", "set", "room-12", "--weekly", "Fri-Mon 08:00-09:00", "--data", dir.path]).status == 0)
        r = try resident()
        #expect((r["weekly"] as? [[String: Any]])?.map { $0["days"] as? Int } == [0b111_0001])
        #expect(r["room"] as? String == "12B")
        #expect(try CLI.run(["resident", "set", "room-12", "--weekly", "none", "--time-zone", "none", "--data", dir.path]).status == 0)
        r = try resident()
        #expect((r["weekly"] as? [[String: Any]])?.isEmpty == true)
        #expect(r["timeZone"] as? String == "")
        #expect(r["ownAddress"] as? String == "+34600000222")
        #expect(try CLI.run(["replay", "--data", dir.path]).status == 0)
    }

    @Test func badSchedulesAndZonesAreRefusedWithTheirOption() throws {
        let dir = TemporaryDirectory()
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "200ms"]).status == 0)
        for (args, needle) in [(["--weekly", "weekdays"], "--weekly"), (["--weekly", "Mon-Fri 09:00"], "--weekly"),
                               (["--weekly", "Xyz 09:00-10:00"], "--weekly"), (["--weekly", "Mon 09:00-09:00"], "--weekly"),
                               (["--time-zone", "Mars/Olympus_Mons"], "--time-zone"),
                               (["--time-zone", "../../etc/passwd"], "--time-zone")] {
            let r = try CLI.run(["resident", "add", "room-1"] + args + ["--data", dir.path])
            #expect(r.status == 64, "\(args)")
            #expect(r.stderr.contains(needle), "\(args): \(r.stderr)")
        }
    }
}
