import FoundationEssentials // trimming a call's name: value types, no I/O

/// Which call a reply, a name or a code takes: what SMS replies, `vigil alert take` and the page find.
extension CallBook {
    /// The calls an SMS reply from `number`, written at `time`, may take: open calls first told
    /// to that number before `time`; with a short code, only the call with that code, else the
    /// unanswered ones, the last told first. More than one without a code is ambiguous: the
    /// caller asks for the code rather than guess.
    public func callsForReply(from number: String, code: String?, writtenAt time: UInt64) -> [Call] {
        let candidates = calls.values.filter { c in c.isOpen && (c.firstTold[number].map { $0 <= time } ?? false) }
        if let code {
            return candidates.filter { $0.code.caseInsensitiveCompare(code) }
        }
        // A bare TAKE is for the box's own and other boxes' calls first: a phone's unverified
        // call (a prank, maybe) must not make a reply to a real one ambiguous.
        var unanswered = candidates.filter(\.isUnanswered)
        if unanswered.contains(where: { $0.phone == nil }) { unanswered.removeAll { $0.phone != nil } }
        return unanswered.sorted { a, b in
            ((a.lastTold[number] ?? 0), a.startedSequence) > ((b.lastTold[number] ?? 0), b.startedSequence)
        }
    }

    /// The one call a reply takes (see `callsForReply`), nil when none or several.
    public func callForReply(from number: String, code: String?, writtenAt time: UInt64 = .max) -> Call? {
        let found = callsForReply(from: number, code: code, writtenAt: time)
        return found.count == 1 ? found[0] : nil
    }

    /// The call a person names: by its id, an alert's id text, or an open call's short code (any
    /// case). What `vigil alert take`, `vigil calls confirm` and their page and API forms find.
    public func call(named name: String) -> Call? {
        let wanted = name.trimmingCharacters(in: .whitespaces)
        return calls[wanted] ?? calls[Self.id(alert: wanted)] ?? open.first { $0.code.lowercased() == wanted.lowercased() }
    }

    /// The call of an alert id text, or of a resident's ladder.
    public static func id(alert: String) -> String { "alert:\(alert)" }
    public static func id(resident: String, ladder: UInt32) -> String { "resident:\(resident)/\(ladder)" }
}

extension String {
    fileprivate func caseInsensitiveCompare(_ other: String) -> Bool { lowercased() == other.lowercased() }
}
