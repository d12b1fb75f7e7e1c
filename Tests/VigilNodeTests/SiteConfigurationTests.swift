import Foundation
import Testing
@testable import VigilNode

/// Issue 10: the new settings (site.name, site.location, notify.staff,
/// notify.downtime_report_after) are read, validated, and the shipped board/vigil.yaml lists them.
@Suite struct SiteConfigurationTests {
    func load(_ yaml: String) throws -> NodeConfiguration {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let file = dir.path + "/vigil.yaml"
        try yaml.write(toFile: file, atomically: true, encoding: .utf8)
        return try NodeConfiguration.load(file: file)
    }

    @Test func siteAndStaffSettingsReachTheLadder() throws {
        let c = try load("""
        site:
          name: Shelter North
          location: " 40.4168, -3.7038 "
        notify:
          staff: ["+34600000111", staff@shelter.example]
          downtime_report_after: 15m
        """)
        #expect(c.projections.ladder.siteName == "Shelter North")
        #expect(c.projections.ladder.siteLocation == "40.4168,-3.7038")
        #expect(c.projections.ladder.staff == ["+34600000111", "staff@shelter.example"])
        #expect(c.downtimeReportAfterMicroseconds == 15 * 60_000_000)
        #expect(NodeConfiguration().downtimeReportAfterMicroseconds == 5 * 60_000_000)
    }

    @Test func badSiteSettingsAreErrorsNamingTheKey() throws {
        for (yaml, needle) in [("site:\n  location: somewhere\n", "site.location"),
                               ("site:\n  location: \"91,0\"\n", "site.location"),
                               ("site:\n  floor: 2\n", "site.floor"),
                               ("notify:\n  staff: nobody\n", "notify.staff")] {
            #expect(throws: ConfigurationError.self, "\(yaml)") { try load(yaml) }
            do { _ = try load(yaml) } catch { #expect("\(error)".contains(needle), "\(error)") }
        }
    }

    @Test func theShippedConfigurationListsTheNewKeys() throws {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let text = try String(contentsOfFile: url.path + "/board/vigil.yaml", encoding: .utf8)
        for key in ["staff:", "downtime_report_after: 5m", "site:", "name:", "location:"] {
            #expect(text.contains(key), "board/vigil.yaml lacks \(key)")
        }
        let c = try NodeConfiguration.load(file: url.path + "/board/vigil.yaml")
        #expect(c.projections.ladder == NodeConfiguration().projections.ladder)
    }
}

/// `arc:` (issue 27, item 3): receivers, identity and key checked when the file is read.
struct AlarmCentreConfigurationTests {
    func load(_ yaml: String) throws -> NodeConfiguration { try SiteConfigurationTests().load(yaml) }

    @Test func anAlarmCentreJoinsTheDefaultTreeAfterTheStaff() throws {
        let c = try load("""
            notify:
              staff: ["+34 600 111 222"]
            arc:
              receivers: ["192.0.2.10:9000", "[2001:db8::1]:9001", "localhost:9002"]
              account: "12ab"
              receiver: "3"
              line: "2"
              key: "0123456789ABCDEF"
            calls:
              test_every: 12h
            """)
        let arc = try #require(c.alarmCentre)
        #expect(arc.receivers.map(\.description) == ["192.0.2.10:9000", "[2001:db8::1]:9001", "127.0.0.1:9002"])
        #expect(arc.identity.account == "12AB")
        #expect(arc.key?.bitCount == 128)
        #expect(arc.testEveryMicroseconds == 12 * 3_600_000_000)
        #expect(c.callTree.tiers.map(\.recipients) == [["+34600111222"], ["arc"]])
    }

    @Test func theSelfTestsRecipientsAreCheckedAndNormalisedAndThePublicURLIsTLS() throws {
        let c = try load("""
            calls:
              test_every: 6h
              test_to: ["+34 600-111-222", "https://ntfy.example.org/shelter-3"]
            http:
              public_url: https://vigil-a.lan:8443/
            """)
        #expect(c.callTestRecipients == ["+34600111222", "https://ntfy.example.org/shelter-3"])
        #expect(c.callTestEveryMicroseconds == 6 * 3_600_000_000)
        #expect(c.http.publicURL == "https://vigil-a.lan:8443")
        #expect(throws: ConfigurationError.self) { try load("calls:\n  test_to: [\"600 111 222\"]\n") }
        #expect(throws: ConfigurationError.self) { try load("calls:\n  test_to: [\"arc\"]\n") }
        #expect(throws: ConfigurationError.self) { try load("http:\n  public_url: http://vigil-a.lan:8080\n") }
    }

    @Test func aTreeNamingTheCentreNeedsOne() throws {
        #expect(throws: ConfigurationError.self) {
            try load("""
                calls:
                  tree:
                    - to: ["arc"]
                """)
        }
        let c = try load("""
            calls:
              tree:
                - to: ["+34600111222"]
                - after: 2m
                  to: ["arc"]
            arc:
              receivers: ["127.0.0.1:9000"]
              account: "1234"
            """)
        #expect(c.callTree.everyone == ["+34600111222", "arc"])
    }

    @Test("bad receivers, accounts and keys are refused when the file is read", arguments: [
        "receivers: [\"centre.example.org:9000\"]\n  account: \"1234\"",
        "receivers: [\"192.0.2.10\"]\n  account: \"1234\"",
        "receivers: [\"192.0.2.10:0\"]\n  account: \"1234\"",
        "receivers: [\"300.0.2.10:9000\"]\n  account: \"1234\"",
        "receivers: [\"010.0.0.1:9000\"]\n  account: \"1234\"",
        "receivers: [\"[1::2::3]:9000\"]\n  account: \"1234\"",
        "receivers: [\"[fe80::1%eth0]:9000\"]\n  account: \"1234\"",
        "receivers: [\"192.0.2.10:+80\"]\n  account: \"1234\"",
        "receivers: [\"192.0.2.10:65536\"]\n  account: \"1234\"",
        "receivers: []\n  account: \"1234\"",
        "receivers: [\"192.0.2.10:9000\"]",
        "receivers: [\"192.0.2.10:9000\"]\n  account: \"12\"",
        "receivers: [\"192.0.2.10:9000\"]\n  account: \"12zz\"",
        "receivers: [\"192.0.2.10:9000\"]\n  account: \"1234\"\n  key: \"short\"",
        "receivers: [\"192.0.2.10:9000\"]\n  account: \"1234\"\n  key_hex: \"00112233\"",
        "receivers: [\"192.0.2.10:9000\"]\n  account: \"1234\"\n  colour: red",
    ])
    func badSettingsAreRefused(body: String) {
        #expect(throws: ConfigurationError.self) { try load("arc:\n  " + body + "\n") }
    }
}
