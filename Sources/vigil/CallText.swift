import Foundation
import VigilCore
import VigilEvents
import VigilNode

/// Calls for help as `vigil status` prints them: each call's code, what, age, whether it is
/// taken (by whom, how, after how long), where the tree stands, and each recipient's outcome.
enum CallText {
    static func status(_ s: Projections, nowMicroseconds now: UInt64) -> String {
        let book = s.calls
        guard book.openedTotal > 0 || !book.calls.isEmpty else {
            let who = book.tree.everyone
            return "calls for help: none yet; the tree tells \(who.isEmpty ? "NOBODY (set notify.staff or calls.tree)" : who.joined(separator: ", "))\n"
        }
        let open = book.open
        let unanswered = open.filter(\.isUnanswered).count
        var out = "calls for help: \(open.count) open (\(unanswered) unanswered), \(book.takenTotal) taken of \(book.openedTotal)"
            + (book.refusedPhoneCalls > 0 ? "; \(book.refusedPhoneCalls) phones' calls for help not opened (\(CallBook.maximumOpenPhoneCalls) open: see the chats)" : "") + "\n"
        for call in book.newestFirst.prefix(10) { out += "  " + line(call, s, now: now) + "\n" }
        return out
    }

    /// SMS that reached the box: counts, and the latest few with what the box made of them
    /// (replies it did not act on are for staff to read).
    static func sms(_ s: Projections) -> String {
        let book = s.sms
        guard book.received > 0 else { return "" }
        var out = "SMS received: \(book.received) (\(book.unreadable) unreadable)\n"
        for m in book.recent.suffix(5).reversed() {
            out += "  \(EventFormatting.time(m.receivedMicroseconds)) from \(m.sender): \"\(m.text.prefix(60))\" — \(m.outcome)\n"
        }
        return out
    }

    static func line(_ call: CallBook.Call, _ s: Projections, now: UInt64) -> String {
        var text = "\(call.code) \(call.id): \(call.summary); \(age(now &- call.startedMicroseconds)) old"
        if let phone = call.phone {
            text += phone.messages > 1 ? " (\(phone.messages) phones' sos and medical messages)" : ""
            for f in phone.folded ?? [] { text += "\n      also from \(f.peer): \"\(ChatText.printable(f.text, limit: 80))\"" }
            text += phone.confirmedAlert.map { ", confirmed as alert \($0)" } ?? (call.isOpen ? ", vigil calls confirm|dismiss \(call.code) --by NAME" : "")
        }
        if let t = call.taken {
            text += ", TAKEN by \(t.by) \(CallBook.viaText(TakenVia(rawValue: t.via) ?? .unspecified)) after \(age(t.microseconds &- call.startedMicroseconds))"
        } else if call.isOpen {
            text += ", UNANSWERED, tier \(call.tier + 1) of \(max(1, s.calls.tree.tiers.count)), pass \(call.round + 1) of \(s.calls.tree.rounds)"
        }
        if let e = call.ended { text += ", \(e.reason) at \(EventFormatting.time(e.microseconds))" }
        let told = call.told.map { "\($0) (\(outcome(of: call, to: $0, s.outbox)))" }
        text += told.isEmpty ? "; nobody told" : "; told \(told.joined(separator: ", "))"
        return text
    }

    /// The latest message of `call` to `recipient`: delivered, pending or failing (with why).
    static func outcome(of call: CallBook.Call, to recipient: String, _ outbox: Outbox) -> String {
        let prefix = "call/\(call.id)/", suffix = "/\(recipient)"
        let entries = outbox.entries.values.filter { $0.id.hasPrefix(prefix) && $0.id.hasSuffix(suffix) }
        guard let last = entries.max(by: { ($0.createdSequence, $0.id) < ($1.createdSequence, $1.id) }) else { return "delivered" }
        if last.delivered { return last.channel == .arc ? "received by the centre" : "delivered" }
        if last.attempts == 0 { return "sending" }
        return "not delivered after \(last.attempts) attempt\(last.attempts == 1 ? "" : "s"): \(last.lastError.prefix(80))"
    }

    /// The alarm centre's link, from the running node: whether it answers, and what its
    /// receivers did.
    /// The notifier's self-test: to whom, and how the last one went.
    static func notifierTest(_ t: NotifierTestStatus?) -> String {
        guard let t else { return "" }
        var out = "self-test messages to \(t.recipients.joined(separator: ", ")): "
        if let problem = t.problem {
            out += "PROBLEM: \(problem)"
        } else if let at = t.lastTestMicroseconds {
            out += "last test passed \(EventFormatting.time(at))"
        } else {
            out += "no test yet (vigil calls test)"
        }
        return out + "\n"
    }

    /// Webhook callbacks this run: what they took, what was refused and why.
    static func webhookCallbacks(_ c: WebhookCallbackStatus?) -> String {
        guard let c else { return "" }
        var out = "webhook callbacks: \(c.taken) taken, \(c.refused) refused"
        if let why = c.lastRefusal, let at = c.lastRefusalMicroseconds {
            out += " (last refused \(EventFormatting.time(at)): \(why))"
        }
        return out + "\n"
    }

    static func alarmCentre(_ a: AlarmCentreStatus?) -> String {
        guard let a else { return "" }
        var out = "alarm centre: \(a.receivers.joined(separator: ", "))\(a.encrypted ? "" : " (UNENCRYPTED: set arc.key)")"
        if let problem = a.problem {
            out += "; PROBLEM: \(problem)"
        } else if let last = a.lastAcknowledgedMicroseconds {
            out += "; last ACK \(EventFormatting.time(last)) from \(a.lastAcknowledgedBy ?? "?")"
        }
        if let test = a.lastTestMicroseconds {
            out += "; last test \(EventFormatting.time(test)) \(a.lastTestPassed == true ? "passed" : "FAILED")"
        }
        out += "\n  replies: \(a.acknowledged) ACK, \(a.negative) NAK, \(a.notUnderstood) DUH, \(a.garbage) garbage, "
            + "\(a.silent) silent, \(a.closed) closed, \(a.unreachable) unreachable"
        if let skew = a.clockSkewSeconds { out += "; the centre's clock \(skew >= 0 ? "+" : "")\(skew) s from the box's" }
        return out + "\n"
    }

    static func age(_ us: UInt64) -> String {
        let s = us / 1_000_000
        if s < 120 { return "\(s) s" }
        if s < 7_200 { return "\(s / 60) min" }
        return "\(s / 3_600) h \(s % 3_600 / 60) min"
    }
}
