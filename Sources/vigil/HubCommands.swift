import ArgumentParser
import Foundation
import VigilHubProtocol
import VigilNode
import VigilSystem

struct HubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "The shelter network's hub: join one, add its other entry points (docs/hub.md).",
        subcommands: [Join.self, Add.self, Certify.self]
    )

    /// Tells a running node that `DATA/hub.json` changed; what to say about it.
    static func reloadRunningNode(_ dir: String) -> String {
        do {
            let reply = try ControlClient.send(.reloadHubLinks, dataDirectory: dir, timeoutMilliseconds: 3_000)
            return reply.ok ? "the running node syncs with it now" : "the running node could not use it: \(reply.error ?? "refused")"
        } catch {
            return "the node syncs from its next start"
        }
    }

    /// What `join` and `add` check of their arguments.
    static func check(url: String, location: String?) throws {
        guard url.hasPrefix("https://"), URL(string: url)?.host != nil else {
            throw CLIError("URL must be https://HOST:PORT", code: 64)
        }
        if let location, GeoPoint(text: location) == nil {
            throw CLIError("--location must be LATITUDE,LONGITUDE in degrees (33.4351,-112.0108)", code: 64)
        }
    }

    /// A hub's refusal exits 77 (EX_NOPERM); a hub that cannot be reached or read, 69 (EX_UNAVAILABLE).
    static func exitCodes<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let failure as HubClient.Failure {
            if case .refused = failure { throw CLIError("\(failure)", code: 77) }
            throw CLIError("\(failure)", code: 69)
        }
    }

    /// Has the hub certify the box's key, and says what came of it. A hub from before
    /// certificates (404) is told, not failed, after a join: the box joined, and signs nothing.
    static func certify(dataDirectory dir: String, configuredNetworkKey: [UInt8]?, afterJoining: Bool) async throws {
        do {
            let certificate = try await HubJoin.certifyKey(dataDirectory: dir)
            let days = (Int64(certificate.expiresSeconds) - Int64(certificate.issuedSeconds)) / 86_400
            FileOutput.standardOutput.write("the hub certified this box's signing key for \(days) days (node \(String(certificate.node, radix: 16))); "
                                            + "its frames are signed from the node's next start\n")
            // radio.network_key wins over DATA/network.pub: one naming another network (an
            // offline certification before the hub) would keep the box from signing.
            if let configuredNetworkKey, let hubs = try? BoxKeyFiles.networkKey(directory: dir), hubs.rawRepresentation != configuredNetworkKey {
                throw CLIError("the hub's network key is not radio.network_key in this box's configuration, which wins: "
                               + "remove radio.network_key (the box keeps the hub's in DATA/network.pub), or the box signs nothing", code: 78)
            }
        } catch let failure as HubClient.Failure {
            if afterJoining, case .refused(let status, _) = failure, status == 404 {
                FileOutput.standardError.write("the hub does not certify keys (an older hub): this box sends unsigned frames only\n")
                return
            }
            let joined = afterJoining ? "the box joined, but " : ""
            throw CLIError("\(joined)its key is not certified: \(failure); try again with `vigil hub certify`",
                           code: { if case .refused = failure { 77 } else { 69 } }())
        }
    }

    struct Certify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Have the hub this box joined certify its signing key (as joining does).",
            discussion: """
            For a box that joined before its hub certified keys, or whose certificate nears its \
            end (`vigil keys show`). The certificate and the network's public key are kept in the \
            data directory; a running node signs with them from its next start.
            """)

        @OptionGroup var options: DataOptions

        func run() async throws {
            try await reportingErrors {
                let configuration = try options.load().configuration
                try await HubCommand.certify(dataDirectory: configuration.dataDirectory, configuredNetworkKey: configuration.airAlerts.networkKey,
                                             afterJoining: false)
            }
        }
    }

    struct Join: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Join the hub at URL with a token from `vigil-hub enroll NAME` (single use).",
            discussion: """
            The token names the hub's certificate: the box checks the hub at URL presents exactly \
            that one before it sends anything, then trusts only it. The box's own credential is \
            kept in DATA/hub.json (mode 0600). A running node starts syncing at its next start.
            """)

        @OptionGroup var options: DataOptions

        @Argument(help: "The hub's address, https://HOST:PORT.")
        var url: String

        @Option(name: .customLong("token-file"),
                help: "A file holding the token `vigil-hub enroll` printed, or - to read it from standard input (never the token itself: a command line is readable by every user of the box).")
        var tokenFile: String?

        @Option(help: .hidden)
        var token: String?

        @Option(help: "The hub's reference location, LATITUDE,LONGITUDE: with several hubs the box uses the nearest that answers (from site.location).")
        var location: String?

        func run() async throws {
            try await reportingErrors {
                try HubCommand.check(url: url, location: location)
                if token != nil {
                    throw CLIError("the token is not taken on the command line, where every user of the box can read it (ps): "
                                   + "--token-file FILE, or --token-file - with the token on standard input", code: 64)
                }
                guard let tokenFile else {
                    throw CLIError("the token `vigil-hub enroll` printed is needed: --token-file FILE, or --token-file - to paste it", code: 64)
                }
                let text = try SecretInput.read(tokenFile, what: "the enrolment token")
                try await HubCommand.join(url: url, token: HubCommand.token(text), location: location, configuration: options.load().configuration)
            }
        }
    }

    /// An enrolment token as `vigil-hub enroll` printed it, or the reason it is not one.
    static func token(_ text: String) throws -> EnrolmentToken {
        guard let parsed = EnrolmentToken(text: text) else {
            throw CLIError("that is not an enrolment token (vigil1.SECRET.FINGERPRINT, as `vigil-hub enroll` prints it)", code: 64)
        }
        return parsed
    }

    /// Joins the hub at `url` (checked) with `parsed`, says so, tells a running node, and has
    /// the box's key certified: `vigil hub join` and `vigil setup`.
    static func join(url: String, token parsed: EnrolmentToken, location: String?, configuration: NodeConfiguration) async throws {
        let dir = configuration.dataDirectory
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            throw CLIError("cannot make \(dir): \(error.localizedDescription)")
        }
        let node = try NodeIdentity.load(dataDirectory: dir)
        let link = try await HubCommand.exitCodes {
            try await HubJoin.join(url: url, token: parsed, dataDirectory: dir, location: location)
        }
        FileOutput.standardOutput.write("joined \(url) as \(link.name) (node \(NodeIDText.format(node)), hub \(parsed.hubFingerprint.prefix(16))…); "
                                        + HubCommand.reloadRunningNode(dir) + "\n")
        try await HubCommand.certify(dataDirectory: dir, configuredNetworkKey: configuration.airAlerts.networkKey, afterJoining: true)
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add another entry point of the network this box joined: a hub process on the same database, elsewhere.",
            discussion: """
            The box checks the hub at URL presents the certificate FINGERPRINT (`vigil-hub serve` \
            prints it) and knows this box's credential. With --location on each hub and \
            site.location in the configuration, the box uses the nearest hub that answers and \
            fails over to the next. A running node starts using it at once.
            """)

        @OptionGroup var options: DataOptions

        @Argument(help: "The hub's address, https://HOST:PORT.")
        var url: String

        @Option(help: "The hub's certificate SHA-256, hex (64 digits).")
        var fingerprint: String

        @Option(help: "The hub's reference location, LATITUDE,LONGITUDE.")
        var location: String?

        func run() async throws {
            try await reportingErrors {
                try HubCommand.check(url: url, location: location)
                let fingerprint = fingerprint.lowercased()
                guard fingerprint.count == 64, fingerprint.allSatisfy(\.isHexDigit) else {
                    throw CLIError("--fingerprint must be 64 hex digits", code: 64)
                }
                let dir = try options.load().configuration.dataDirectory
                let link = try await HubCommand.exitCodes {
                    try await HubJoin.addEntryPoint(url: url, fingerprint: fingerprint, location: location, dataDirectory: dir)
                }
                FileOutput.standardOutput.write("added \(url) (hub \(fingerprint.prefix(16))…) for \(link.name); " + HubCommand.reloadRunningNode(dir) + "\n")
            }
        }
    }
}
