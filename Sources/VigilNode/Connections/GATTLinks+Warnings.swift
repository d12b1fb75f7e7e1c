import Foundation
import VigilCAP
import VigilCore
import VigilEvents
import VigilGATT

/// Public warnings for phones on a link (docs/connections.md "Public warnings to phones"): a
/// phone subscribed to the message characteristic is notified of each warning in force here
/// (the box's own and those neighbours told of on the air, shown or sounding), once per link, as
/// an EchoAlert-style JSON message of category "warning". Derived from the warnings projection:
/// a new link, a new subscription or a change of the warnings tells what that link was not told
/// yet; nothing is logged (a notification is not acknowledged: counted as sent, not as read).
extension GATTLinks {
    /// Warnings a link is told at most at once (the loudest first).
    static let warningsPerLink = 8

    func reconcile() {
        guard warningsChanged else { return }
        warningsChanged = false
        for fd in links.keys.sorted() { tellWarnings(fd) }
    }

    /// Notifies the link of the warnings in force it was not told yet, if it subscribed.
    func tellWarnings(_ fd: Int32) {
        guard let database, let link = links[fd],
              let index = database.characteristicIndex(of: BoxServices.message, in: BoxServices.messages),
              link.server.subscriptions[index]?.notify == true else { return }
        let book = context.projections.warnings
        let now = book.inForceHere.filter { $0.level == .sounds || $0.level == .shown }.prefix(Self.warningsPerLink)
        var told = link.warningsTold.intersection(now.map(Self.warningKey))
        for warning in now where !told.contains(Self.warningKey(warning)) {
            let message = Self.phoneMessage(warning)
            guard let json = try? Self.encoder.encode(message) else { continue }
            let parts = MessageFrames.split(Array(json), valueLength: link.server.mtu - 3)
            let pdus = parts.compactMap { try? link.server.notification(index, $0) }
            let sent = pdus.count == parts.count && pdus.allSatisfy { sendReporting($0, fd) }
            ledger.countWarningNotified(sent)
            // A link that would not take one takes no more now (the phone's reader may hold half
            // a message): tried again when the warnings change, from the first not told.
            guard sent else { break }
            told.insert(Self.warningKey(warning))
        }
        links[fd]?.warningsTold = told
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    /// A warning is told again when it is another warning or another level.
    static func warningKey(_ w: CAPWarning) -> String { "\(WarningBook.airName(w))/\(w.level.rawValue)" }

    /// The message a phone gets: its id names the warning as the air does (the same warning
    /// from this box and a neighbour is one), its content what the page says of it.
    static func phoneMessage(_ w: CAPWarning) -> PhoneMessage {
        var content = "Public warning: " + OutputPolicy.warningText(w) + "."
        if let instruction = w.infos.first?.instruction { content += " " + CAPText.oneLine(instruction, limit: 600) }
        return PhoneMessage(id: "warning-" + String(WarningBook.airName(w), radix: 16), category: "warning",
                            content: String(content.prefix(1_000)))
    }
}
