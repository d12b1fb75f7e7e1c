import VigilCAP
import VigilEvents

/// Public warnings on the call path (docs/warnings.md, "The call path"): a warning that sounds
/// here is told to the staff channel (`notify.staff`) once, when it starts sounding; a message
/// not yet delivered is withdrawn when its warning stops sounding (it ended, was cancelled, or
/// an update replaced it: the update, if it sounds, is told instead). A repeat of a warning (the
/// same sender and identifier, a later `sent`) is not news and tells no one again.
extension Projections {
    mutating func applyWarning(_ event: Event) {
        let before = Set(warnings.inForceHere.filter { $0.level == .sounds }.map { Self.warningEntryID($0.key) })
        warnings.apply(event)
        let sounding = warnings.inForceHere.filter { $0.level == .sounds }
        let now = Set(sounding.map { Self.warningEntryID($0.key) })
        for entry in outbox.pending where entry.channel == .staff && entry.id.hasPrefix(Self.warningEntryPrefix) && !now.contains(entry.id) {
            outbox.withdraw(id: entry.id)
        }
        let staff = escalations.context.staff
        if !staff.isEmpty {
            // At most `warningMessagesPerHour` (event time, from the outbox itself: replay gives
            // the same): a feed gone mad does not send the staff a message a minute. The box
            // still sounds for every one, and the page lists them.
            // Warnings heard on the air have a smaller budget of their own (a stolen box may
            // invent them: it must not spend what the box's own feeds need).
            let heardPrefix = Self.warningEntryPrefix + WarningBook.airSender + "/"
            var lastHour = (own: 0, heard: 0)
            for entry in outbox.entries.values where entry.id.hasPrefix(Self.warningEntryPrefix)
                && entry.createdMicroseconds &+ 3_600_000_000 > event.timeMicroseconds {
                if entry.id.hasPrefix(heardPrefix) { lastHour.heard += 1 } else { lastHour.own += 1 }
            }
            for warning in sounding where !before.contains(Self.warningEntryID(warning.key)) {
                let heard = WarningBook.isHeard(warning.key)
                guard heard ? lastHour.heard < WarningBook.heardMessagesPerHour : lastHour.own < Self.warningMessagesPerHour else { continue }
                outbox.add(id: Self.warningEntryID(warning.key), channel: .staff, recipients: staff,
                           text: warningText(warning), event: event)
                if heard { lastHour.heard += 1 } else { lastHour.own += 1 }
            }
        }
        settleAlarms()
    }

    /// Staff messages about public warnings in an hour, at most.
    static let warningMessagesPerHour = 6

    static let warningEntryPrefix = "warning/"

    /// One entry per warning: its sender and identifier, which a repeat keeps. Long ones (or
    /// ones with characters a line cannot show) by a digest of both, so no two share an entry.
    static func warningEntryID(_ key: CAPReference) -> String {
        let readable = key.sender + "/" + key.identifier
        if readable.utf8.count <= 200, CAPText.oneLine(readable, limit: 200) == readable { return warningEntryPrefix + readable }
        return warningEntryPrefix + String(WarningBook.fnv1a(Array(key.sender.utf8) + [0] + Array(key.identifier.utf8)), radix: 16)
    }

    /// What the staff are told: where, what, how bad, until when, what to do, and who says so.
    /// All of it the authority's public text; nothing about anyone in the shelter.
    func warningText(_ warning: CAPWarning) -> String {
        let info = warning.infos.first
        let site = escalations.context.siteText
        var text = "Public warning for \(site.isEmpty ? "this shelter" : site): "
            + CAPText.oneLine(info?.headline ?? info?.event ?? "a public warning", limit: 160)
        // A warning heard on the air has no grading (its frame carries only how loud it is).
        if let info, info.severity != .unknown { text += " (\(info.severity.rawValue), \(info.urgency.rawValue))" }
        let until = info?.expires.map(\.description)
            ?? CivilTime(utcSeconds: warning.expiresMicroseconds / 1_000_000).text + " UTC"
        text += ", until \(until)."
        if let instruction = info?.instruction { text += " " + CAPText.oneLine(instruction, limit: 240) }
        text += " From " + CAPText.oneLine(info?.senderName ?? warning.alert.sender, limit: 120) + "."
        return text
    }
}
