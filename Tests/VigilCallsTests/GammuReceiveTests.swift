import Foundation
import Testing
import VigilCalls
import VigilTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The real thing: gammu-smsd on Gammu's dummy phone receives SMS that
/// scripts/sms-inject-incoming drops into the phone directory, writes them into its inbox in
/// each format, and InboundSMS reads what it wrote. gammu-smsd and python3 must be installed
/// (apt-get install gammu gammu-smsd): a missing tool is a failure, not a skip.
@Suite("gammu-smsd receiving through the dummy phone")
struct GammuReceiveTests {
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts")

    @Test(arguments: InboxFormat.allCases)
    func injectedMessagesArriveInTheInboxAndReadAsReplies(format: InboxFormat) throws {
        let daemon = try #require(Self.find("gammu-smsd"), "gammu-smsd is not installed: apt-get install gammu gammu-smsd")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("vigil-sms-\(format)-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        for dir in ["phone", "inbox", "outbox", "sent", "error"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(dir), withIntermediateDirectories: true)
        }
        let config = root.appendingPathComponent("smsdrc")
        try """
        [gammu]
        model = dummy
        connection = none
        device = \(root.path)/phone/

        [smsd]
        service = files
        logfile = \(root.path)/smsd.log
        commtimeout = 1
        loopsleep = 1
        receivefrequency = 1
        checksecurity = 0
        inboxformat = \(format.rawValue)
        inboxpath = \(root.path)/inbox/
        outboxpath = \(root.path)/outbox/
        sentsmspath = \(root.path)/sent/
        errorsmspath = \(root.path)/error/

        """.write(to: config, atomically: true, encoding: .utf8)

        let smsd = TestProcess()
        smsd.executableURL = URL(fileURLWithPath: daemon)
        smsd.arguments = ["-c", config.path]
        var environment = ProcessInfo.processInfo.environment
        environment["LANG"] = "C.UTF-8"
        environment["LC_ALL"] = nil
        smsd.environment = environment
        smsd.standardOutput = FileHandle.nullDevice
        smsd.standardError = FileHandle.nullDevice
        try smsd.run()
        defer {
            // SIGKILL: children of the test process inherit a signal mask that blocks SIGTERM.
            kill(smsd.processIdentifier, SIGKILL)
            smsd.waitUntilExit()
        }
        let log = root.appendingPathComponent("smsd.log")
        #expect(Self.eventually(seconds: 10) { (try? String(contentsOf: log, encoding: .utf8))?.contains("Starting phone communication") == true })

        let messages = [("+34600111222", "Take."), ("+34600111223", "Sí, José está OK 👍"), ("Vigil_Test", "I’m OK")]
        let phone = root.appendingPathComponent("phone").path
        for (sender, text) in messages {
            let inject = try Self.run(Self.scripts.appendingPathComponent("sms-inject-incoming").path, [phone, sender, text])
            #expect(inject.status == 0, "\(inject.output)")
        }
        let inbox = root.appendingPathComponent("inbox")
        let arrived = Self.eventually(seconds: 20) {
            ((try? FileManager.default.contentsOfDirectory(atPath: inbox.path)) ?? []).count == messages.count
                && ((try? FileManager.default.contentsOfDirectory(atPath: phone + "/sms/1")) ?? ["?"]).isEmpty
        }
        #expect(arrived, "gammu-smsd did not receive them: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")

        var read: [InboxSender: InboundSMS] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: inbox.path) {
            let bytes = try [UInt8](Data(contentsOf: inbox.appendingPathComponent(name)))
            let sms = try InboundSMS.read(name: Array(name.utf8), contents: bytes, format: format)
            read[sms.sender] = sms
        }
        #expect(read[.number(try PhoneNumber("+34 600 111 222"))]?.answer == .reply(.take(code: nil)))
        #expect(read[.number(try PhoneNumber("+34 600 111 223"))]?.message.text == "Sí, José está OK 👍")
        #expect(read[.number(try PhoneNumber("+34 600 111 223"))]?.answer == .reply(.unrecognised("Sí, José está OK 👍")))
        #expect(read[.other("Vigil_Test")]?.answer == .reply(.ok))
    }

    static func find(_ tool: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(dir)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    static func run(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    static func eventually(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }
}
