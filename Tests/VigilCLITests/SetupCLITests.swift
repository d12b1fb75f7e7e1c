import Foundation
import Testing

/// `vigil setup`, as a volunteer runs it: answers checked as they are given, the file written
/// whole with its comments, nothing written when an answer cannot be used.
@Suite struct SetupCLITests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The shipped example configuration, its data directory moved into `dir`.
    static func configuration(in dir: TemporaryDirectory) throws -> String {
        let shipped = try String(contentsOfFile: root + "/board/vigil.yaml", encoding: .utf8)
        let text = shipped.replacingOccurrences(of: "data: ./var\n", with: "data: \(dir.path)/data\n")
        let path = dir.path + "/vigil.yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
    }

    @Test func aScriptedSetupSetsWhatItIsGivenAndKeepsEveryOtherLine() throws {
        let dir = TemporaryDirectory()
        let path = try Self.configuration(in: dir)
        let before = try Self.lines(path)
        let password = dir.path + "/password"
        try "correct horse battery\n".write(toFile: password, atomically: true, encoding: .utf8)
        let r = try CLI.run(["setup", "--config", path, "--non-interactive", "--board", Self.root + "/board/rpi4.yaml", "--radio", "hci0",
                             "--site-name", "Sant Jordi", "--site-location=41.38,2.17", "--staff", "+34 600 111 222, 0034600111333",
                             "--notifier", "/bin/true", "--page", "0.0.0.0:8443", "--admin-password-file", password])
        #expect(r.status == 0, "\(r.stderr)")
        let after = try Self.lines(path)
        let changed = after.filter { !before.contains($0) }
        #expect(changed.count == 7, "board, adapter, name, location, staff, command, listen: \(changed)")
        #expect(changed.contains { $0.hasPrefix("  adapter: \"hci0\"") })
        #expect(changed.contains { $0.hasPrefix("  staff: [\"+34600111222\", \"+34600111333\"]") })
        #expect(changed.contains("  command: \"/bin/true\""))
        let removed = before.filter { !after.contains($0) }
        #expect(removed.count == 6, "only the lines set were replaced: \(removed)")
        #expect(after.filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }
                == before.filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }, "every comment line stays")
        #expect(FileManager.default.fileExists(atPath: dir.path + "/data/http/admin.hash"), "the page's password is set")
        #expect(!FileManager.default.fileExists(atPath: path + ".new"))
        // Again: nothing to change. Setup reads the file as the node does first (exit 78 if it
        // could not), so this also proves what was written reads back.
        let again = try CLI.run(["setup", "--config", path, "--non-interactive", "--site-name", "Sant Jordi"])
        #expect(again.status == 0 && again.stdout.contains("unchanged"), "\(again.stdout)")
    }

    @Test("a bad answer is refused with the reason and nothing is written", arguments: [
        (["--staff", "600 111 222"], "country code"),
        (["--board", "nosuch"], "unknown board profile"),
        (["--hub-url", "http://hub.example:8443", "--hub-token-file", "/dev/null"], "https://"),
        (["--site-location", "91,0"], "LATITUDE,LONGITUDE"),
        (["--notifier", "/proc/self/status"], "not executable"),
        (["--notifier", "/usr/bin"], "not executable"),
        (["--board", "rpi4x", "--staff", "+34600111222"], "unknown board profile"),
        // The shipped file's radio is simulated: a real board needs its adapter.
        (["--board", SetupCLITests.root + "/board/rpi4.yaml"], "the file's radio is simulated"),
        (["--board", SetupCLITests.root + "/board/rpi4.yaml", "--radio", "sim"], "hears nobody"),
        (["--radio", "bt0"], "adapter's name (hci0)"),
    ])
    func aBadAnswerIsRefusedAndNothingIsWritten(arguments: [String], reason: String) throws {
        let dir = TemporaryDirectory()
        let path = try Self.configuration(in: dir)
        let before = try String(contentsOfFile: path, encoding: .utf8)
        let r = try CLI.run(["setup", "--config", path, "--non-interactive", "--site-name", "Hall"] + arguments)
        #expect(r.status == 64)
        #expect(r.stderr.contains(reason) && r.stderr.contains("nothing was written"), "\(r.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == before)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/data"), "no password, no data directory")
    }

    @Test func theQuestionsAskAgainUntilAnAnswerCanBeUsedThenWriteOnce() throws {
        let dir = TemporaryDirectory()
        let path = try Self.configuration(in: dir)
        let answers = [
            "nosuch", Self.root + "/board/rpi5.yaml", // board: refused, then a profile
            "sim", "", // radio: a simulated one on a real board is refused; Enter takes hci0
            "Hall 2", "", // name; no place
            "12345", "+34 600 111 222", // staff: refused, then a number
            "/nonexistent/notify", "none", // notifier
            "0.0.0.0:8443", "short", "correct horse battery", "correct horse batterz", // page; a short password, a slip
            "correct horse battery", "correct horse battery", // the password, typed twice
            "http://hub.example", "", // hub: refused, then none
        ]
        let r = try CLI.run(["setup", "--config", path], input: answers.joined(separator: "\n") + "\n")
        #expect(r.status == 0, "\(r.stderr)")
        for refusal in ["unknown board profile", "hears nobody", "country code", "there is no notifier", "at least 10 characters", "did not match", "https://"] {
            #expect(r.stderr.contains(refusal), "\(refusal) in \(r.stderr)")
        }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("  name: \"Hall 2\""))
        #expect(text.contains("  adapter: \"hci0\""))
        #expect(text.contains("  staff: [\"+34600111222\"]"))
        #expect(text.contains("  listen: \"0.0.0.0:8443\""))
        #expect(FileManager.default.fileExists(atPath: dir.path + "/data/http/admin.hash"))
        #expect(r.stdout.contains("with no notifier nobody is told"), "it says what is missing")

        // Re-run: Enter keeps every value the file has now.
        let again = try CLI.run(["setup", "--config", path], input: String(repeating: "\n", count: 10))
        #expect(again.status == 0 && again.stdout.contains("unchanged"), "\(again.stdout) \(again.stderr)")
        #expect(again.stdout.contains("[+34600111222]") && again.stdout.contains("[Hall 2]"), "each question shows the value now")
    }

    /// The package's file (board/vigil-package.yaml) names no board: the service refuses to run
    /// a box nobody set up, and setup will not leave it so.
    @Test func thePackagesFileIsRefusedByRunUntilSetupChoosesABoard() throws {
        let dir = TemporaryDirectory()
        let path = dir.path + "/vigil.yaml"
        let packaged = try String(contentsOfFile: Self.root + "/board/vigil-package.yaml", encoding: .utf8)
        try packaged.replacingOccurrences(of: "data: /var/lib/vigil\n", with: "data: \(dir.path)/data\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let run = try CLI.run(["run", "--config", path, "--duration", "1s"])
        #expect(run.status == 78 && run.stderr.contains("no board profile is chosen") && run.stderr.contains("vigil setup"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/data/log"), "nothing was started")
        let vague = try CLI.run(["setup", "--config", path, "--non-interactive", "--site-name", "Hall"])
        #expect(vague.status == 64 && vague.stderr.contains("names no board yet"), "\(vague.stderr)")
        let chosen = try CLI.run(["setup", "--config", path, "--non-interactive", "--board", "sim", "--radio", "sim", "--site-name", "Hall"])
        #expect(chosen.status == 0, "\(chosen.stderr)")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("\nboard: \"sim\"") && text.contains("  adapter: \"sim\"") && text.contains("site:\n  name: \"Hall\""), "\(text)")
        #expect(text.hasPrefix("# This box's configuration"), "its comments stay")
    }

    /// An empty file (cut short by a power cut) is no board either: never quietly the simulated one.
    @Test func anEmptyFileIsRefusedByRun() throws {
        let dir = TemporaryDirectory()
        let path = dir.path + "/vigil.yaml"
        try "".write(toFile: path, atomically: true, encoding: .utf8)
        let run = try CLI.run(["run", "--config", path, "--data", dir.path + "/data", "--duration", "1s"])
        #expect(run.status == 78 && run.stderr.contains("no board profile is chosen"), "\(run.stderr)")
    }

    /// A box set up by hand from the example file with only its board changed keeps the
    /// simulated radio: refused, unless the command line asks for it (trying the board alone).
    @Test func aRealBoardWithTheSimulatedRadioIsRefusedUnlessAskedFor() throws {
        let dir = TemporaryDirectory()
        let path = try Self.configuration(in: dir)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try text.replacingOccurrences(of: "\nboard: sim ", with: "\nboard: \(Self.root)/board/rpi4.yaml ")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let refused = try CLI.run(["run", "--config", path, "--duration", "1s"])
        #expect(refused.status == 78 && refused.stderr.contains("hears nobody") && refused.stderr.contains("--radio sim"), "\(refused.stderr)")
        // Asked for, it goes on to the board, whose chip this machine does not have.
        let asked = try CLI.run(["run", "--config", path, "--duration", "1s", "--radio", "sim"])
        #expect(asked.status != 0 && asked.status != 78 && !asked.stderr.contains("hears nobody"), "\(asked.status) \(asked.stderr)")
    }

    /// A profile found only beside where setup ran is written as its path (the service runs
    /// elsewhere); a file whose profile is gone can be set up again.
    @Test func aBoardFoundBesideTheWorkingDirectoryIsWrittenAsAPathAndAMissingOneIsAskedAgain() throws {
        let dir = TemporaryDirectory()
        let path = try Self.configuration(in: dir)
        let work = dir.path + "/work"
        try FileManager.default.createDirectory(atPath: work + "/board", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.root + "/board/rpi4.yaml", toPath: work + "/board/mine.yaml")
        let r = try CLI.run(["setup", "--config", path, "--non-interactive", "--board", "mine", "--radio", "hci0"], directory: work)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8).contains("\nboard: \"\(work)/board/mine.yaml\""))
        try FileManager.default.removeItem(atPath: work + "/board/mine.yaml")
        let again = try CLI.run(["setup", "--config", path, "--non-interactive", "--board", "sim", "--radio", "sim"])
        #expect(again.status == 0, "the profile that went is chosen again: \(again.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8).contains("\nboard: \"sim\""))
    }

    @Test("a copy of the simulated profile under another name is still simulated")
    func theSimulatedRadioGoesWithTheSimulatedBoardByItsChip() throws {
        let dir = TemporaryDirectory()
        let path = try Self.configuration(in: dir)
        let r = try CLI.run(["setup", "--config", path, "--non-interactive", "--board", Self.root + "/board/sim.yaml", "--radio", "sim"])
        #expect(r.status == 0, "\(r.stderr)")
    }

    @Test func aNewFileIsNotForEveryoneAndALinkIsEditedWhereItPoints() throws {
        let dir = TemporaryDirectory()
        let fresh = dir.path + "/etc/vigil/vigil.yaml"
        let r = try CLI.run(["setup", "--config", fresh, "--non-interactive", "--site-name", "Hall", "--data", dir.path + "/data"])
        #expect(r.status == 0, "\(r.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: fresh)[.posixPermissions] as? Int
        #expect(mode == 0o640, "staff numbers are personal data")
        #expect(try String(contentsOfFile: fresh, encoding: .utf8) == "site:\n  name: \"Hall\"\n")

        let target = try Self.configuration(in: dir)
        let link = dir.path + "/link.yaml"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let viaLink = try CLI.run(["setup", "--config", link, "--non-interactive", "--site-name", "Linked"])
        #expect(viaLink.status == 0, "\(viaLink.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target, "still a link")
        #expect(try String(contentsOfFile: target, encoding: .utf8).contains("  name: \"Linked\""))
        #expect(viaLink.stderr.contains("every user of this machine can read"), "the shipped file is 0644 here: said so")
    }

    @Test func answersThatEndEarlyWriteNothing() throws {
        let dir = TemporaryDirectory()
        let path = try Self.configuration(in: dir)
        let before = try String(contentsOfFile: path, encoding: .utf8)
        let r = try CLI.run(["setup", "--config", path], input: "sim\nHall\n")
        #expect(r.status == 66 && r.stderr.contains("nothing was written"), "\(r.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == before)
    }

    @Test func aFileSetupCannotEditSafelyIsLeftAsItIs() throws {
        let dir = TemporaryDirectory()
        let path = dir.path + "/vigil.yaml"
        let text = "data: \(dir.path)/data\nsite: {name: \"Old\"}\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let r = try CLI.run(["setup", "--config", path, "--non-interactive", "--site-name", "New"])
        #expect(r.status == 78 && r.stderr.contains("site.name") && r.stderr.contains("by hand"), "\(r.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
    }
}
