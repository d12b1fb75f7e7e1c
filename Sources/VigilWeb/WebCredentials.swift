import Crypto
import Foundation
import VigilAccess
import VigilHubProtocol
import VigilSystem

/// Who may act on the box's page and API, kept in `DATA/http` (0700, files 0600):
///
/// - `admin.hash`: the admin password's scrypt hash (`vigil http passwd`). Staff sign in with it.
/// - `tokens.json`: bearer tokens for scripts (`vigil http token add NAME`), by name, each kept
///   only as its SHA-256: the token itself is shown once, when made.
///
/// Looked at each use (a stat; the file is read again only when it changed), so `vigil http
/// passwd` and `token revoke` take effect at once, without a restart. Without a password nobody can act from the page (the API still takes tokens).
public struct WebCredentials: Sendable {
    public let directory: String

    public init(dataDirectory: String) { directory = dataDirectory + "/http" }

    public struct Token: Codable, Sendable, Equatable {
        public var name: String
        /// SHA-256 of the token, hex.
        public var sha256: String
        public var createdMicroseconds: UInt64
    }

    /// The prefix of every token, so a leaked one is recognisable (and scanners can find them).
    static let tokenPrefix = "vigil_"

    // MARK: The admin password

    public var adminHash: String? {
        guard let data = FileCache.shared.contents(of: directory + "/admin.hash") else { return nil }
        let hash = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return hash.isEmpty ? nil : hash
    }

    /// Sets the admin password (at least `PasswordHash.minimumLength` characters). Sessions
    /// signed in with the old one end at their next request.
    public func setPassword(_ password: String) throws(AccessError) {
        guard password.count >= PasswordHash.minimumLength else {
            throw .setup("the password needs at least \(PasswordHash.minimumLength) characters")
        }
        guard password.utf8.count <= 256 else { throw .setup("the password is longer than 256 bytes") }
        let hash: String
        do {
            hash = try PasswordHash.make(password)
        } catch {
            throw .setup("cannot hash the password: \(error)")
        }
        try write(hash + "\n", to: "admin.hash")
    }

    // MARK: The certificate

    /// The page's TLS identity, once a node has made it (it does when it first serves over TLS).
    public var identity: SelfSignedIdentity? { SelfSignedIdentity.existing(directory: directory, name: "box") }

    /// A fingerprint as browsers show it: upper-case hex pairs separated by colons.
    public static func displayFingerprint(_ hex: String) -> String {
        var pairs: [String] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
            pairs.append(hex[i..<j].uppercased())
            i = j
        }
        return pairs.joined(separator: ":")
    }

    // MARK: Tokens

    public var tokens: [Token] {
        guard let data = FileCache.shared.contents(of: directory + "/tokens.json"),
              let list = try? JSONDecoder().decode([Token].self, from: data) else { return [] }
        return list
    }

    /// Makes a token named `name` and returns it: the only time it is ever shown.
    public func addToken(name: String, nowMicroseconds: UInt64) throws(AccessError) -> String {
        guard !name.isEmpty, name.count <= 64, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }) else {
            throw .setup("a token's name is 1 to 64 letters, digits, '-', '_' or '.'")
        }
        var list = tokens
        guard !list.contains(where: { $0.name == name }) else { throw .setup("there is a token named \(name) already") }
        var bytes = [UInt8](repeating: 0, count: 32)
        var rng = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = rng.next() }
        let token = Self.tokenPrefix + Base64URL.encode(bytes)
        list.append(Token(name: name, sha256: Self.digest(token), createdMicroseconds: nowMicroseconds))
        try save(list)
        return token
    }

    /// Forgets the token named `name`; false if there was none.
    public func revokeToken(name: String) throws(AccessError) -> Bool {
        var list = tokens
        guard let i = list.firstIndex(where: { $0.name == name }) else { return false }
        list.remove(at: i)
        try save(list)
        return true
    }

    /// The name of the token `presented` is, if any (compared in constant time).
    public func tokenName(_ presented: String) -> String? {
        guard presented.hasPrefix(Self.tokenPrefix), presented.utf8.count <= 128 else { return nil }
        let digest = Array(Self.digest(presented).utf8)
        var found: String?
        for t in tokens where PasswordHash.constantTimeEqual(Array(t.sha256.utf8), digest) { found = t.name }
        return found
    }

    static func digest(_ token: String) -> String {
        SHA256.hash(data: Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    // MARK: Files

    private func save(_ list: [Token]) throws(AccessError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(list) else { throw .setup("cannot encode the token list") }
        try write(String(decoding: data, as: UTF8.self) + "\n", to: "tokens.json")
    }

    /// Writes `text` to `DATA/http/NAME` whole and durably (a new file renamed over the old, 0600):
    /// a password changed or a token revoked must not come back after a power cut.
    private func write(_ text: String, to name: String) throws(AccessError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw .setup("cannot make \(directory): \(error)")
        }
        let path = directory + "/" + name
        do throws(SystemError) {
            try FileSystem.replaceDurably(path, contents: Array(text.utf8))
        } catch {
            throw .setup("cannot write \(path): \(error)")
        }
    }
}

/// Small files read again only when their modification time or size changed: the credentials are
/// looked at on every request, and a stat costs the card nothing (the kernel caches it).
final class FileCache: Sendable {
    static let shared = FileCache()
    private struct Entry {
        var seconds: Int
        var nanoseconds: Int
        var size: Int64
        var inode: UInt64
        var data: Data
    }
    private let entries = LockedValue<[String: Entry]>([:])

    func contents(of path: String) -> Data? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            entries.withLock { _ = $0.removeValue(forKey: path) }
            return nil
        }
        let key = (Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec), Int64(info.st_size), UInt64(info.st_ino))
        if let hit = entries.withLock({ $0[path] }), (hit.seconds, hit.nanoseconds, hit.size, hit.inode) == key {
            return hit.data
        }
        guard info.st_size <= 1 << 20, let data = FileManager.default.contents(atPath: path) else { return nil }
        entries.withLock { $0[path] = Entry(seconds: key.0, nanoseconds: key.1, size: key.2, inode: key.3, data: data) }
        return data
    }
}
