import VigilCore
import VigilEvents

/// A webhook recipient takes a call for help with the token its message carried (issue 27,
/// "an authenticated webhook callback"). docs/calls-for-help.md, "Webhook callbacks".
///
/// The callback comes from the network and is hostile until its token proves otherwise: the token
/// must be the one this box gave exactly that recipient for exactly that call (`CallbackKey`), and
/// the recipient must be one the call's tree told. A forged, guessed or replayed token, or one for
/// another call, is refused with the same answer whatever was wrong (a caller learns nothing about
/// which calls exist), counted, and never becomes an event: a flood of them cannot grow the log.
/// A valid token takes the call once, through `CommandInterpreter`'s rules for any taking.
struct WebhookCallbackRule {
    let interpreter: CommandInterpreter
    let calls: CallBook
    let key: CallbackKey

    static let refusal = CallbackTakeRequest.refusal
    /// Who took the call when the callback does not say. Never the webhook's address: services
    /// keep their secrets in its path, query and sometimes its host.
    static let defaultTaker = "a webhook"

    /// The take link for a message: only to a single webhook recipient, still in the tree, of an
    /// opening message ("call/<id>/<round>.<tier>/<recipient>", matched exactly) of a call nobody
    /// has taken yet, and only over TLS (or to a relay on this box): a token read on the way
    /// takes the call.
    static func link(for entry: Outbox.Entry, calls: CallBook, key: CallbackKey, publicURL: String?) -> OutboxMessage.TakeLink? {
        guard entry.channel == .call, entry.recipients.count == 1, let recipient = entry.recipients.first,
              carriesTokens(recipient), calls.tree.everyone.contains(recipient) else { return nil }
        guard let call = calls.open.first(where: { isOpening(entry.id, of: $0.id, to: recipient) }),
              call.isUnanswered, call.told.contains(recipient) else { return nil }
        let path = "/api/v1/callbacks/take"
        return OutboxMessage.TakeLink(call: call.id, code: call.code, recipient: recipient, path: path,
                                      url: publicURL.map { $0 + path },
                                      token: key.token(call: call.id, started: call.startedMicroseconds, recipient: recipient))
    }

    /// Whether `entry` is exactly "call/<call>/<round>.<tier>/<recipient>" (a resident's id may
    /// hold "/", so a prefix alone could name another resident's call).
    static func isOpening(_ entry: String, of call: String, to recipient: String) -> Bool {
        let prefix = "call/\(call)/", suffix = "/" + recipient
        guard entry.hasPrefix(prefix), entry.hasSuffix(suffix), entry.utf8.count > prefix.utf8.count + suffix.utf8.count else { return false }
        let step = entry.utf8.dropFirst(prefix.utf8.count).dropLast(suffix.utf8.count)
        let parts = step.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return parts.count == 2 && parts.allSatisfy { !$0.isEmpty && $0.count <= 10 && $0.allSatisfy { (0x30...0x39).contains($0) } }
    }

    /// A webhook whose messages may carry tokens: https, or plain http to this box itself.
    static func carriesTokens(_ recipient: String) -> Bool {
        guard case .webhook? = try? ContactAddress.parse(recipient) else { return false }
        let lower = recipient.lowercased()
        return lower.hasPrefix("https://") || HTTPSettings.isLoopback(url: lower)
    }

    /// What a callback becomes: the taking, or a refusal. Checks the token before anything else,
    /// so every answer before it is the same.
    func decide(_ request: CallbackTakeRequest) -> CommandInterpreter.Outcome {
        guard request.isWellFormed, let call = calls.calls[request.call],
              key.verifies(request.token, call: call.id, started: call.startedMicroseconds, recipient: request.recipient),
              call.told.contains(request.recipient), calls.tree.everyone.contains(request.recipient) else {
            return .refused(.invalid, Self.refusal)
        }
        let named = PrintableText.clean(request.by ?? "", limit: 64).trimmingCharacters(in: .whitespaces)
        return interpreter.take(TakeRequest(call: call.id, by: named.isEmpty ? Self.defaultTaker : named, via: "webhook"), via: .webhook)
    }
}

/// Webhook callbacks this run, as `vigil status` and `/metrics` show them.
public struct WebhookCallbackStatus: Sendable, Codable, Equatable {
    public var taken: UInt64 = 0
    /// Refused: a token that does not take the call named (forged, guessed, another call's), or
    /// a valid one for a call already taken or ended.
    public var refused: UInt64 = 0
    public var lastRefusal: String?
    public var lastRefusalMicroseconds: UInt64?

    public init() {}

    mutating func refused(_ why: String, at time: UInt64) {
        refused &+= 1
        lastRefusal = String(why.prefix(200))
        lastRefusalMicroseconds = time
    }

    /// A flood of forged callbacks is counted, not written line by line to the journal.
    var worthLogging: Bool { refused <= 3 || refused.nonzeroBitCount == 1 }
}

extension CallbackTakeRequest {
    /// The one answer to every callback whose token does not take the call it names.
    public static let refusal = "this token does not take that call"

    /// The shape a genuine callback has: the box's page checks it before the request reaches
    /// the node's loop (`Node.noteMalformedCallback`).
    public var isWellFormed: Bool {
        token.utf8.count == 64 && token.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
            && !call.isEmpty && call.utf8.count <= 512
            && !recipient.isEmpty && recipient.utf8.count <= ContactAddress.maximumLength
            && (by?.utf8.count ?? 0) <= 1_024
    }
}
