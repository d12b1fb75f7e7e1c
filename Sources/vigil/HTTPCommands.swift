import ArgumentParser
import Foundation
import VigilAccess
import VigilNode
import VigilSystem
import VigilWeb

struct HTTPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http",
        abstract: "The box's page and API: the admin password, tokens for scripts, the certificate.",
        subcommands: [Passwd.self, Token.self, Fingerprint.self])

    struct Passwd: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set the admin password staff sign in with (read from standard input; at least 10 characters). Sessions signed in with the old one end.")

        @OptionGroup var options: DataOptions

        func run() async throws {
            try await reportingErrors {
                let dir = try options.load().configuration.dataDirectory
                guard let password = readLine(strippingNewline: true), !password.isEmpty else {
                    throw CLIError("give the password on standard input (echo ... | vigil http passwd, or type it and press Enter)", code: 64)
                }
                do {
                    try WebCredentials(dataDirectory: dir).setPassword(password)
                } catch {
                    throw CLIError("\(error)", code: 65)
                }
                FileOutput.standardOutput.write("the admin password is set; the page takes it at once\n")
            }
        }
    }

    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bearer tokens for scripts that use the API.",
            subcommands: [Add.self, List.self, Revoke.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Make a token named NAME and print it (the only time it is shown).")
            @OptionGroup var options: DataOptions
            @Argument(help: "What the token is for (letters, digits, - _ .).") var name: String

            func run() async throws {
                try await reportingErrors {
                    let dir = try options.load().configuration.dataDirectory
                    do {
                        let token = try WebCredentials(dataDirectory: dir).addToken(name: name, nowMicroseconds: realtimeMicroseconds())
                        FileOutput.standardOutput.write(token + "\n")
                    } catch {
                        throw CLIError("\(error)", code: 65)
                    }
                }
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the tokens by name (never the tokens themselves).")
            @OptionGroup var options: DataOptions

            func run() async throws {
                try await reportingErrors {
                    let dir = try options.load().configuration.dataDirectory
                    let tokens = WebCredentials(dataDirectory: dir).tokens
                    var out = tokens.isEmpty ? "no tokens (vigil http token add NAME makes one)\n" : ""
                    for t in tokens { out += "\(t.name)\tmade \(EventFormatting.time(t.createdMicroseconds))\n" }
                    FileOutput.standardOutput.write(out)
                }
            }
        }

        struct Revoke: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Forget the token named NAME: scripts using it are refused at once.")
            @OptionGroup var options: DataOptions
            @Argument var name: String

            func run() async throws {
                try await reportingErrors {
                    let dir = try options.load().configuration.dataDirectory
                    do {
                        guard try WebCredentials(dataDirectory: dir).revokeToken(name: name) else {
                            throw CLIError("there is no token named \(name)", code: 65)
                        }
                    } catch let error as AccessError {
                        throw CLIError("\(error)", code: 1)
                    }
                    FileOutput.standardOutput.write("token \(name) revoked\n")
                }
            }
        }
    }

    struct Fingerprint: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the SHA-256 fingerprint of the page's certificate: compare it with what the browser shows before trusting it.")
        @OptionGroup var options: DataOptions

        func run() async throws {
            try await reportingErrors {
                let dir = try options.load().configuration.dataDirectory
                guard let identity = WebCredentials(dataDirectory: dir).identity else {
                    throw CLIError("the page has no certificate yet: it is made when a node first serves the page over TLS", code: 69)
                }
                FileOutput.standardOutput.write(WebCredentials.displayFingerprint(identity.fingerprint) + "\n")
            }
        }
    }
}
