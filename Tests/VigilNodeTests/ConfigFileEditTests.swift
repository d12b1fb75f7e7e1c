import Foundation
import Testing
@testable import VigilNode

/// `vigil setup` edits the configuration file by lines so that its comments, blank lines and the
/// settings it was not asked about stay exactly as the volunteer left them.
@Suite struct ConfigFileEditTests {
    static let file = """
    # A shelter box.
    data: /var/lib/vigil
    board: sim                # board profile name

    notify:
      # command: /usr/share/vigil/notify/vigil-notify-sms
      timeout: 10s            # a command still running then is killed
      staff:
        - "+34600111000"
        # the night shift
        - "+34600111001"
      retry_max: 10m

    site:
      name: ""                # the shelter's name
    """

    @Test func aValueIsReplacedAndItsCommentStaysInItsColumn() throws {
        var edit = ConfigFileEdit(text: Self.file)
        try edit.set("board", to: ConfigFileEdit.scalar("rpi4"))
        try edit.set("site", "name", to: ConfigFileEdit.scalar("Hall"))
        let lines = edit.lines
        #expect(lines.contains("board: \"rpi4\"             # board profile name"))
        #expect(lines.contains("  name: \"Hall\"            # the shelter's name"))
        // Everything else is as it was, line for line.
        let before = ConfigFileEdit(text: Self.file).lines
        #expect(zip(before, lines).filter { $0 != $1 }.count == 2)
        #expect(before.count == lines.count)
    }

    @Test func aBlockListBecomesAFlowListAndTheCommentsAmongItStay() throws {
        var edit = ConfigFileEdit(text: Self.file)
        try edit.set("notify", "staff", to: ConfigFileEdit.list(["+34600111222"]))
        #expect(edit.lines.contains("  staff: [\"+34600111222\"]"))
        #expect(!edit.text.contains("+34600111000"))
        #expect(edit.lines.contains("    # the night shift"), "a comment is never thrown away")
        #expect(edit.lines.contains("  retry_max: 10m"))
        let read = try NodeConfiguration.load(text: edit.text, file: "vigil.yaml")
        #expect(read.projections.ladder.staff == ["+34600111222"])
        #expect(read.notifier.retryMaxMicroseconds == 600_000_000)
    }

    @Test func aMissingKeyGoesAfterItsSectionsLastSettingAndAMissingSectionAtTheEnd() throws {
        var edit = ConfigFileEdit(text: Self.file)
        try edit.set("notify", "command", to: ConfigFileEdit.scalar("/usr/bin/true"))
        try edit.set("http", "listen", to: ConfigFileEdit.scalar("0.0.0.0:8443"))
        try edit.set("site", "location", to: ConfigFileEdit.scalar("-33.8688,151.2093"))
        let lines = edit.lines
        let retry = try #require(lines.firstIndex(of: "  retry_max: 10m"))
        #expect(lines[retry + 1] == "  command: \"/usr/bin/true\"")
        #expect(lines.suffix(3) == ["", "http:", "  listen: \"0.0.0.0:8443\""])
        let read = try NodeConfiguration.load(text: edit.text, file: "vigil.yaml")
        #expect(read.notifier.command == "/usr/bin/true")
        #expect(read.http.listen == "0.0.0.0:8443")
        #expect(read.projections.ladder.siteLocation == "-33.8688,151.2093")
        #expect(read.dataDirectory == "/var/lib/vigil", "what was not asked about is untouched")
    }

    @Test func removingAKeyLeavesItsDefault() throws {
        var edit = ConfigFileEdit(text: Self.file)
        try edit.set("notify", "command", to: ConfigFileEdit.scalar("/usr/bin/true"))
        try edit.remove("notify", "command")
        try edit.remove("notify", "staff")
        try edit.remove("nowhere", "at_all")
        #expect(!edit.text.contains("command: \""))
        #expect(!edit.text.contains("+34600111001"))
        #expect(edit.lines.contains("  # command: /usr/share/vigil/notify/vigil-notify-sms"), "the commented example stays")
        let read = try NodeConfiguration.load(text: edit.text, file: "vigil.yaml")
        #expect(read.notifier.command == nil && read.projections.ladder.staff.isEmpty)
    }

    @Test func whatItCannotEditSafelyIsRefusedByName() {
        var flow = ConfigFileEdit(text: "site: {name: x}\n")
        #expect(throws: ConfigFileEdit.Refused(setting: "site.name", reason: "site is not written as a block of indented settings")) {
            try flow.set("site", "name", to: ConfigFileEdit.scalar("y"))
        }
        var twice = ConfigFileEdit(text: "board: sim\nboard: rpi4\n")
        #expect(throws: ConfigFileEdit.Refused.self) { try twice.set("board", to: ConfigFileEdit.scalar("rpi5")) }
        var tabs = ConfigFileEdit(text: "site:\n\tname: x\n")
        #expect(throws: ConfigFileEdit.Refused.self) { try tabs.set("site", "name", to: ConfigFileEdit.scalar("y")) }
        var nested = ConfigFileEdit(text: "notify:\n  staff:\n    night: x\n")
        #expect(throws: ConfigFileEdit.Refused.self) { try nested.set("notify", "staff", to: "[]") }
    }

    @Test func windowsLineEndingsAndAByteOrderMarkAreRefusedNotMixedIn() {
        var crlf = ConfigFileEdit(text: "site:\r\n  name: x\r\n")
        #expect(throws: ConfigFileEdit.Refused.self) { try crlf.set("site", "name", to: ConfigFileEdit.scalar("y")) }
        var bom = ConfigFileEdit(text: "\u{FEFF}board: sim\n")
        #expect(throws: ConfigFileEdit.Refused.self) { try bom.set("board", to: ConfigFileEdit.scalar("rpi4")) }
    }

    @Test func anIndentlessListABlockScalarAndAnApostropheAreReadAsYAMLReadsThem() throws {
        var edit = ConfigFileEdit(text: "notify:\n  staff:\n  - \"+34600111000\"\n  - \"+34600111001\"\n  timeout: 10s\nsite:\n  name: |\n    Old\n    Hall\n  location: \"\" # St John's # place\n")
        try edit.set("notify", "staff", to: ConfigFileEdit.list(["+34600111222"]))
        try edit.set("site", "name", to: ConfigFileEdit.scalar("New"))
        #expect(edit.lines == ["notify:", "  staff: [\"+34600111222\"]", "  timeout: 10s", "site:", "  name: \"New\"", "  location: \"\" # St John's # place"])
        var plain = ConfigFileEdit(text: "site:\n  name: St John's   # the hall\n")
        try plain.set("site", "name", to: ConfigFileEdit.scalar("St Paul's"))
        #expect(plain.lines == ["site:", "  name: \"St Paul's\" # the hall"])
    }

    @Test func anyTextIsWrittenAsAScalarYAMLReadsBackTheSame() throws {
        let names = ["line\u{2028}separator", "next\u{85}line", "para\u{2029}graph", "c1\u{9B}control", "del\u{7F}","St. Mary \"Hall\" # 2", "back\\slash", "tab\there", "Sant Jordi — l'Hospitalet", "ünïcödé 避難所", "a: b", "- x", "null", "yes"]
        for name in names {
            var edit = ConfigFileEdit(text: Self.file)
            try edit.set("site", "name", to: ConfigFileEdit.scalar(name))
            let read = try NodeConfiguration.load(text: edit.text, file: "vigil.yaml")
            #expect(read.projections.ladder.siteName == name)
        }
    }

    @Test func eachAnswerIsCheckedAndNormalisedAsItIsGiven() throws {
        #expect(try NodeSetup.checkStaff("+34 600 111 222, 0034600111333, +34600111222") == ["+34600111222", "+34600111333"])
        #expect(try NodeSetup.checkStaff("none") == [])
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkStaff("600111222") }
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkStaff("staff@example.org") }
        #expect(try NodeSetup.checkLocation(" -33.8688, 151.2093 ") == "-33.8688,151.2093")
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkLocation("91,0") }
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkHubURL("http://hub.example:8443") }
        #expect(try NodeSetup.checkHubURL("https://hub.example:8443") == "https://hub.example:8443")
        #expect(try NodeSetup.checkPageListen("none") == "")
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkPageListen("everywhere") }
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkPassword("short") }
        #expect(try NodeSetup.checkNotifier("none") == "")
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkNotifier("vigil-notify-sms") }
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkNotifier("/nonexistent/notifier") }
        let dir = TemporaryDirectory()
        let plain = dir.path + "/plain"
        #expect(FileManager.default.createFile(atPath: plain, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o644]))
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkNotifier(plain) }
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkNotifier(dir.path) }
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkSiteName("line\nbreak") }
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkSiteName("bidi\u{202E}override") }
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkSiteName("line\u{2028}separator") }
        #expect(throws: SetupRefusal.self) { try NodeSetup.checkBoard("nosuch", configFile: "/nonexistent/vigil.yaml") }
        #expect(try NodeSetup.checkBoard("sim", configFile: "/nonexistent/vigil.yaml") == "sim")
    }
}
