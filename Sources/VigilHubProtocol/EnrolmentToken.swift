import Foundation
import VigilHex

/// What `vigil-hub enroll NAME` prints and `vigil hub join URL --token-file FILE` reads: a single-use
/// secret and the hub's identity (the SHA-256 of its TLS certificate), so the box knows which hub
/// it may send the secret to before it sends anything.
///
/// Text form: `vigil1.<secret, base64url>.<certificate SHA-256, hex>`.
public struct EnrolmentToken: Sendable, Equatable {
    public var secret: String
    public var hubFingerprint: String

    public init(secret: String, hubFingerprint: String) {
        self.secret = secret
        self.hubFingerprint = hubFingerprint
    }

    public var text: String { "vigil1.\(secret).\(hubFingerprint)" }

    public init?(text: String) {
        let parts = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "vigil1",
              parts[1].count >= 32, parts[1].count <= 128,
              parts[1].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }),
              parts[2].count == 64, Hex.decode(parts[2]) != nil else { return nil }
        secret = String(parts[1])
        hubFingerprint = String(parts[2]).lowercased()
    }
}

/// base64url without padding (RFC 4648 §5), for secrets in tokens and headers.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// nil for text that is not base64url (padding optional).
    public static func decode(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}

/// A box's credential as it travels: `Authorization: Bearer <node hex>.<secret>`. The hub keeps
/// only the secret's SHA-256 and refuses the credential for any other node.
public struct BoxCredential: Sendable, Equatable {
    public var node: UInt64
    public var secret: String

    public init(node: UInt64, secret: String) {
        self.node = node
        self.secret = secret
    }

    public var headerValue: String { "Bearer \(NodeIDText.format(node)).\(secret)" }

    public init?(headerValue: String) {
        guard headerValue.hasPrefix("Bearer ") else { return nil }
        let parts = headerValue.dropFirst(7).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let node = NodeIDText.parse(parts[0]),
              parts[1].count >= 32, parts[1].count <= 128 else { return nil }
        self.node = node
        secret = String(parts[1])
    }
}
