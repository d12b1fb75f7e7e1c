import ArgumentParser
import Foundation
import Logging
import VigilHub
import VigilSystem
import VigilWarningFeeds
import Yams

@main
struct VigilHubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vigil-hub",
        abstract: "The shelter network's hub: boxes sync with it, coordinators see every box (docs/hub.md).",
        subcommands: [Serve.self, Enroll.self, Revoke.self, Coordinator.self, Keys.self]
    )
}

/// Options every subcommand shares.
struct HubOptions: ParsableArguments {
    @Option(name: .long, help: "The hub's data directory: its TLS identity and, without database.url, its PostgreSQL cluster.")
    var data: String = "./hub-data"

    @Option(name: .long, help: "A YAML file with database.url and listen (default: DATA/hub.yaml if it exists).")
    var config: String?

    @Option(name: .long, help: "postgres://USER@HOST:PORT/DATABASE: use this server instead of a cluster of the hub's own. Without a password: a command line is readable by every user (use --database-url-file or hub.yaml's database.url for one).")
    var databaseURL: String?

    @Option(name: .long, help: "A file holding the database URL (with its password), or - to read it from standard input.")
    var databaseURLFile: String?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func hubConfiguration() throws -> HubConfiguration {
        var c = HubConfiguration(dataDirectory: data)
        let path = config ?? data + "/hub.yaml"
        if FileManager.default.fileExists(atPath: path) {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            guard let root = try Yams.load(yaml: text) as? [String: Any] else {
                throw ValidationError("\(path): expected a mapping")
            }
            for key in root.keys where !["database", "listen", "connections", "clock_synchronised_file", "cap", "warnings"].contains(key) {
                throw ValidationError("\(path): unknown key \(key)")
            }
            if let database = root["database"] as? [String: Any] {
                for key in database.keys where !["url", "request_seconds"].contains(key) {
                    throw ValidationError("\(path): unknown key database.\(key)")
                }
                c.databaseURL = database["url"] as? String
                if let value = database["request_seconds"] {
                    guard let n = value as? Int, (1...25).contains(n) else {
                        throw ValidationError("\(path): database.request_seconds must be a whole number from 1 to 25 (under a box's 30 s read timeout)")
                    }
                    c.databaseRequestSeconds = Double(n)
                }
            }
            if let listen = root["listen"] as? String { try c.setListen(listen) }
            if let warnings = root["warnings"] { c.warningFeeds = try Self.warningFeeds(warnings, path: path) }
            if let cap = root["cap"] {
                guard let mapping = cap as? [String: Any], mapping.keys.allSatisfy({ $0 == "public" }), let open = mapping["public"] as? Bool else {
                    throw ValidationError("\(path): cap takes one key, public: true or false (may anyone read /cap.atom)")
                }
                c.capPublic = open
            }
            if let value = root["clock_synchronised_file"] {
                guard let file = value as? String, file.hasPrefix("/") else {
                    throw ValidationError("\(path): clock_synchronised_file must be an absolute path")
                }
                c.clockSynchronisedFile = file
            }
            if let connections = root["connections"] as? [String: Any] {
                func count(_ key: String, _ range: ClosedRange<Int>) throws -> Int? {
                    guard let value = connections[key] else { return nil }
                    guard let n = value as? Int, range.contains(n) else {
                        throw ValidationError("\(path): connections.\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
                    }
                    return n
                }
                for key in connections.keys where !["total", "per_client", "idle_timeout_seconds"].contains(key) {
                    throw ValidationError("\(path): unknown key connections.\(key)")
                }
                if let n = try count("total", 16...1_000_000) { c.connections.total = n }
                if let n = try count("per_client", 1...1_000_000) { c.connections.perClient = n }
                if let n = try count("idle_timeout_seconds", 5...3_600) { c.connections.idleTimeoutSeconds = n }
            }
        }
        if let databaseURL {
            if URLComponents(string: databaseURL)?.password != nil {
                throw ValidationError("--database-url carries a password, which every user of this machine can read on the command line (ps): "
                                      + "put the URL in --database-url-file FILE (or - for standard input), or in hub.yaml's database.url")
            }
            c.databaseURL = databaseURL
        }
        if let databaseURLFile { c.databaseURL = try SecretInput.read(databaseURLFile, what: "the database URL") }
        return c
    }

    /// Logs go to stderr (stdout carries the one "listening" line scripts read), for every
    /// library the hub uses.
    func logger() -> Logger {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "vigil-hub")
    }
}

/// A box's or a coordinator's name: 1 to 64 letters, digits and the characters in `also`.
func validateName(_ name: String, also: String, described: String) throws {
    guard !name.isEmpty, name.count <= 64, name.allSatisfy({ $0.isLetter || $0.isNumber || also.contains($0) }) else {
        throw ValidationError("NAME: 1 to 64 letters, digits, \(described)")
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the hub (HTTPS).")

    @OptionGroup var options: HubOptions

    @Option(name: .long, help: "HOST:PORT to listen on (default 0.0.0.0:8443).")
    var listen: String?

    func run() async throws {
        var c = try options.hubConfiguration()
        if let listen { try c.setListen(listen) }
        // A reader of stdout that went away must not kill the hub.
        signal(SIGPIPE, SIG_IGN)
        try await Hub.run(c, logger: options.logger()) { port, fingerprint in
            // One line for scripts and tests that start the hub on port 0; the identity boxes pin
            // (`vigil hub add URL --fingerprint`).
            FileHandle.standardOutput.write(Data("vigil-hub: listening on port \(port), certificate \(fingerprint)\n".utf8))
        }
    }
}

struct Enroll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make a single-use token for a new box called NAME; the token is the last line printed.")

    @OptionGroup var options: HubOptions

    @Argument(help: "The box's name at the hub (unique).")
    var name: String

    func validate() throws { try validateName(name, also: "-_. ", described: "spaces, '-', '_' or '.'") }

    func run() async throws {
        let token = try await Hub.enrol(name: name, configuration: try options.hubConfiguration(), logger: options.logger())
        print("On the box: vigil hub join https://HUB-ADDRESS:8443 --token-file - (then paste it; single use, valid 7 days). TOKEN:")
        print(token)
    }
}

struct Revoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Revoke the box called NAME: its credential stops working at once, and every box refuses its signed frames from its next feed read.")

    @OptionGroup var options: HubOptions

    @Argument var name: String

    func run() async throws {
        guard try await Hub.revoke(name: name, configuration: try options.hubConfiguration(), logger: options.logger()) else {
            throw ValidationError("no box called \(name) (or it is already revoked)")
        }
        print("revoked \(name)")
    }
}

struct Coordinator: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add the coordinator NAME, or give them a new password (their sessions end). The password is read from standard input.")

    @OptionGroup var options: HubOptions

    @Argument(help: "The coordinator's sign-in name.")
    var name: String

    func validate() throws {
        // The hub's own rule: a name it would refuse at sign-in is refused here.
        guard HubDatabase.isCoordinatorName(name) else { throw ValidationError("NAME: 1 to 64 letters, digits, '-', '_', '.' or '@'") }
    }

    func run() async throws {
        // One line from stdin: a terminal, a pipe or a secret file, never the command line
        // (where `ps` and shell history would show it).
        if isatty(STDIN_FILENO) != 0 { FileHandle.standardError.write(Data("Password for \(name): ".utf8)) }
        guard let password = readLine(strippingNewline: true), !password.isEmpty else {
            throw ValidationError("no password on standard input")
        }
        try await Hub.setCoordinator(name: name, password: password, configuration: try options.hubConfiguration(), logger: options.logger())
        print("coordinator \(name) can sign in")
    }
}

struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Diagnosis-key files for every box: add a signed export (offered on the feed), list those held.",
        subcommands: [KeysAdd.self, KeysList.self])
}

struct KeysAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Hold a signed diagnosis-key export and offer it to every box, which checks and matches it.",
        discussion: """
        PATH is a directory holding export.bin and export.sig (a GAEN export, unzipped), or an export.bin with its \
        .sig beside it. The hub checks that it is an export and is signed; each box checks the signature against \
        its own exposure.verification_keys. Adding the same export.bin again offers nothing new.
        """)

    @OptionGroup var options: HubOptions

    @Argument(help: "The export's directory, or its export.bin.")
    var path: String

    @Option(help: "What coordinators and boxes call it (default: the directory's name).")
    var name: String?

    func run() async throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ValidationError("\(path): no such file or directory")
        }
        let directory = isDirectory.boolValue ? path : (path as NSString).deletingLastPathComponent
        let binPath = isDirectory.boolValue ? directory + "/export.bin" : path
        let pairedSig = (binPath as NSString).deletingPathExtension + ".sig"
        let sigPath = FileManager.default.fileExists(atPath: pairedSig) ? pairedSig : directory + "/export.sig"
        guard let bin = FileManager.default.contents(atPath: binPath) else { throw ValidationError("cannot read \(binPath)") }
        let sig = FileManager.default.contents(atPath: sigPath)
        let label = name ?? ((isDirectory.boolValue ? path : directory) as NSString).lastPathComponent
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
        let added: KeyFileAdded
        do {
            added = try await Hub.addKeyFile(name: label, exportBin: Array(bin), exportSig: sig.map(Array.init), nowMicroseconds: now,
                                             configuration: try options.hubConfiguration(), logger: options.logger())
        } catch let refusal as KeyFileRefusal {
            throw ValidationError("\(path): \(refusal)")
        }
        switch added {
        case .added(let f): print("key file \(f.id) \"\(f.name)\": \(f.keys) keys, offered to every box")
        case .alreadyHeld(let f): print("already held as key file \(f.id) \"\(f.name)\" (same export.bin): nothing offered again")
        }
    }
}

struct KeysList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The key files the hub holds, newest first.")

    @OptionGroup var options: HubOptions

    func run() async throws {
        let files = try await Hub.keyFiles(configuration: try options.hubConfiguration(), logger: options.logger())
        if files.isEmpty { print("no key files") }
        for f in files {
            print("\(f.id)\t\(ISO8601DateFormatter().string(from: f.addedAt))\t\(f.keys) keys\t\(f.bytes) bytes\t\(f.sha256Hex.prefix(16))…\t\(f.name)")
        }
    }
}
