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
