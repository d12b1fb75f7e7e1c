import Crypto
import Foundation
import Logging
import VigilHex
import VigilSystem

/// The box's key for webhook callbacks (issue 27): a message to a webhook recipient carries a
/// token that lets that recipient, and only it, take that call, and only that one
/// (`WebhookCallbackRule`).
///
/// A token is HMAC-SHA256 under this key of the call's id, the sequence of the event that opened
/// it and the recipient's address, in hex. It is not stored anywhere: the node recomputes it to
/// check a callback, so it cannot be listed or leaked from the log. Whoever reads the message can
/// use it (so links go only over TLS, `WebhookCallbackRule.carriesTokens`), for that one call,
/// until someone takes it; a new key (delete `DATA/callback-key`) voids every token given out.
struct CallbackKey: Sendable {
    static let fileName = "callback-key"
    /// Bumped if the token's input ever changes, so old tokens never verify under new rules.
    private static let context = Array("vigil webhook take v1".utf8)

    private let key: SymmetricKey

    init(bytes: [UInt8]) {
        key = SymmetricKey(data: bytes)
    }

    /// `DATA/callback-key`: 32 random bytes in hex, made on first start (mode 600). A key that
    /// exists but cannot be read is an error, never silently replaced (every token given out for
    /// calls still open would stop working without anyone being told).
    static func load(directory: String, logger: Logger? = nil) throws(NodeError) -> CallbackKey {
        let path = directory + "/" + fileName
        // Empty: a power cut during the first start, before the key was whole (no token was ever
        // given out under it), so a new one is made.
        if FileSystem.exists(path) && FileSystem.size(path) != 0 {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8),
                  let bytes = Hex.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count == 32 else {
                throw .unsupported("\(path) is not a callback key (64 hex digits); move it away to make a new one (tokens already sent stop working)")
            }
            if NodeSecrets.readableByOthers(path) {
                logger?.warning("the webhook callback key is readable by other users; chmod 600 it", metadata: ["path": "\(path)"])
            }
            return CallbackKey(bytes: bytes)
        }
        var bytes: [UInt8] = []
        for _ in 0..<4 { withUnsafeBytes(of: secureRandomUInt64()) { bytes += $0 } }
        // Whole or not at all: written aside, made durable, then renamed into place.
        do {
            try FileSystem.replaceDurably(path, contents: Array((Hex.encode(bytes) + "\n").utf8))
        } catch {
            throw .system(error)
        }
        return CallbackKey(bytes: bytes)
    }

    /// The token that lets `recipient` take `call`, the one that started at `started` (the time
    /// of the event that opened it, in µs: a call id used again later, by a box whose counter
    /// started over, is another call, and old tokens do not take it): 64 hex digits. The time,
    /// not the event's sequence: a call opened before the log was open (decision 0002) is
    /// appended again with a new sequence once it is, and its tokens must go on working.
    func token(call: String, started: UInt64, recipient: String) -> String {
        Hex.encode(Array(HMAC<SHA256>.authenticationCode(for: Self.input(call: call, started: started, recipient: recipient), using: key)))
    }

    /// Whether `token` is the one given to `recipient` for `call`, compared in constant time.
    func verifies(_ token: String, call: String, started: UInt64, recipient: String) -> Bool {
        guard token.utf8.count == 64, let mac = Hex.decode(token) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Self.input(call: call, started: started, recipient: recipient), using: key)
    }

    /// Length-prefixed fields: no (call, recipient) pair reads as another.
    private static func input(call: String, started: UInt64, recipient: String) -> [UInt8] {
        var bytes = context
        withUnsafeBytes(of: started.bigEndian) { bytes += $0 }
        for field in [call, recipient] {
            let utf8 = Array(field.utf8)
            withUnsafeBytes(of: UInt32(clamping: utf8.count).bigEndian) { bytes += $0 }
            bytes += utf8
        }
        return bytes
    }
}
