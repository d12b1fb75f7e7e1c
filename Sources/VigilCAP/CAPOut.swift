import Foundation

/// Vigil's alerts as CAP 1.2, the one mapping the box (`/cap.atom` on its page) and the hub use
/// (docs/warnings.md "CAP out"). Pure: the caller hands in what it knows, as values.
///
/// What never goes in: an alert's text (a phone's words, a resident's name or room), who took or
/// acknowledged it, a phone number, or an alert's own position (a phone's, perhaps a person's).
/// An alert is placed at the site of the box that raised it when the writer knows that site (a
/// shelter is a public place); otherwise it is described, not placed.
public enum CAPOut {
    /// One alert as its writer knows it.
    public struct Alert: Sendable, Equatable {
        /// `ORIGIN:COUNTER` (hex), unique in the network.
        public var id: String
        /// sos, medical, fire, flood, evacuate, road-hazard, area-hazard, info.
        public var kind: String
        /// info, warning, critical.
        public var severity: String
        public var raisedMicroseconds: UInt64
        /// 0: no expiry (it ends when cancelled).
        public var expiresMicroseconds: UInt64
        /// Where it was raised, when the writer knows: the site of the box that raised it.
        public var place: Place?
        /// Seen where it was raised (Observed), or heard from elsewhere (Likely).
        public var observed: Bool
        /// When it was cancelled; nil while in force.
        public var cancelledMicroseconds: UInt64?

        public init(id: String, kind: String, severity: String, raisedMicroseconds: UInt64, expiresMicroseconds: UInt64,
                    place: Place?, observed: Bool, cancelledMicroseconds: UInt64? = nil) {
            self.id = id
            self.kind = kind
            self.severity = severity
            self.raisedMicroseconds = raisedMicroseconds
            self.expiresMicroseconds = expiresMicroseconds
            self.place = place
            self.observed = observed
            self.cancelledMicroseconds = cancelledMicroseconds
        }
    }

    /// A box's site: its name and, when configured, its point.
    public struct Place: Sendable, Equatable {
        public var name: String
        public var point: CAPPoint?

        public init(name: String, point: CAPPoint?) {
            self.name = name
            self.point = point
        }
    }

    /// Who writes.
    public struct Writer: Sendable, Equatable {
        /// CAP's `sender`: no spaces or commas ("vigil-box-1a2b3c").
        public var sender: String
        /// CAP's `senderName` ("Vigil at Town Hall shelter").
        public var name: String

        public init(sender: String, name: String) {
            self.sender = sender
            self.name = name
        }
    }

    /// The radius drawn around the site: a shelter and its grounds, not a room.
    public static let siteRadiusKilometres = 0.5

    /// The documents for `alerts`: an Alert for each in force, a Cancel (naming it) for each
    /// cancelled. Newest first.
    public static func documents(_ alerts: [Alert], writer: Writer) -> [CAPAlert] {
        alerts.sorted { ($0.cancelledMicroseconds ?? $0.raisedMicroseconds, $0.id) > ($1.cancelledMicroseconds ?? $1.raisedMicroseconds, $1.id) }
            .map { a in a.cancelledMicroseconds.map { cancel(a, at: $0, writer: writer) } ?? alert(a, writer: writer) }
    }

    /// A call for help (sos, medical): published to those who answer calls, not to everyone.
    public static func isCallForHelp(_ a: Alert) -> Bool { a.kind == "sos" || a.kind == "medical" }

    /// CAP's identifier for an alert: its network id with the colon made a dash.
    public static func identifier(_ a: Alert) -> String { "vigil-" + a.id.replacingOccurrences(of: ":", with: "-").lowercased() }

    /// CAP writes whole seconds: the value is what a reader of the document reads.
    static func time(_ microseconds: UInt64) -> CAPTime { CAPTime(microseconds: Int64(clamping: microseconds / 1_000_000 * 1_000_000)) }

    static func alert(_ a: Alert, writer: Writer) -> CAPAlert {
        let m = mapping(kind: a.kind)
        let origin = a.id.split(separator: ":").first.map(String.init) ?? ""
        var area = CAPArea(description: a.place?.name ?? "A shelter of the Vigil network (box \(origin))")
        if let point = a.place?.point {
            area.circles = [CAPCircle(center: point, radiusKilometres: siteRadiusKilometres)]
        }
        let info = CAPInfo(language: "en", categories: [m.category], event: m.event, responseTypes: [m.response], urgency: m.urgency,
                           severity: severity(a.severity), certainty: a.observed ? .observed : .likely,
                           expires: a.expiresMicroseconds == 0 ? nil : time(a.expiresMicroseconds), senderName: writer.name,
                           headline: m.headline + " at " + (a.place?.name ?? "a shelter of the network"),
                           instruction: m.instruction, areas: [area])
        return CAPAlert(identifier: identifier(a), sender: writer.sender, sent: time(a.raisedMicroseconds), status: .actual,
                        messageType: .alert, scope: .public, infos: [info])
    }

    static func cancel(_ a: Alert, at microseconds: UInt64, writer: Writer) -> CAPAlert {
        let original = CAPReference(sender: writer.sender, identifier: identifier(a), sent: time(a.raisedMicroseconds))
        return CAPAlert(identifier: identifier(a) + "-cancel", sender: writer.sender, sent: time(max(microseconds, a.raisedMicroseconds)),
                        status: .actual, messageType: .cancel, scope: .public,
                        note: "\(mapping(kind: a.kind).event) cancelled", references: [original], infos: [])
    }

    /// The documented table (docs/warnings.md "CAP out").
    struct Mapping {
        var category: CAPInfo.Category
        var event: String
        var response: CAPInfo.ResponseType
        var urgency: CAPInfo.Urgency
        var headline: String
        var instruction: String?
    }

    static func mapping(kind: String) -> Mapping {
        switch kind {
        case "sos": Mapping(category: .rescue, event: "Call for help", response: .assess, urgency: .immediate,
                            headline: "Call for help", instruction: "Staff are answering it.")
        case "medical": Mapping(category: .health, event: "Medical emergency", response: .assess, urgency: .immediate,
                                headline: "Medical emergency", instruction: "Staff are answering it.")
        case "fire": Mapping(category: .fire, event: "Fire", response: .avoid, urgency: .immediate, headline: "Fire reported",
                             instruction: "Keep away and follow staff's directions.")
        case "flood": Mapping(category: .met, event: "Flood", response: .avoid, urgency: .immediate, headline: "Flooding reported",
                              instruction: "Keep away from flood water and follow staff's directions.")
        case "evacuate": Mapping(category: .safety, event: "Evacuation", response: .evacuate, urgency: .immediate,
                                 headline: "Evacuation ordered", instruction: "Leave by the nearest safe exit and follow staff's directions.")
        case "road-hazard": Mapping(category: .transport, event: "Road hazard", response: .avoid, urgency: .expected,
                                    headline: "Road hazard", instruction: "Take care near the road.")
        case "area-hazard": Mapping(category: .safety, event: "Hazard in the area", response: .avoid, urgency: .expected,
                                    headline: "Hazard in the area", instruction: nil)
        default: Mapping(category: .other, event: "Notice", response: .none, urgency: .unknown, headline: "Notice", instruction: nil)
        }
    }

    static func severity(_ name: String) -> CAPInfo.Severity {
        switch name {
        case "critical": .extreme
        case "warning": .severe
        case "info": .minor
        default: .unknown
        }
    }

    /// The Atom index of `documents`, each linked as `cap/IDENTIFIER.xml` beside the index.
    public static func index(_ documents: [CAPAlert], writer: Writer, id: String, selfLink: String?) -> [UInt8] {
        CAPAtomWriter.write(
            id: id, title: "Alerts from " + writer.name, author: writer.name, selfLink: selfLink,
            entries: documents.map { d in
                let title = d.messageType == .cancel ? (d.note ?? "Cancelled") : (d.infos.first?.headline ?? d.identifier)
                return .init(id: "urn:vigil:cap:\(d.sender):\(d.identifier)", title: title, updated: d.sent, link: link(d))
            },
            emptyUpdated: CAPTime(microseconds: 0))
    }

    /// Where a document is, relative to the index.
    public static func link(_ document: CAPAlert) -> String { "cap/\(document.identifier).xml" }
}
