import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The notifiers shipped in board/notify deliver for real: SMS through Gammu's SMS daemon on its
/// dummy phone driver (no modem), and the webhook to a local HTTP server. Each message goes out
/// once per outbox entry, also when the notifier is killed (SIGKILL, as with a kill -9 of the
/// node) between its intent marker and its done marker. scripts/setup installs every tool used
/// here, so a missing one is a failure, not a skip.
@Suite(.serialized) struct NotifierTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let sms = root + "/board/notify/vigil-notify-sms"
    static let webhook = root + "/board/notify/vigil-notify-webhook"

    // MARK: SMS through gammu-smsd

    @Test func smsReachesTheDummyPhoneOnceAcrossRerunsAndKills() throws {
        let daemon = try #require(Tool.find("gammu-smsd"), "gammu-smsd is not installed: run scripts/setup")
        _ = try #require(Tool.find("gammu-smsd-inject"), "gammu-smsd-inject is not installed: run scripts/setup")
        let dir = TemporaryDirectory()
        let spool = Spool(dir.path)
        try spool.create()
        let state = dir.path + "/ledger"
        let smsd = try Tool.start(daemon, ["-c", spool.config])
        defer { Tool.stop(smsd) }

        // One number per case: Gammu names queued files by the second and the number, and SMSD's
        // rename to sent/ replaces a same-named older file, which would hide it from the counts.
        var number = "+34600000001"
        // Longer than one SMS and not GSM-7: linked UCS-2 parts, joined again by the check below.
        let long = "María (room 1) has not answered \"are you OK?\" at the shelter. Please check on them — "
            + String(repeating: "ñ", count: 90)
        func message(_ id: String, _ text: String) -> String {
            #"{"attempt":1,"channel":"sms","created_us":1,"id":"\#(id)","node":"ab","recipients":["\#(number)","room-1"],"text":\#(Tool.jsonString(text))}"#
        }
        let args = ["--smsd-config", spool.config, "--state", state]

        // Delivered: queued by the script, then sent by SMSD through the dummy phone into sent/.
        let first = try Tool.run(Self.sms, args, input: message("room-1/1/text", long))
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains(#"skipping "room-1""#), "a resident id is not a phone number")
        #expect(eventually(seconds: 15) { spool.sent().count == 1 }, "SMSD did not send it: \(spool.log())")
        #expect(spool.sent().first?.number == number)
        #expect(spool.sent().first?.text == long)
        #expect(spool.log().contains("SMS sent on device"), "the dummy phone took it")

        // The same entry again (the node retrying, or a twin): nothing new is queued.
        let again = try Tool.run(Self.sms, args, input: message("room-1/1/text", long))
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("already sent"))
        #expect(spool.queuedOrSent().count == 1)

        // Killed after queueing, before the done marker: the rerun finds it at SMSD and does not
        // queue it again; an identical text to the same number queued just before (another
        // entry) is not taken for it.
        let twin = "Are you OK, Ana? Press the button or check in."
        number = "+34600000002"
        #expect(try Tool.run(Self.sms, args, input: message("room-2/1/prompt", twin)).status == 0)
        waitForTheNextSecond()
        let killed = try Tool.run(Self.sms, args, input: message("room-2/2/prompt", twin), environment: ["VIGIL_NOTIFY_CRASH": "after-send"])
        #expect(killed.signalled == SIGKILL)
        #expect(spool.queuedOrSent().filter { $0.text == twin }.count == 2)
        let rerun = try Tool.run(Self.sms, args, input: message("room-2/2/prompt", twin))
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(rerun.stderr.contains("not sending again"), "\(rerun.stderr)")
        #expect(spool.queuedOrSent().filter { $0.text == twin }.count == 2)

        // Killed after the intent, before queueing: the rerun sends it, once.
        let late = "EMERGENCY for Luis: no answer after the alarm. Emergency triggered."
        number = "+34600000003"
        let early = try Tool.run(Self.sms, args, input: message("room-3/1/notify", late), environment: ["VIGIL_NOTIFY_CRASH": "after-intent"])
        #expect(early.signalled == SIGKILL)
        #expect(spool.queuedOrSent().filter { $0.text == late }.isEmpty)
        let resent = try Tool.run(Self.sms, args, input: message("room-3/1/notify", late))
        #expect(resent.status == 0, "\(resent.stderr)")
        #expect(spool.queuedOrSent().filter { $0.text == late }.count == 1)

        #expect(eventually(seconds: 15) { spool.sent().count == 4 }, "SMSD did not send them all: \(spool.log())")
        #expect(spool.sent().map(\.number).sorted() == ["+34600000001", "+34600000002", "+34600000002", "+34600000003"])
        #expect(spool.sent().filter { $0.text == late }.count == 1)
        #expect(spool.sent().filter { $0.text == twin }.count == 2)
    }

    @Test func smsFailsLoudlyWhenSMSDCannotProveWhatItSent() throws {
        _ = try #require(Tool.find("gammu-smsd-inject"), "gammu-smsd-inject is not installed: run scripts/setup")
        let dir = TemporaryDirectory()
        let spool = Spool(dir.path, keepSent: false)
        try spool.create()
        let message = #"{"id":"room-1/1/text","recipients":["+34600000001"],"text":"hello"}"#
        let r = try Tool.run(Self.sms, ["--smsd-config", spool.config, "--state", dir.path + "/ledger"], input: message)
        #expect(r.status == 1)
        #expect(r.stderr.contains("sentsmspath"), "\(r.stderr)")
        #expect(spool.queuedOrSent().isEmpty)

        let good = Spool(dir.path + "/good")
        try good.create()
        let garbage = try Tool.run(Self.sms, ["--smsd-config", good.config, "--state", dir.path + "/ledger"], input: "$(reboot)")
        #expect(garbage.status == 1)
        #expect(garbage.stderr.contains("not a Vigil outbox message"))
        #expect(good.queuedOrSent().isEmpty)

        // Issue 27: nobody it can reach is not "delivered" (it was exit 0).
        let nobody = #"{"id":"room-1/1/prompt","recipients":["room-1","ana@example.org"],"text":"Are you OK?"}"#
        let unreachable = try Tool.run(Self.sms, ["--smsd-config", good.config, "--state", dir.path + "/ledger"], input: nobody)
        #expect(unreachable.status == 3)
        #expect(unreachable.stderr.contains("nobody this notifier can reach"), "\(unreachable.stderr)")
        #expect(good.queuedOrSent().isEmpty)
    }

    /// Issue 27, item 8: gammu-smsd stopped. A call and its cancel are queued with SMSD in order
    /// but never recorded "delivered" while it is down (the notifier asks gammu-smsd-monitor);
    /// once SMSD runs, it sends each once, in order, and the node records both delivered.
    @Test func withGammuSMSDStoppedACallWaitsInOrderAndGoesOnceWhenItIsBack() throws {
        let daemon = try #require(Tool.find("gammu-smsd"), "gammu-smsd is not installed: run scripts/setup")
        let dir = TemporaryDirectory()
        let spool = Spool(dir.path + "-spool")
        try spool.create()
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "200ms"]).status == 0)
        let config = dir.path + "/vigil.yaml"
        try """
        notify:
          command: \(Self.sms)
          arguments: ["--smsd-config", "\(spool.config)", "--state", "\(dir.path)/notify-ledger"]
          staff: ["+34600000042"]
          retry_base: 1s
          retry_max: 2s
        site:
          name: Shelter North
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let (node, _) = try CLI.start(["run", "--config", config, "--data", dir.path, "--duration", "90s"])
        defer { if node.isRunning { kill(node.processIdentifier, SIGKILL) } }
        // Raised as soon as the node answers (no shelter key: a call for help needs none).
        var raised = ""
        #expect(eventually(seconds: 20) {
            guard let r = try? CLI.run(["alert", "raise", "sos", "--data", dir.path]), r.status == 0 else { return false }
            raised = r.stdout
            return true
        })
        let words = raised.split(separator: " ").map(String.init)
        let id = try #require(words.count > 3 ? words[3] : nil, "\(raised)")
        #expect(eventually(seconds: 20) { spool.queuedOrSent().count == 1 }, "the SOS message is queued with SMSD")
        let cancelled = try CLI.run(["alert", "cancel", id, "--data", dir.path])
        #expect(cancelled.status == 0, "\(cancelled.stderr)")
        #expect(eventually(seconds: 20) { spool.queuedOrSent().count == 2 }, "then its cancel")
        #expect(spool.sent().isEmpty)
        // Retried while SMSD is down, each attempt says why; nothing is delivered.
        func failedAttempts() -> [String] {
            let lines = (try? CLI.run(["log", "tail", "--data", dir.path, "-n", "1000", "--kind", "outbox-attempt", "--json"]).lines) ?? []
            return lines.compactMap { line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      let payload = object["payload"] as? [String: Any], payload["delivered"] as? Bool != true else { return nil }
                return payload["error"] as? String
            }
        }
        #expect(eventually(seconds: 20) { failedAttempts().contains { $0.contains("gammu-smsd, which is not running") } }, "\(failedAttempts())")
        #expect(deliveredEntries(dir).isEmpty)

        let smsd = try Tool.start(daemon, ["-c", spool.config])
        defer { Tool.stop(smsd) }
        #expect(eventually(seconds: 30) { spool.sent().count == 2 }, "SMSD sends the queue: \(spool.log())")
        #expect(eventually(seconds: 30) { deliveredEntries(dir).count == 2 }, "\(deliveredEntries(dir))")
        let sent = spool.sent()
        #expect(sent.map(\.number) == ["+34600000042", "+34600000042"])
        #expect(sent.first?.text.contains("SOS") == true && sent.last?.text.contains("CANCELLED") == true,
                "in order: \(sent.map(\.text))")
        kill(node.processIdentifier, SIGTERM)
        node.waitUntilExit()
        #expect(spool.queuedOrSent().count == 2, "each once, also after the retries")
    }

    // MARK: Webhook

    @Test func webhookPostsWithIdempotencyKeyFailsOn500AndNeverRepeatsADoneEntry() throws {
        let dir = TemporaryDirectory()
        let server = try WebhookServer(dir: dir.path, failFirst: 1)
        defer { server.stop() }
        let headers = dir.path + "/headers"
        try "Authorization: Bearer test-token\n".write(toFile: headers, atomically: true, encoding: .utf8)
        let args = ["--url", server.url + "/hook", "--state", dir.path + "/ledger", "--header-file", headers]
        let message = #"{"attempt":1,"channel":"sms","created_us":5,"id":"room-1/1/prompt","node":"ab","recipients":["room-1"],"text":"Are you OK, \"Ana\"? ñ"}"#

        let failed = try Tool.run(Self.webhook, args, input: message)
        #expect(failed.status != 0, "HTTP 500 is a failed delivery")
        #expect(failed.stderr.contains("HTTP 500"), "\(failed.stderr)")
        let retried = try Tool.run(Self.webhook, args, input: message)
        #expect(retried.status == 0, "\(retried.stderr)")
        let done = try Tool.run(Self.webhook, args, input: message)
        #expect(done.status == 0)
        #expect(done.stderr.contains("already delivered"))

        let requests = server.requests()
        #expect(requests.count == 2, "the done entry made no third request")
        #expect(requests.map(\.key) == ["room-1/1/prompt", "room-1/1/prompt"])
        #expect(requests.map(\.status) == [500, 200])
        #expect(requests.allSatisfy { $0.path == "/hook" && $0.contentType == "application/json" })
        #expect(requests.allSatisfy { $0.authorization == "Bearer test-token" })
        let body = try #require(try JSONSerialization.jsonObject(with: Data(requests[1].body.utf8)) as? [String: Any])
        #expect(body["id"] as? String == "room-1/1/prompt")
        #expect(body["text"] as? String == #"Are you OK, "Ana"? ñ"#)
        #expect(body["recipients"] as? [String] == ["room-1"])

        // Killed after the POST, before the done marker: sent again with the same key, which the
        // receiver deduplicates; killed before the POST: sent once.
        let second = #"{"id":"room-2/1/text","recipients":["+34600000002"],"text":"Luis has not answered"}"#
        let killed = try Tool.run(Self.webhook, args, input: second, environment: ["VIGIL_NOTIFY_CRASH": "after-send"])
        #expect(killed.signalled == SIGKILL)
        #expect(try Tool.run(Self.webhook, args, input: second).status == 0)
        let third = #"{"id":"room-3/1/text","recipients":["+34600000003"],"text":"Eva has not answered"}"#
        let early = try Tool.run(Self.webhook, args, input: third, environment: ["VIGIL_NOTIFY_CRASH": "after-intent"])
        #expect(early.signalled == SIGKILL)
        #expect(try Tool.run(Self.webhook, args, input: third).status == 0)
        let all = server.requests()
        #expect(all.filter { $0.key == "room-2/1/text" }.map(\.outcome) == ["delivered", "duplicate"])
        #expect(all.filter { $0.key == "room-3/1/text" }.map(\.outcome) == ["delivered"])
    }

    @Test func webhookRefusesBadArgumentsAndHostileIds() throws {
        let dir = TemporaryDirectory()
        let message = #"{"id":"x","recipients":[],"text":"t"}"#
        #expect(try Tool.run(Self.webhook, ["--url", "file:///etc/passwd"], input: message).status == 1)
        #expect(try Tool.run(Self.webhook, ["--url", "http://127.0.0.1:9/", "--header", "X: a\nY: b"], input: message).status == 1)
        let hostile = #"{"id":"a\r\nX-Injected: 1","recipients":[],"text":"t"}"#
        let r = try Tool.run(Self.webhook, ["--url", "http://127.0.0.1:9/", "--state", dir.path], input: hostile)
        #expect(r.status == 1)
        #expect(r.stderr.contains("header"), "\(r.stderr)")
    }

    // MARK: End to end through a running node

    @Test func aRunningNodeDeliversThePromptThroughTheWebhookOnce() throws {
        let dir = TemporaryDirectory()
        let server = try WebhookServer(dir: dir.path + "-server", failFirst: 0)
        defer { server.stop() }
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "200ms"]).status == 0)
        let config = dir.path + "/vigil.yaml"
        try """
        notify:
          command: \(Self.webhook)
          arguments: ["--url", "\(server.url)/vigil", "--state", "\(dir.path)/notify-ledger"]
          retry_base: 1s
        """.write(toFile: config, atomically: true, encoding: .utf8)
        // At 60x the first "are you OK?" is due about a second after the start; the confirm
        // window is long, so the prompt is the only message during the run.
        let add = try CLI.run(["resident", "add", "room-7", "--name", "Ana", "--interval", "1m", "--confirm", "6h",
                               "--contact", "Luis=+34600000000", "--address", "+34600000999", "--data", dir.path])
        #expect(add.status == 0, "\(add.stderr)")

        let (node, _) = try CLI.start(["run", "--config", config, "--data", dir.path, "--time-scale", "60", "--duration", "30s"])
        defer { if node.isRunning { kill(node.processIdentifier, SIGKILL) } }
        #expect(eventually(seconds: 20) { deliveredEntries(dir) == ["room-7/1/prompt"] }, "\(server.requests())")
        kill(node.processIdentifier, SIGTERM)
        node.waitUntilExit()

        let requests = server.requests()
        #expect(requests.map(\.key) == ["room-7/1/prompt"], "exactly one request")
        #expect(requests.first?.path == "/vigil")
        let body = try #require(try JSONSerialization.jsonObject(with: Data((requests.first?.body ?? "").utf8)) as? [String: Any])
        #expect(body["text"] as? String == "Are you OK, Ana? Reply OK, press the button or check in.")
        #expect(body["attempt"] as? Int == 1)
    }

    /// Issue 27: a webhook recipient takes a call by calling back. The message the shipped webhook
    /// notifier POSTs to a local HTTP server carries a take link; a forged callback to the box's
    /// page is refused (403) and counted, the real one takes the call (via webhook), and the
    /// TAKEN message reaches the webhook too.
    @Test func aWebhookTakesACallByCallingTheBoxBackAndAForgedCallbackIsRefused() throws {
        let curl = try #require(Tool.find("curl"), "curl is not installed: run scripts/setup")
        let dir = TemporaryDirectory()
        let server = try WebhookServer(dir: dir.path + "-server", failFirst: 0)
        defer { server.stop() }
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "200ms"]).status == 0)
        let port = try Self.freeLocalPort()
        let hook = "\(server.url)/staff-hook"
        let config = try Self.writeStaffWebhookConfig(dir, hook: hook, pagePort: port, publicURL: true)
        let (node, _) = try CLI.start(["run", "--config", config, "--data", dir.path, "--duration", "60s"])
        defer { if node.isRunning { kill(node.processIdentifier, SIGKILL) } }
        #expect(eventually(seconds: 15) { (try? CLI.run(["sim", "press", "sos", "--data", dir.path]).status) == 0 })
        #expect(eventually(seconds: 20) { !server.requests().isEmpty }, "the webhook got the call")
        let opening = try #require(try JSONSerialization.jsonObject(with: Data((server.requests().first?.body ?? "").utf8)) as? [String: Any])
        let take = try #require(opening["take"] as? [String: Any], "\(opening)")
        let url = try #require(take["url"] as? String)
        #expect(url == "http://127.0.0.1:\(port)/api/v1/callbacks/take")
        let call = try #require(take["call"] as? String), token = try #require(take["token"] as? String)

        func post(_ body: [String: String]) throws -> Int {
            let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
            let r = try Tool.run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Content-Type: application/json",
                                        "--data-binary", "@-", url], input: json)
            return Int(r.stdout) ?? -1
        }
        let forged = String(repeating: "a", count: 64)
        #expect(try post(["call": call, "recipient": hook, "token": forged, "by": "Mallory"]) == 403)
        #expect(try post(["call": call, "recipient": hook]) == 400, "no token")
        #expect(try CLI.run(["status", "--data", dir.path]).stdout.contains("webhook callbacks: 0 taken, 1 refused"))
        #expect(try post(["call": call, "recipient": hook, "token": token, "by": "Ana (staff chat)"]) == 200)
        #expect(try post(["call": call, "recipient": hook, "token": token, "by": "Ana (staff chat)"]) == 409, "taken once")
        #expect(eventually(seconds: 20) {
            server.requests().contains { $0.body.contains("Taken by Ana (staff chat) (by webhook)") }
        }, "the webhook learns who took it: \(server.requests().map(\.body))")
        kill(node.processIdentifier, SIGTERM)
        node.waitUntilExit()

        let takings = try CLI.run(["log", "tail", "--data", dir.path, "-n", "1000", "--kind", "alert-taken", "--json"]).lines
        #expect(takings.count == 1, "\(takings)")
        #expect(takings.first?.contains("Mallory") == false)
        #expect(try CLI.run(["replay", "--data", dir.path]).status == 0)
    }

    /// DIR/vigil.yaml for a node that tells staff through the shipped webhook notifier at `hook`
    /// and serves its page over plain HTTP on loopback (`publicURL`: take links under it).
    static func writeStaffWebhookConfig(_ dir: TemporaryDirectory, hook: String, pagePort: Int, publicURL: Bool) throws -> String {
        let config = dir.path + "/vigil.yaml"
        try """
        notify:
          command: \(webhook)
          arguments: ["--url", "\(hook)", "--state", "\(dir.path)/notify-ledger"]
          staff: ["\(hook)"]
          retry_base: 1s
        http:
          listen: 127.0.0.1:\(pagePort)
          tls: false
        """.write(toFile: config, atomically: true, encoding: .utf8)
        if publicURL {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: config))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("\n  public_url: http://127.0.0.1:\(pagePort)/\n".utf8))
            try handle.close()
        }
        return config
    }

    /// A TCP port nobody listens on now (the kernel's pick, released at once).
    static func freeLocalPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw WebhookServer.ServerError(message: "socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw WebhookServer.ServerError(message: "bind: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func waitForTheNextSecond() {
        let now = Date().timeIntervalSince1970
        usleep(useconds_t((now.rounded(.down) + 1.05 - now) * 1_000_000))
    }

    /// Entries with a delivered outbox-attempt by the command notifier, from `vigil log tail --json`.
    func deliveredEntries(_ dir: TemporaryDirectory) -> [String] {
        let lines = (try? CLI.run(["log", "tail", "--data", dir.path, "-n", "1000", "--kind", "outbox-attempt", "--json"]).lines) ?? []
        return lines.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let payload = object["payload"] as? [String: Any], payload["delivered"] as? Bool == true,
                  payload["notifier"] as? String == "command" else { return nil }
            return payload["entry"] as? String
        }
    }
}

/// Running programs from the tests.
enum Tool {
    struct Result {
        var status: Int32
        /// The signal that ended it, if one did.
        var signalled: Int32?
        var stdout: String
        var stderr: String
    }

    /// An executable from Debian's packages (what scripts/setup installs), else one on PATH.
    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let dirs = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"] + path.split(separator: ":").map(String.init)
        return dirs.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func run(_ path: String, _ arguments: [String], input: String, environment: [String: String] = [:]) throws -> Result {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let stdin = Pipe(), out = Pipe(), err = Pipe()
        process.standardInput = stdin
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // A program that refuses its arguments exits without reading: EPIPE then, not a crash.
        signal(SIGPIPE, SIG_IGN)
        try? stdin.fileHandleForWriting.write(contentsOf: Data((input.hasSuffix("\n") ? input : input + "\n").utf8))
        try? stdin.fileHandleForWriting.close()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let signalled = process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil
        return Result(status: process.terminationStatus, signalled: signalled,
                      stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Starts a daemon in the foreground; `stop` ends it.
    static func start(_ path: String, _ arguments: [String]) throws -> TestProcess {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// SIGKILL: the fixtures keep nothing worth a clean stop, and children of the test process
    /// inherit a signal mask that blocks SIGTERM, so it would not arrive anyway.
    static func stop(_ process: TestProcess) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    static func jsonString(_ s: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: [s], options: [.withoutEscapingSlashes])
        return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
    }
}

/// A gammu-smsd FILES spool on the dummy phone driver, all in a temporary directory.
struct Spool {
    let base: String
    let keepSent: Bool
    var config: String { base + "/smsdrc" }

    init(_ base: String, keepSent: Bool = true) {
        self.base = base
        self.keepSent = keepSent
    }

    func create() throws {
        for sub in ["phone", "inbox", "outbox", "sent", "error"] {
            try FileManager.default.createDirectory(atPath: base + "/" + sub, withIntermediateDirectories: true)
        }
        // The dummy driver emulates a phone on a directory: sending always succeeds. Short
        // timeouts so the daemon looks at its outbox every second.
        try """
        [gammu]
        model = dummy
        connection = none
        device = \(base)/phone/

        [smsd]
        service = files
        logfile = \(base)/smsd.log
        debuglevel = 1
        commtimeout = 1
        loopsleep = 1
        checksecurity = 0
        inboxpath = \(base)/inbox/
        outboxpath = \(base)/outbox/
        \(keepSent ? "sentsmspath = \(base)/sent/" : "")
        errorsmspath = \(base)/error/

        """.write(toFile: config, atomically: true, encoding: .utf8)
    }

    struct SMS: Equatable {
        var name: String
        var number: String
        var text: String
    }

    /// Messages SMSD has transmitted, oldest first (the names start with the time).
    func sent() -> [SMS] { read(base + "/sent") }

    /// Messages queued or sent, each once (SMSD renames them from outbox to sent meanwhile).
    func queuedOrSent() -> [SMS] {
        var byName: [String: SMS] = [:]
        for sms in read(base + "/outbox") + read(base + "/sent") { byName[sms.name] = sms }
        return byName.values.sorted { $0.name < $1.name }
    }

    func log() -> String { (try? String(contentsOfFile: base + "/smsd.log", encoding: .utf8)) ?? "" }

    /// Gammu's .smsbackup files: the number, and the text as UTF-16BE hex in Text00, Text01 ...
    /// of each part, in order.
    private func read(_ dir: String) -> [SMS] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".smsbackup") }.sorted()
        return names.compactMap { name in
            guard let content = try? String(contentsOfFile: dir + "/" + name, encoding: .utf8) else { return nil }
            // SMSD rewrites the file while sending linked parts and may repeat a part's section:
            // the last copy of each [SMSBackupNNN] counts.
            var number = "", part = 0, parts: [Int: String] = [:]
            for line in content.split(whereSeparator: \.isNewline) { // Gammu writes CRLF
                if line.hasPrefix("[SMSBackup") {
                    part = Int(line.dropFirst("[SMSBackup".count).prefix { $0.isNumber }) ?? 0
                    parts[part] = ""
                } else if line.hasPrefix("Number = ") {
                    number = line.dropFirst("Number = ".count).trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
                } else if line.hasPrefix("Text"), let eq = line.range(of: " = ") {
                    parts[part, default: ""] += line[eq.upperBound...].trimmingCharacters(in: .whitespaces)
                }
            }
            let hex = parts.keys.sorted().map { parts[$0]! }.joined()
            let bytes = stride(from: 0, to: hex.count - 1, by: 2).compactMap { i -> UInt8? in
                let start = hex.index(hex.startIndex, offsetBy: i)
                return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)
            }
            let units = stride(from: 0, to: bytes.count - 1, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
            return SMS(name: name, number: number, text: String(decoding: units, as: UTF16.self))
        }
    }
}

/// A local HTTP server (python3's standard library) that records every POST as a JSON line,
/// answers 500 to the first `failFirst` requests, and deduplicates by Idempotency-Key the way a
/// receiver should: a key it has delivered is answered 200 and recorded as a duplicate.
final class WebhookServer {
    let dir: String
    let process: TestProcess
    let port: Int
    var url: String { "http://127.0.0.1:\(port)" }

    struct Request {
        var path: String
        var key: String
        var contentType: String
        var authorization: String
        var body: String
        var status: Int
        var outcome: String
    }

    init(dir: String, failFirst: Int) throws {
        let python = try #require(Tool.find("python3"), "python3 is not installed: run scripts/setup")
        self.dir = dir
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Self.script.write(toFile: dir + "/server.py", atomically: true, encoding: .utf8)
        process = try Tool.start(python, [dir + "/server.py", dir + "/port", dir + "/requests.jsonl", String(failFirst)])
        let portFile = dir + "/port"
        guard eventually(seconds: 10, { FileManager.default.fileExists(atPath: portFile) }),
              let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) else {
            Tool.stop(process)
            throw ServerError(message: "the test HTTP server did not start")
        }
        self.port = port
    }

    struct ServerError: Error, CustomStringConvertible { var message: String; var description: String { message } }

    func stop() {
        Tool.stop(process)
        try? FileManager.default.removeItem(atPath: dir)
    }

    func requests() -> [Request] {
        let text = (try? String(contentsOfFile: dir + "/requests.jsonl", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return Request(path: o["path"] as? String ?? "", key: o["key"] as? String ?? "",
                           contentType: o["content_type"] as? String ?? "", authorization: o["authorization"] as? String ?? "",
                           body: o["body"] as? String ?? "", status: o["status"] as? Int ?? 0, outcome: o["outcome"] as? String ?? "")
        }
    }

    static let script = #"""
    import http.server, json, os, sys, threading

    port_file, log_file, fail_first = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lock = threading.Lock()
    count = 0
    delivered = set()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            global count
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            key = self.headers.get("Idempotency-Key", "")
            with lock:
                count += 1
                if count <= fail_first:
                    status, outcome = 500, "failed"
                elif key and key in delivered:
                    status, outcome = 200, "duplicate"
                else:
                    delivered.add(key)
                    status, outcome = 200, "delivered"
                with open(log_file, "a") as f:
                    f.write(json.dumps({"path": self.path, "key": key, "content_type": self.headers.get("Content-Type", ""),
                                        "authorization": self.headers.get("Authorization", ""),
                                        "body": body.decode("utf-8", "replace"), "status": status, "outcome": outcome}) + "\n")
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()
    """#
}
