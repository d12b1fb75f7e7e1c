import ArgumentParser
import Foundation
import VigilHubProtocol
import VigilNode

struct HubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "The shelter network's hub: join one (README \"Hub\").",
        subcommands: [Join.self]
    )

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

        @Option(help: "The token `vigil-hub enroll` printed.")
        var token: String

        func run() async throws {
            try await reportingErrors {
                guard url.hasPrefix("https://"), URL(string: url)?.host != nil else {
                    throw CLIError("URL must be https://HOST:PORT", code: 64)
                }
                guard let parsed = EnrolmentToken(text: token) else {
                    throw CLIError("that is not an enrolment token (vigil1.SECRET.FINGERPRINT, as `vigil-hub enroll` prints it)", code: 64)
                }
                let dir = try options.load().configuration.dataDirectory
                do {
                    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                } catch {
                    throw CLIError("cannot make \(dir): \(error.localizedDescription)")
                }
                let node = try NodeIdentity.load(dataDirectory: dir)
                let link: HubLinks.Link
                do {
                    link = try await HubJoin.join(url: url, token: parsed, dataDirectory: dir)
                } catch let failure as HubClient.Failure {
                    if case .refused = failure { throw CLIError("\(failure)", code: 77) } // EX_NOPERM
                    throw CLIError("\(failure)", code: 69) // EX_UNAVAILABLE
                }
                FileOutput.standardOutput.write("joined \(url) as \(link.name) (node \(NodeIDText.format(node)), hub \(parsed.hubFingerprint.prefix(16))…); the node syncs from its next start\n")
            }
        }
    }
}
