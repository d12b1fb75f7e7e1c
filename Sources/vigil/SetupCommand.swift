import ArgumentParser
import Foundation
import VigilHubProtocol
import VigilNode
import VigilSystem
import VigilWeb

/// `vigil setup`: what a shelter box needs, asked one question at a time (or taken from options,
/// for a scripted install), each answer checked as it is given (`NodeSetup`), then written to
/// the configuration file in one durable replace that keeps its comments and every setting it
/// did not ask about. Re-runnable: each question offers the file's current value.
struct SetupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "setup",
        abstract: "Set up this box: board, site, staff, notifier, the page's admin password, a hub (docs/install.md).",
        discussion: """
        Asks each question in turn, showing what the configuration has now (Enter keeps it), and \
        asks again when an answer cannot be used, saying why. Nothing is written until every \
        answer is checked; then the file is replaced whole, its comments and other settings kept. \
        With --non-interactive nothing is asked: what the options give is set, the rest is kept. \
        Secrets (the admin password, a hub's enrolment token) come from a file or standard input \
        (-), never from the command line.
        """)

    @Option(help: "The configuration file to write.")
    var config = "/etc/vigil/vigil.yaml"

    @Option(help: "The box's data directory, for the page's password and a hub link (default: `data:` from the file when it is absolute; /var/lib/vigil, where the service runs, for a file in /etc; else `data:`).")
    var data: String?

    @Flag(help: "Ask nothing; set only what the options give (scripted installs).")
    var nonInteractive = false

    @Option(help: "Board profile: sim, rpi4, rpi5, zero2w, or a path to a profile.")
    var board: String?

    @Option(help: "The Bluetooth adapter: hci0 (a name) or AA:BB:CC:DD:EE:FF (an address); sim only with the simulated board.")
    var radio: String?

    @Option(name: .customLong("site-name"), help: "The shelter's name, as messages name it.")
    var siteName: String?

    @Option(name: .customLong("site-location"), help: "The shelter's place, LATITUDE,LONGITUDE in degrees.")
    var siteLocation: String?

    @Option(help: "The staff's phone numbers, comma-separated, in international form (+34 600 111 222).")
    var staff: String?

    @Option(help: "The notifier command (an absolute path), or none.")
    var notifier: String?

    @Option(help: "The box's page, HOST:PORT (0.0.0.0:8443), or none.")
    var page: String?

    @Option(name: .customLong("admin-password-file"), help: "A file holding the page's admin password, or - for standard input.")
    var adminPasswordFile: String?

    @Option(name: .customLong("hub-url"), help: "Join the hub at https://HOST:PORT.")
    var hubURL: String?

    @Option(name: .customLong("hub-token-file"), help: "A file holding the hub's enrolment token (`vigil-hub enroll`), or -.")
    var hubTokenFile: String?

    func run() async throws {
        try await reportingErrors {
            // A link is edited where it points, and stays a link.
            let config = URL(fileURLWithPath: self.config).resolvingSymlinksInPath().path
            let existing = try Self.read(config)
            var current: NodeConfiguration
            do {
                current = try existing.isEmpty ? NodeConfiguration() : NodeConfiguration.load(text: existing, file: config, resolvingBoard: false)
                // A profile that is not (or no longer) there is a board to choose again, not a
                // file setup cannot touch.
                if current.boardChosen, (try? NodeSetup.checkBoard(current.boardName, configFile: config)) == nil { current.boardName = "" }
            } catch {
                throw CLIError("\(config) cannot be read as it is (\(error)); mend it first, setup changes nothing until then", code: 78)
            }
            var answers = try nonInteractive ? fromOptions(current, config) : try ask(current, config)
            let text: String
            do {
                text = try answers.setup.apply(to: existing, file: config)
            } catch {
                throw CLIError("\(error); \(config) is unchanged", code: 78)
            }
            if text != existing {
                try Self.write(text, to: config)
                FileOutput.standardOutput.write("wrote \(config)\n")
            } else {
                FileOutput.standardOutput.write("\(config) already says that; unchanged\n")
            }
            var configuration = try NodeConfiguration.load(text: text, file: config)
            configuration.dataDirectory = Self.dataDirectory(data, configured: configuration.dataDirectory, file: config)
            if let password = answers.password {
                try FileSystem.createDirectory(configuration.dataDirectory)
                try WebCredentials(dataDirectory: configuration.dataDirectory).setPassword(password)
                answers.password = nil
                FileOutput.standardOutput.write("the page's admin password is set (in \(configuration.dataDirectory))\n")
            }
            if let (url, token) = answers.hub {
                try await HubCommand.join(url: url, token: token, location: nil, configuration: configuration)
            }
            Self.giveToTheDataDirectoryOwner(configuration.dataDirectory)
            FileOutput.standardOutput.write(Self.nextSteps(configuration, file: config))
        }
    }

    /// Checked answers, and the secrets that are not written to the file.
    struct Answers {
        var setup = NodeSetup()
        var password: String?
        var hub: (String, EnrolmentToken)?
    }

    /// `--non-interactive`: each option given, checked; the first refusal ends the run with
    /// nothing written.
    func fromOptions(_ current: NodeConfiguration, _ config: String) throws -> Answers {
        var a = Answers()
        func checked<T>(_ flag: String, _ body: () throws(SetupRefusal) -> T) throws -> T {
            do { return try body() } catch { throw CLIError("--\(flag): \(error); nothing was written", code: 64) }
        }
        if let board { a.setup.board = try checked("board") { () throws(SetupRefusal) in try NodeSetup.checkBoard(board, configFile: config) } }
        let board = a.setup.board ?? current.boardName
        guard !board.isEmpty else { throw CLIError("--board: \(config) names no board yet, so one is needed; nothing was written", code: 64) }
        let simulated = NodeSetup.isSimulated(board: board, configFile: config)
        if let radio {
            a.setup.radio = try checked("radio") { () throws(SetupRefusal) in try NodeSetup.checkRadio(radio, boardIsSimulated: simulated) }
        } else if !simulated, current.radio == "sim" {
            // A real board with the file's simulated radio is refused, as it is when asked.
            throw CLIError("--radio: the board is \(board) and the file's radio is simulated: give the adapter (hci0); nothing was written", code: 64)
        }
        if let siteName { a.setup.siteName = try checked("site-name") { () throws(SetupRefusal) in try NodeSetup.checkSiteName(siteName) } }
        if let siteLocation { a.setup.siteLocation = try checked("site-location") { () throws(SetupRefusal) in try NodeSetup.checkLocation(siteLocation) } }
        if let staff { a.setup.staff = try checked("staff") { () throws(SetupRefusal) in try NodeSetup.checkStaff(staff) } }
        if let notifier { a.setup.notifier = try checked("notifier") { () throws(SetupRefusal) in try NodeSetup.checkNotifier(notifier) } }
        if let page { a.setup.pageListen = try checked("page") { () throws(SetupRefusal) in try NodeSetup.checkPageListen(page) } }
        if let adminPasswordFile {
            let text = try SecretInput.read(adminPasswordFile, what: "the admin password")
            a.password = try checked("admin-password-file") { () throws(SetupRefusal) in try NodeSetup.checkPassword(text) }
        }
        switch (hubURL, hubTokenFile) {
        case (nil, nil): break
        case (let url?, let tokenFile?):
            let checkedURL = try checked("hub-url") { () throws(SetupRefusal) in try NodeSetup.checkHubURL(url) }
            a.hub = (checkedURL, try HubCommand.token(SecretInput.read(tokenFile, what: "the enrolment token")))
        default:
            throw CLIError("--hub-url and --hub-token-file go together; nothing was written", code: 64)
        }
        return a
    }

    /// The questions, in order, each offering what the file has now.
    func ask(_ current: NodeConfiguration, _ config: String) throws -> Answers {
        var a = Answers()
        let prompt = Prompt()
        FileOutput.standardOutput.write("Setting up \(config). Enter keeps the value in [brackets].\n")
        a.setup.board = try prompt.ask("Board profile (sim, rpi4, rpi5, zero2w, or a path)", now: current.boardName) { (answer: String) throws(SetupRefusal) in
            try NodeSetup.checkBoard(answer, configFile: config)
        }
        let board = a.setup.board ?? current.boardName
        // Moving from the simulated board, the adapter most boxes have is offered.
        let simulated = NodeSetup.isSimulated(board: board, configFile: config)
        let radioNow = !simulated && current.radio == "sim" ? "hci0" : current.radio
        a.setup.radio = try prompt.ask("Bluetooth adapter (hci0, an address, or sim with the sim board)", now: radioNow) { (answer: String) throws(SetupRefusal) in
            try NodeSetup.checkRadio(answer, boardIsSimulated: simulated)
        }
        a.setup.siteName = try prompt.ask("The shelter's name", now: current.projections.ladder.siteName, NodeSetup.checkSiteName)
        a.setup.siteLocation = try prompt.ask("Its place, LATITUDE,LONGITUDE (empty: none)", now: current.projections.ladder.siteLocation, NodeSetup.checkLocation)
        a.setup.staff = try prompt.ask("Staff phone numbers, comma-separated (+34 600 111 222)",
                                       now: current.projections.ladder.staff.joined(separator: ", "), NodeSetup.checkStaff)
        a.setup.notifier = try prompt.ask("Notifier command (an absolute path, or none)", now: current.notifier.command ?? "none", NodeSetup.checkNotifier)
        a.setup.pageListen = try prompt.ask("The box's page, HOST:PORT (or none)", now: current.http.listen ?? "none", NodeSetup.checkPageListen)
        if a.setup.pageListen?.isEmpty == false {
            a.password = try prompt.askSecret("Admin password for the page (at least 10 characters; Enter: leave it as it is)", NodeSetup.checkPassword)
        }
        // Only what changed is written: a value kept keeps its line exactly as it was.
        a.setup = a.setup.changes(from: current)
        if let url = try prompt.ask("Join a hub: its address, https://HOST:PORT (Enter: no)", now: "", keepsNothing: true, NodeSetup.checkHubURL) {
            let token = try prompt.askToken()
            a.hub = (url, token)
        }
        return a
    }

    // MARK: The file

    static func read(_ path: String) throws -> String {
        guard FileSystem.exists(path) else { return "" }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw CLIError("cannot read \(path) as UTF-8 text", code: 66)
        }
        return text
    }

    /// Replaced whole and durably, with the owner and mode it had. A new file is 0640, group
    /// `vigil` where that group exists (the service reads it; staff numbers are personal data),
    /// in a directory made if missing (0755). An existing file others may read is said to be so.
    static func write(_ text: String, to path: String) throws {
        let now = FileSystem.ownerAndMode(path)
        // Group `vigil` only as root: anyone else may not give a file to a group they are not in.
        let owner = now?.owner ?? (effectiveUserID() == 0 ? FileSystem.groupID(named: "vigil").map { FileSystem.FileOwner(user: 0, group: $0) } : nil)
        let mode = now?.mode ?? 0o640
        let directory = (path as NSString).deletingLastPathComponent
        do {
            if !directory.isEmpty && !FileSystem.exists(directory) {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o755])
            }
            try FileSystem.replaceDurably(path, contents: Array(text.utf8), mode: mode, owner: owner)
        } catch {
            throw CLIError("cannot write \(path): \(error); it is unchanged", code: 73)
        }
        if mode & 0o004 != 0 {
            FileOutput.standardError.write("note: every user of this machine can read \(path) and the staff numbers in it (chmod o-r \(path))\n")
        }
    }

    /// Where the password and a hub link go: `--data`, else the file's `data:` when absolute, else
    /// /var/lib/vigil for a file in /etc (the service runs there), else `data:` as it stands.
    static func dataDirectory(_ option: String?, configured: String, file: String) -> String {
        if let option { return option }
        if configured.hasPrefix("/") { return configured }
        return file.hasPrefix("/etc/") ? "/var/lib/vigil" : configured
    }

    /// Run as root for a data directory another user owns (the service's `vigil`): what setup
    /// made in it (the password, the hub link, the box's identity) is given to that owner, or the
    /// service could not read it.
    static func giveToTheDataDirectoryOwner(_ directory: String) {
        guard effectiveUserID() == 0, let owner = FileSystem.ownerAndMode(directory)?.owner, owner.user != 0 else { return }
        for name in ["http", "http/admin.hash", "hub.json", "node-id", "box.key", "box.cert", "network.pub"] {
            let path = directory + "/" + name
            guard FileSystem.ownerAndMode(path) != nil else { continue }
            do {
                try FileSystem.changeOwner(path, to: owner)
            } catch {
                FileOutput.standardError.write("note: \(path) stays root's (\(error)); the service may not read it\n")
            }
        }
    }

    static func nextSteps(_ configuration: NodeConfiguration, file: String) -> String {
        var lines = ["next: `sudo systemctl restart vigil` (a box installed from the package), or `vigil run --config \(file)`;",
                     "      `vigil status` says how it is, `vigil calls test` sends the staff a test message"]
        if configuration.notifier.command == nil { lines.append("note: with no notifier nobody is told of a call for help; amber says so") }
        if configuration.projections.ladder.staff.isEmpty { lines.append("note: no staff numbers: calls for help have nobody to reach") }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Questions at the terminal (or from a script on standard input): a refused answer is told on
/// standard error and asked again; the end of input ends the run with nothing written.
struct Prompt {
    /// At most this many tries of one question: a script that answers wrong for ever stops.
    static let tries = 5

    func ask<T>(_ question: String, now: String, keepsNothing: Bool = false,
                _ check: (String) throws(SetupRefusal) -> T) throws -> T? {
        for _ in 0..<Self.tries {
            FileOutput.standardOutput.write(keepsNothing || now.isEmpty ? "\(question): " : "\(question) [\(now)]: ")
            guard let line = readLine(strippingNewline: true) else {
                throw CLIError("the answers ended before setup did; nothing was written", code: 66)
            }
            let answer = line.isEmpty ? now : line
            if keepsNothing && answer.isEmpty { return nil }
            do {
                return try check(answer)
            } catch {
                FileOutput.standardError.write("  \(error)\n")
            }
        }
        throw CLIError("no usable answer to \"\(question)\" in \(Self.tries) tries; nothing was written", code: 64)
    }

    /// A secret, not echoed at a terminal; Enter leaves it as it is (nil).
    func askSecret(_ question: String, _ check: (String) throws(SetupRefusal) -> String) throws -> String? {
        for _ in 0..<Self.tries {
            FileOutput.standardOutput.write("\(question): ")
            let line = try Terminal.withoutEcho(STDIN_FILENO) { readLine(strippingNewline: true) }
            if Terminal.isTerminal(STDIN_FILENO) { FileOutput.standardOutput.write("\n") }
            guard let line else { throw CLIError("the answers ended before setup did; nothing was written", code: 66) }
            if line.isEmpty { return nil }
            let secret: String
            do {
                secret = try check(line)
            } catch {
                FileOutput.standardError.write("  \(error)\n")
                continue
            }
            // Typed unseen: a slip would lock the volunteer out, so it is typed twice.
            FileOutput.standardOutput.write("Again, to be sure: ")
            let again = try Terminal.withoutEcho(STDIN_FILENO) { readLine(strippingNewline: true) }
            if Terminal.isTerminal(STDIN_FILENO) { FileOutput.standardOutput.write("\n") }
            if again == secret { return secret }
            FileOutput.standardError.write("  the two did not match\n")
        }
        throw CLIError("no usable answer to \"\(question)\" in \(Self.tries) tries; nothing was written", code: 64)
    }

    func askToken() throws -> EnrolmentToken {
        for _ in 0..<Self.tries {
            FileOutput.standardOutput.write("The hub's enrolment token (`vigil-hub enroll NAME` printed it): ")
            let line = try Terminal.withoutEcho(STDIN_FILENO) { readLine(strippingNewline: true) }
            if Terminal.isTerminal(STDIN_FILENO) { FileOutput.standardOutput.write("\n") }
            guard let line else { throw CLIError("the answers ended before setup did; nothing was written", code: 66) }
            if let token = EnrolmentToken(text: line.trimmingCharacters(in: .whitespaces)) { return token }
            FileOutput.standardError.write("  that is not an enrolment token (vigil1.SECRET.FINGERPRINT)\n")
        }
        throw CLIError("no enrolment token in \(Self.tries) tries; nothing was written", code: 64)
    }
}
