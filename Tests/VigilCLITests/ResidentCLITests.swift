import Foundation
import Testing

@Suite(.serialized) struct ResidentCLITests {
    @Test func residentsAreEnrolledChangedListedAndRemovedFromTheCLI() throws {
        let dir = TemporaryDirectory()
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "200ms"]).status == 0)
        let add = try CLI.run(["resident", "add", "room-4", "--name", "Ana", "--mode", "pulse", "--interval", "2h",
                               "--contact", "Luis=+34600000000", "--night", "22:00-07:00", "--utc-offset", "60",
                               "--tag", "C0:11:22:33:44:55", "--data", dir.path])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(try CLI.run(["resident", "add", "room-4", "--data", dir.path]).stderr.contains("exists"))
        #expect(try CLI.run(["resident", "set", "room-4", "--interval", "3h", "--data", dir.path]).status == 0)

        let list = try CLI.run(["resident", "list", "--json", "--data", dir.path])
        let residents = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        let r = try #require(residents.first)
        #expect(r["id"] as? String == "room-4")
        #expect(r["name"] as? String == "Ana", "set keeps what it was not told to change")
        #expect(r["intervalMicroseconds"] as? Int == 3 * 3_600_000_000)
        #expect(r["bleTag"] as? Int == 0xC0_11_22_33_44_55)
        #expect((r["contacts"] as? [[String: Any]])?.first?["address"] as? String == "+34600000000")
        #expect((r["night"] as? [String: Any])?["startMinute"] as? Int == 22 * 60)

        let unplugged = try CLI.run(["checkin", "room-4", "--heart-rate", "72", "--flags", "4", "--data", dir.path])
        #expect(unplugged.stdout.contains("not counted"), "contact supported but not detected")
        #expect(try CLI.run(["checkin", "room-4", "--data", dir.path]).status == 0)
        #expect(try CLI.run(["ack", "--data", dir.path]).status == 0)

        let why = try CLI.run(["why", "--json", "--data", dir.path])
        let outputs = try #require(try JSONSerialization.jsonObject(with: Data(why.stdout.utf8)) as? [String: Any])
        #expect(outputs["running"] as? Bool == false)
        #expect((outputs["buzzer"] as? [String: Any])?["pattern"] as? String == "off")

        #expect(try CLI.run(["resident", "remove", "room-4", "--data", dir.path]).status == 0)
        #expect(try CLI.run(["resident", "list", "--data", dir.path]).stdout.contains("no residents"))
        #expect(try CLI.run(["resident", "remove", "room-4", "--data", dir.path]).stderr.contains("no resident room-4"))
        #expect(try CLI.run(["replay", "--data", dir.path]).status == 0)
    }

    @Test func badResidentSettingsAreRefusedWithTheirOption() throws {
        let dir = TemporaryDirectory()
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "200ms"]).status == 0)
        for (args, needle) in [(["--mode", "weekly"], "--mode"), (["--interval", "soon"], "--interval"),
                               (["--contact", "nobody"], "--contact"), (["--night", "late"], "--night"),
                               (["--tag", "12:34"], "--tag"), (["--pause", "yesterday"], "--pause")] {
            let r = try CLI.run(["resident", "add", "room-1"] + args + ["--data", dir.path])
            #expect(r.status == 64, "\(args)")
            #expect(r.stderr.contains(needle), "\(args): \(r.stderr)")
        }
    }

    /// Staff re-enrol a strap with the box off (none, then the address): its old bond key goes
    /// with the first command, so the node pairs afresh instead of trusting the old bond.
    @Test func aSensorRemovedWithTheBoxOffLosesItsBondKey() throws {
        let dir = TemporaryDirectory()
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "200ms"]).status == 0)
        let strap = "00:AA:01:01:00:01", other = "C3:11:22:33:44:55/random"
        #expect(try CLI.run(["resident", "add", "r1", "--mode", "pulse", "--interval", "1h", "--hr-sensor", strap, "--data", dir.path]).status == 0)
        #expect(try CLI.run(["resident", "add", "r2", "--mode", "pulse", "--interval", "1h", "--hr-sensor", other, "--data", dir.path]).status == 0)
        let keys = dir.path + "/sensor-keys"
        try ("# keys\n\(strap) 2 0 16 0 0000000000000000 000102030405060708090a0b0c0d0e0f\n"
             + "\(other) 2 0 16 0 0000000000000000 0f0e0d0c0b0a09080706050403020100\n").write(toFile: keys, atomically: true, encoding: .utf8)
        let none = try CLI.run(["resident", "set", "r1", "--hr-sensor", "none", "--data", dir.path])
        #expect(none.status == 0 && none.stdout.contains("deleted the bond key of \(strap)"), "\(none.stdout)\(none.stderr)")
        let left = try String(contentsOfFile: keys, encoding: .utf8)
        #expect(!left.contains(strap) && left.contains("C3:11:22:33:44:55/random"), "the other resident's key stays")
        #expect(try CLI.run(["resident", "set", "r1", "--hr-sensor", strap, "--data", dir.path]).status == 0)
        #expect(try !String(contentsOfFile: keys, encoding: .utf8).contains(strap), "enrolled again: no key until it pairs")
    }
}
