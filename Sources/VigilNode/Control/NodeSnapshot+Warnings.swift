import VigilCAP
import VigilCore
import VigilEvents

/// Public warnings in the snapshot (docs/warnings.md "On the box"): what the page shows.
extension NodeSnapshot {
    /// A public warning in force here, in the chosen language, every text as one printable line.
    public struct PublicWarningView: Sendable, Codable, Equatable {
        /// listed, shown or sounds (docs/warnings.md "How loud").
        public var level: String
        /// Actual, Exercise, System, Test or Draft.
        public var status: String
        /// Alert, Update.
        public var messageType: String
        public var event: String
        public var headline: String?
        public var description: String?
        public var instruction: String?
        /// The areas' descriptions.
        public var areas: [String]
        /// Who issued it: its sender's name, else its sender.
        public var issuer: String
        public var severity: String
        public var urgency: String
        public var certainty: String
        public var sentMicroseconds: Int64
        public var expiresMicroseconds: Int64
        /// The feed it came from, or "staff"; nil in the public view.
        public var source: String?
        /// The `warning-received` event behind it; nil in the public view.
        public var sequence: UInt64?

        public static let limit = 20
    }

    static func publicWarnings(_ book: WarningBook) -> [PublicWarningView] {
        book.inForceHere.prefix(PublicWarningView.limit).map { w in
            let info = w.infos.first
            let source = book.source(of: w.key)
            return PublicWarningView(
                level: w.level.rawValue, status: w.alert.status.rawValue, messageType: w.alert.messageType.rawValue,
                event: CAPText.oneLine(info?.event ?? w.alert.identifier, limit: 120),
                headline: info?.headline.map { CAPText.oneLine($0, limit: 200) },
                description: info?.description.map { CAPText.oneLine($0, limit: 1_500) },
                instruction: info?.instruction.map { CAPText.oneLine($0, limit: 1_000) },
                areas: (info?.areas ?? []).prefix(8).map { CAPText.oneLine($0.description, limit: 160) },
                issuer: CAPText.oneLine(info?.senderName ?? w.alert.sender, limit: 120),
                severity: info?.severity.rawValue ?? "Unknown", urgency: info?.urgency.rawValue ?? "Unknown",
                certainty: info?.certainty.rawValue ?? "Unknown",
                sentMicroseconds: w.alert.sent.microseconds, expiresMicroseconds: w.expiresMicroseconds,
                source: source.map { $0.feed.isEmpty ? "staff" : CAPText.oneLine($0.feed, limit: 200) }, sequence: source?.sequence)
        }
    }

    /// Alerts cancelled lately (AlertBook keeps them an hour after they end), newest first: what
    /// CAP out tells its readers with a Cancel.
    static func recentlyCancelled(_ alerts: AlertBook) -> [AlertView] {
        alerts.alerts.values.filter { $0.cancelled && $0.tombstone != true }
            .sorted { ($0.cancelledMicroseconds ?? 0, $0.idText) > ($1.cancelledMicroseconds ?? 0, $1.idText) }
            .prefix(AlertView.cancelledLimit)
            .map { alertView($0, cancelled: true) }
    }

    /// One alert as the snapshot shows it. A cancelled one keeps what identifies it and drops
    /// its text and position: all a Cancel needs, and nothing anyone wrote.
    static func alertView(_ a: AlertBook.Entry, acknowledged: String? = nil, cancelled: Bool = false) -> AlertView {
        let kind = AlertKind(rawValue: a.kind) ?? .unspecified
        return AlertView(id: a.idText, kind: slug(kind), severity: name(AlertSeverity(rawValue: a.severity) ?? .unspecified),
                         category: category(kind), raisedHere: a.raisedHere, hops: a.hops, raisedMicroseconds: a.firstMicroseconds,
                         expiresMicroseconds: a.expiresAtMicroseconds, text: cancelled ? "" : a.text,
                         latitude: cancelled ? nil : a.latitudeE7.map { Double($0) / 1e7 },
                         longitude: cancelled ? nil : a.longitudeE7.map { Double($0) / 1e7 },
                         acknowledged: acknowledged,
                         cancelledMicroseconds: cancelled ? a.cancelledMicroseconds ?? a.firstMicroseconds : nil)
    }

    /// The box's alerts as CAP out writes them (docs/warnings.md "CAP out"): those in force and
    /// those cancelled lately; one raised here is at `site`.
    public func capAlerts(site: CAPOut.Place) -> [CAPOut.Alert] {
        (alerts + (recentlyCancelled ?? [])).map { a in
            CAPOut.Alert(id: a.id, kind: a.kind, severity: a.severity, raisedMicroseconds: a.raisedMicroseconds,
                         expiresMicroseconds: a.expiresMicroseconds, place: a.raisedHere ? site : nil, observed: a.raisedHere,
                         cancelledMicroseconds: a.cancelledMicroseconds)
        }
    }
}
