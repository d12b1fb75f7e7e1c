import Foundation
import VigilHex
import VigilRadio
import VigilSystem

/// The files of a box's signing identity in its data directory (docs/signed-frames.md "Keys"):
///
///   box.key        the box's Ed25519 seed, 64 hex digits, mode 0600, made once at first start
///   box.cert       the network's certificate for it, 218 hex digits (from `vigil keys certify`
///                  or the hub at `vigil hub join`)
///   network.pub    the network's public key, when the hub gave it (radio.network_key wins)
///   revocations    one revocation per line, 210 hex digits, each checked under the network key
///
/// A file that exists but is not what it should be is an error, never replaced: a key that
/// changed under a certified box would make every frame it sends a forgery to the others.
package enum BoxKeyFiles {
    package static let keyName = "box.key"
    package static let certificateName = "box.cert"
    package static let networkName = "network.pub"
    package static let revocationsName = "revocations"
    /// More lines than this in `revocations` are not read (a network has far fewer boxes).
    static let revocationLimit = FrameVerifier.revocationLimit

    /// The box's key, made (durably, mode 0600, never overwriting) when there is none.
    package static func loadOrCreateKey(directory: String) throws(NodeError) -> BoxSigningKey {
        let path = directory + "/" + keyName
        if FileSystem.exists(path) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8), let seed = Hex.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)),
                  let key = try? BoxSigningKey(seed: seed) else {
                throw .unsupported("\(path) is not a box key (64 hex digits); if it is lost, move it away and certify the box again")
            }
            return key
        }
        let key = BoxSigningKey()
        do {
            try FileSystem.createExclusive(path, contents: Array((Hex.encode(key.seed) + "\n").utf8))
        } catch {
            throw .system(error)
        }
        return key
    }

    package static func certificate(directory: String) throws(NodeError) -> BoxCertificate? {
        try hexFile(directory + "/" + certificateName, what: "certificate") { bytes throws(SignedFrameError) in try BoxCertificate(bytes: bytes) }
    }

    package static func writeCertificate(_ certificate: BoxCertificate, directory: String) throws(NodeError) {
        try writeHex(certificate.bytes, to: directory + "/" + certificateName)
    }

    package static func networkKey(directory: String) throws(NodeError) -> NetworkPublicKey? {
        try hexFile(directory + "/" + networkName, what: "network key") { bytes throws(SignedFrameError) in try NetworkPublicKey(rawRepresentation: bytes) }
    }

    package static func writeNetworkKey(_ key: NetworkPublicKey, directory: String) throws(NodeError) {
        try writeHex(key.rawRepresentation, to: directory + "/" + networkName)
    }

    /// One line of hex, replacing the file whole and durably (mode 0600).
    private static func writeHex(_ bytes: [UInt8], to path: String) throws(NodeError) {
        do {
            try FileSystem.replaceDurably(path, contents: Array((Hex.encode(bytes) + "\n").utf8))
        } catch {
            throw .system(error)
        }
    }

    /// The revocations kept, and how many lines were not revocations (kept in the file, skipped).
    package static func revocations(directory: String) -> (revocations: [Revocation], unreadable: Int) {
        guard let text = try? String(contentsOfFile: directory + "/" + revocationsName, encoding: .utf8) else { return ([], 0) }
        var out: [Revocation] = []
        var unreadable = 0
        for line in text.split(separator: "\n").prefix(revocationLimit) where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            if let bytes = Hex.decode(line.trimmingCharacters(in: .whitespaces)), let r = try? Revocation(bytes: bytes) {
                out.append(r)
            } else {
                unreadable += 1
            }
        }
        return (out, unreadable)
    }

    /// Adds revocations not yet in the file, durably (the file is replaced whole). Returns how many were new.
    @discardableResult
    package static func addRevocations(_ new: [Revocation], directory: String) throws(NodeError) -> Int {
        let path = directory + "/" + revocationsName
        let existing = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let lines = Set(existing.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        let added = new.map { Hex.encode($0.bytes) }.filter { !lines.contains($0) }
        guard !added.isEmpty else { return 0 }
        guard lines.count + added.count <= revocationLimit else { throw .unsupported("\(path) holds \(revocationLimit) revocations already") }
        let text = (existing.isEmpty || existing.hasSuffix("\n") ? existing : existing + "\n") + added.joined(separator: "\n") + "\n"
        do {
            try FileSystem.replaceDurably(path, contents: Array(text.utf8))
        } catch {
            throw .system(error)
        }
        return added.count
    }

    /// Everything the box needs to sign and check frames; the key is made when missing.
    package static func credentials(directory: String, configuredNetworkKey: [UInt8]?) throws(NodeError) -> BoxCredentials {
        let key = try loadOrCreateKey(directory: directory)
        var network = try networkKey(directory: directory)
        if let configured = configuredNetworkKey {
            network = try? NetworkPublicKey(rawRepresentation: configured)
        }
        var credentials = BoxCredentials(key: key, certificate: try certificate(directory: directory), network: network)
        if let network {
            credentials.revocations = revocations(directory: directory).revocations.filter { (try? $0.verify(network: network)) != nil }
        }
        return credentials
    }

    private static func hexFile<T>(_ path: String, what: String, _ parse: ([UInt8]) throws(SignedFrameError) -> T) throws(NodeError) -> T? {
        guard FileSystem.exists(path) else { return nil }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), let bytes = Hex.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw .unsupported("\(path) is not a \(what) in hex")
        }
        do {
            return try parse(bytes)
        } catch {
            throw .unsupported("\(path) is not a \(what): \(error)")
        }
    }
}
