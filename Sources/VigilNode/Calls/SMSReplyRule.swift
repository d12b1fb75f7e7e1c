import VigilCalls
import VigilCore
import VigilEvents

/// What an SMS in gammu-smsd's inbox becomes: the fact (`SmsReceived`, with what the box made of
/// it) and, when it answers something the box asked that number, the event it stands for. A pure
/// function of the message, when it arrived and the node's state, like `CommandInterpreter`, whose
/// rules it uses for the taking.
///
/// The sender is hostile until proven otherwise: an SMS can come from anyone, and its sender can
/// be forged. So a reply counts only when it answers a question the box sent to exactly that
/// number before the reply arrived:
/// - TAKE (or a call's short code) from a number told of an open, untaken call takes it; with a
///   code, the call with that code; without, the last call sent to that number.
/// - OK from a resident's own number (`--address`), while their "are you OK?" ladder runs and
///   after it started, is their "I'm OK" (a check-in from SMS).
/// - Anything else (an unknown number, a text that is not a reply, a part of a longer message, a
///   delivery report, an unreadable file) is logged and shown to staff, never acted on.
struct SMSReplyRule {
    /// What the node appends: the fact, then (maybe) what it caused.
    struct Decision {
        var received: SMSReceived
        var effect: EventBody?
    }

    static let maximumText = 320
    static let maximumSender = 64

    let interpreter: CommandInterpreter
    let projections: Projections

    /// An inbox file read as `sms` (or not: its error, from reading or parsing), written at
    /// `receivedMicroseconds`.
    func decide(file: String, sms: Result<InboundSMS, any Error>, receivedMicroseconds: UInt64) -> Decision {
        var fact = SMSReceived()
        fact.file = String(file.prefix(255)) // a name is at most 255 bytes on Linux
        fact.receivedUs = receivedMicroseconds
        let inbound: InboundSMS
        switch sms {
        case .failure(let error):
            fact.reading = .unreadable
            fact.error = String("\(error)".prefix(200))
            fact.outcome = "not read: \(fact.error)"
            if let name = try? InboxFileName(file) { fact.sender = Self.bounded(name.sender, Self.maximumSender) }
            return Decision(received: fact, effect: nil)
        case .success(let s):
            inbound = s
        }
        fact.text = Self.bounded(inbound.message.text, Self.maximumText)
        let number = inbound.sender.phoneNumber?.e164
        fact.sender = number ?? Self.bounded(String(describing: inbound.sender), Self.maximumSender)
        let reply: SMSReply
        switch inbound.answer {
        case .reply(let r):
            fact.reading = .reply
            reply = r
        case .continuation(let part):
            fact.reading = .continuation
            fact.outcome = "not acted on: part \(part) of a longer message"
            return Decision(received: fact, effect: nil)
        case .incompleteMessage(let received, let total):
            fact.reading = .incomplete
            fact.outcome = "not acted on: a message of \(total) parts with only \(received.count) received"
            return Decision(received: fact, effect: nil)
        case .deliveryReport:
            fact.reading = .deliveryReport
            fact.outcome = "a delivery report"
            return Decision(received: fact, effect: nil)
        }
        guard let number else {
            fact.outcome = "not acted on: the sender is not a phone number"
            return Decision(received: fact, effect: nil)
        }
        switch reply {
        case .take(let code):
            return take(number: number, code: code, at: receivedMicroseconds, fact: fact)
        case .ok:
            return checkIn(number: number, at: receivedMicroseconds, fact: fact)
        case .unrecognised:
            fact.outcome = "not acted on: not a reply the box knows (TAKE, a call's code, OK)"
            return Decision(received: fact, effect: nil)
        }
    }

    private func take(number: String, code: String?, at time: UInt64, fact: SMSReceived) -> Decision {
        var fact = fact
        // Only a call this number was told of before the reply was written; without a code, only
        // when that is one call (a late TAKE must not take a newer call nobody meant).
        let calls = projections.calls.callsForReply(from: number, code: code, writtenAt: time)
        guard let call = calls.first else {
            fact.outcome = "not acted on: \(number) was told of no open call" + (code.map { " with code \($0)" } ?? "")
            return Decision(received: fact, effect: nil)
        }
        guard calls.count == 1 else {
            fact.outcome = "not acted on: \(number) was told of \(calls.count) open calls; reply with one's code ("
                + calls.prefix(4).map(\.code).joined(separator: ", ") + ")"
            return Decision(received: fact, effect: nil)
        }
        // Who took it, as everyone told will read it: the number's last digits only, since the
        // taking leaves the box (the hub, other boxes) and a number is the staff member's own.
        switch interpreter.take(TakeRequest(call: call.code, by: Self.masked(number), via: "sms"), via: .sms) {
        case .event(let body, _):
            fact.outcome = "took call \(call.code)"
            return Decision(received: fact, effect: body)
        case .refused(_, let why):
            fact.outcome = "not acted on: \(why)"
            return Decision(received: fact, effect: nil)
        }
    }

    /// "the phone ending 222": enough for staff to tell each other apart.
    static func masked(_ number: String) -> String { "the phone ending \(number.suffix(3))" }

    private func checkIn(number: String, at time: UInt64, fact: SMSReceived) -> Decision {
        var fact = fact
        // The resident whose own number this is, asked "are you OK?" before the reply arrived.
        let asked = projections.escalations.residents.values
            .filter { $0.ownAddress == number && $0.isEscalating && $0.ladderStartMicroseconds <= time }
            .sorted { $0.id < $1.id }
        guard let r = asked.first else {
            fact.outcome = "not acted on: nobody at \(number) was asked \"are you OK?\""
            return Decision(received: fact, effect: nil)
        }
        var c = CheckIn()
        c.resident = r.id
        c.source = .checkInSms
        fact.outcome = "\(r.id) checked in"
        return Decision(received: fact, effect: .checkIn(c))
    }

    /// At most `limit` characters, cut on a character boundary.
    static func bounded(_ text: String, _ limit: Int) -> String { String(text.prefix(limit)) }
}
