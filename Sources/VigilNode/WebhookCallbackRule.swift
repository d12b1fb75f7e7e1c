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

    static let refusal = "this token does not take that call"

    /// The take link for a message: only to a single webhook recipient of an opening message
    /// ("call/<id>/<round>.<tier>/<recipient>") of a call nobody has taken yet.
    static func link(for entry: Outbox.Entry, calls: CallBook, key: CallbackKey, publicURL: String?) -> OutboxMessage.TakeLink? {
        guard entry.channel == .call, entry.recipients.count == 1, let recipient = entry.recipients.first,
              case .webhook? = try? ContactAddress.parse(recipient) else { return nil }
        guard let call = calls.open.first(where: { call in
            let prefix = "call/\(call.id)/"
            return entry.id.hasPrefix(prefix) && entry.id.dropFirst(prefix.count).first?.isNumber == true
        }), call.isUnanswered, call.told.contains(recipient) else { return nil }
        let path = "/api/v1/callbacks/take"
        return OutboxMessage.TakeLink(call: call.id, code: call.code, recipient: recipient, path: path,
                                      url: publicURL.map { $0 + path }, token: key.token(call: call.id, recipient: recipient))
    }

    /// What a callback becomes: the taking, or a refusal. Checks the token before anything else,
    /// so every answer before it is the same.
    func decide(_ request: CallbackTakeRequest) -> CommandInterpreter.Outcome {
        guard request.call.utf8.count <= 512, request.recipient.utf8.count <= ContactAddress.maximumLength,
              key.verifies(request.token, call: request.call, recipient: request.recipient),
              let call = calls.calls[request.call], call.told.contains(request.recipient) else {
            return .refused(.invalid, Self.refusal)
        }
        let named = PrintableText.clean(request.by ?? "", limit: 64).trimmingCharacters(in: .whitespaces)
        let by = named.isEmpty ? Self.host(of: request.recipient) : named
        return interpreter.take(TakeRequest(call: call.id, by: by, via: "webhook"), via: .webhook)
    }

    /// A webhook's host, never its path or query (where services keep their secrets).
    static func host(of url: String) -> String {
        let rest = url.drop(while: { $0 != ":" }).dropFirst(3)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return String((authority.split(separator: "@").last ?? authority).prefix(64))
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
