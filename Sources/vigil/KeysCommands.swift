import ArgumentParser
import Foundation
import VigilEvents
import VigilNode
import VigilRadio
import VigilSystem

/// `vigil keys`: the network key, boxes' certificates and revocations, for a shelter without a
/// hub (docs/signed-frames.md "Keys"). The network key file is the coordinator's: it never goes
/// on a box.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "A key per box: the network key, certificates and revocations for signed frames.",
        subcommands: [KeysShow.self, KeysNetworkInit.self, KeysCertify.self, KeysRevoke.self, KeysAddRevocation.self])
}

/// Reads a network signing key file (64 hex digits, the seed).
func readNetworkSigningKey(_ path: String) throws -> NetworkSigningKey {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw CLIError("cannot read the network key \(path)", code: 66) }
    guard let seed = hexKey(text), let key = try? NetworkSigningKey(seed: seed) else {
        throw CLIError("\(path) is not a network key (64 hex digits; made by vigil keys network-init)", code: 65)
    }
    return key
}

struct KeysShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "This box's key, certificate, network key and revocations.")
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            let dir = configuration.dataDirectory
            guard FileSystem.isDirectory(dir) else { throw CLIError("no data directory \(dir)", code: 66) }
            let node = try NodeIdentity.load(dataDirectory: dir)
            let credentials = try BoxKeyFiles.credentials(directory: dir, configuredNetworkKey: configuration.airAlerts.networkKey)
            var out = "box key: \(Hex.encode(credentials.key.publicKey.rawRepresentation)) (\(dir)/\(BoxKeyFiles.keyName))\n"
            if let c = credentials.certificate {
                out += "certificate: node \(String(c.node, radix: 16)), issued \(EventFormatting.time(UInt64(c.issuedSeconds) * 1_000_000)), expires \(EventFormatting.time(UInt64(c.expiresSeconds) * 1_000_000))\n"
            } else {
                out += "certificate: none\n"
            }
            out += "network key: " + (credentials.network.map { "\(Hex.encode($0.rawRepresentation)) (fingerprint \($0.fingerprint))" } ?? "none") + "\n"
            out += "revocations: \(credentials.revocations.count)\n"
            out += "signs its frames: " + (credentials.whyNotSigning(nodeID: node).map { "no: \($0)" } ?? "yes") + "\n"
            FileOutput.standardOutput.write(out)
        }
    }
}

struct KeysNetworkInit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "network-init",
        abstract: "Make a network key pair (kept by the shelter's coordinator, never on a box).")

    @Option(help: "Where to write the network's private key (mode 0600). Refuses to overwrite.")
    var out: String

    func run() async throws {
        try await reportingErrors {
            let key = NetworkSigningKey()
            do throws(SystemError) {
                try FileSystem.createExclusive(out, contents: Array((Hex.encode(key.seed) + "\n").utf8))
            } catch {
                throw CLIError(error.errno == .exists ? "\(out) exists; a network key is never overwritten" : "cannot write the key: \(error)", code: 73)
            }
            FileOutput.standardOutput.write("""
                wrote a new network key to \(out): keep it off the boxes, and safe
                network public key: \(Hex.encode(key.publicKey.rawRepresentation)) (fingerprint \(key.publicKey.fingerprint))
                put it on every box as radio.network_key, and certify each box with vigil keys certify
                """ + "\n")
        }
    }
}

struct KeysCertify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "certify",
        abstract: "Certify a box's key under the network key (run it with the box's data directory; the box must be stopped or restarted after).")

    @Option(name: .customLong("network-key"), help: "The network's private key file (vigil keys network-init).")
    var networkKey: String
    @Option(help: "How long the certificate is valid, in days.")
    var days: UInt32 = 5 * 365
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let network = try readNetworkSigningKey(networkKey)
            let dir = try options.load().configuration.dataDirectory
            do throws(SystemError) {
                try FileSystem.createDirectory(dir)
            } catch {
                throw CLIError("cannot make the data directory \(dir): \(error)", code: 73)
            }
            let node = try NodeIdentity.load(dataDirectory: dir)
            let box = try BoxKeyFiles.loadOrCreateKey(directory: dir)
            let now = UInt32(clamping: Int(Date().timeIntervalSince1970))
            guard days > 0, days <= 20 * 365 else { throw CLIError("--days must be 1 to 7300", code: 64) }
            let certificate = try network.certify(node: UInt32(truncatingIfNeeded: node), boxKey: box.publicKey,
                                                  issued: now, expires: now &+ days * 86_400)
            try BoxKeyFiles.writeCertificate(certificate, directory: dir)
            try BoxKeyFiles.writeNetworkKey(network.publicKey, directory: dir)
            FileOutput.standardOutput.write("certified node \(String(certificate.node, radix: 16)) for \(days) days under network \(network.publicKey.fingerprint): \(dir)/\(BoxKeyFiles.certificateName)\n")
        }
    }
}

struct KeysRevoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke a box's key (a stolen box): prints the revocation; add it to any box with vigil keys add-revocation, and the boxes relay it.")

    @Option(name: .customLong("network-key"), help: "The network's private key file.")
    var networkKey: String
    @Option(help: "The revoked box's certificate: a file (box.cert) or its hex.")
    var certificate: String

    func run() async throws {
        try await reportingErrors {
            let network = try readNetworkSigningKey(networkKey)
            let text = (try? String(contentsOfFile: certificate, encoding: .utf8)) ?? certificate
            guard let bytes = Hex.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)), let c = try? BoxCertificate(bytes: bytes) else {
                throw CLIError("\(certificate) is not a box certificate (a box.cert file, or 218 hex digits)", code: 65)
            }
            guard (try? c.verify(network: network.publicKey)) != nil else {
                throw CLIError("that certificate is not this network's", code: 65)
            }
            let revocation = try network.revoke(node: c.node, boxKey: c.boxKey, at: UInt32(clamping: Int(Date().timeIntervalSince1970)))
            FileOutput.standardOutput.write(Hex.encode(revocation.bytes) + "\n")
        }
    }
}

struct KeysAddRevocation: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-revocation",
        abstract: "Add a revocation (from vigil keys revoke) to this box; it is checked under the network key. A running box takes it at its next start, or hears it from a neighbour.")

    @Argument(help: "The revocation, 210 hex digits.")
    var revocation: String
    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            let dir = configuration.dataDirectory
            let credentials = try BoxKeyFiles.credentials(directory: dir, configuredNetworkKey: configuration.airAlerts.networkKey)
            guard let network = credentials.network else { throw CLIError("this box has no network key (radio.network_key)", code: 78) }
            guard let bytes = Hex.decode(revocation.trimmingCharacters(in: .whitespacesAndNewlines)), let r = try? Revocation(bytes: bytes) else {
                throw CLIError("not a revocation (210 hex digits from vigil keys revoke)", code: 65)
            }
            guard (try? r.verify(network: network)) != nil else { throw CLIError("that revocation is not signed by this box's network", code: 65) }
            let added = try BoxKeyFiles.addRevocations([r], directory: dir)
            FileOutput.standardOutput.write(added == 0 ? "already known\n" : "node \(String(r.node, radix: 16))'s key revoked on this box\n")
        }
    }
}
