import VigilCAP
import VigilEvents

/// What the button and acknowledgements say about the alarms: whether the button is held now
/// (for LED feedback), and which sounding alarms someone has silenced.
public struct AlarmState: Projection {
    public private(set) var buttonHeld = false
    public private(set) var buttonEdgeSequence: UInt64 = 0
    public private(set) var buttonEdgeMicroseconds: UInt64 = 0
    /// Keys of alarms silenced by an acknowledgement (see `AlarmKey`).
    public private(set) var silenced: Set<String> = []
    public private(set) var acknowledgements: UInt64 = 0
    public private(set) var lastAcknowledgementSequence: UInt64 = 0
    /// The press held now re-affirmed this box's SOS (its long press came with an SOS already
    /// active): held on, it cancels it. The amber "keep holding to cancel" feedback follows from
    /// this. Cleared at the next edge.
    public private(set) var reaffirmedWhileHeld = false
    public private(set) var reaffirmedSequence: UInt64 = 0

    public init() {}

    public mutating func apply(_ input: ProjectionInput) {
        // Only the SOS button (role empty) gives "held" feedback; check-in buttons do not.
        guard case .event(let event) = input, case .buttonInput(let b) = event.body, b.role.isEmpty else { return }
        buttonHeld = b.edge == .falling
        reaffirmedWhileHeld = false
        buttonEdgeSequence = event.sequence
        buttonEdgeMicroseconds = event.timeMicroseconds
    }

    /// An `AlertReaffirmed` made with the button while it is still held.
    mutating func reaffirmed(_ event: Event) {
        guard case .alertReaffirmed(let r) = event.body, r.by == "button", buttonHeld else { return }
        reaffirmedWhileHeld = true
        reaffirmedSequence = event.sequence
    }

    /// Silences every alarm sounding when the acknowledgement was made.
    mutating func acknowledge(sounding: [String], event: Event) {
        silenced.formUnion(sounding)
        acknowledgements += 1
        lastAcknowledgementSequence = event.sequence
    }

    /// Forgets silenced keys whose alarms are over, so the set stays small.
    mutating func keepOnly(_ active: Set<String>) {
        if !silenced.isSubset(of: active) { silenced.formIntersection(active) }
    }

    enum CodingKeys: String, CodingKey {
        case buttonHeld, buttonEdgeSequence, buttonEdgeMicroseconds, silenced, acknowledgements, lastAcknowledgementSequence
        case reaffirmedWhileHeld, reaffirmedSequence
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        buttonHeld = try c.decode(Bool.self, forKey: .buttonHeld)
        buttonEdgeSequence = try c.decode(UInt64.self, forKey: .buttonEdgeSequence)
        buttonEdgeMicroseconds = try c.decode(UInt64.self, forKey: .buttonEdgeMicroseconds)
        silenced = Set(try c.decode([String].self, forKey: .silenced))
        acknowledgements = try c.decode(UInt64.self, forKey: .acknowledgements)
        lastAcknowledgementSequence = try c.decode(UInt64.self, forKey: .lastAcknowledgementSequence)
        reaffirmedWhileHeld = try c.decodeIfPresent(Bool.self, forKey: .reaffirmedWhileHeld) ?? false
        reaffirmedSequence = try c.decodeIfPresent(UInt64.self, forKey: .reaffirmedSequence) ?? 0
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(buttonHeld, forKey: .buttonHeld)
        try c.encode(buttonEdgeSequence, forKey: .buttonEdgeSequence)
        try c.encode(buttonEdgeMicroseconds, forKey: .buttonEdgeMicroseconds)
        try c.encode(silenced.sorted(), forKey: .silenced) // sets have no stable order
        try c.encode(acknowledgements, forKey: .acknowledgements)
        try c.encode(lastAcknowledgementSequence, forKey: .lastAcknowledgementSequence)
        try c.encode(reaffirmedWhileHeld, forKey: .reaffirmedWhileHeld)
        try c.encode(reaffirmedSequence, forKey: .reaffirmedSequence)
    }
}

/// Names of alarms, for silencing: a resident's ladder instance, an SOS alert raised here, or a
/// call for help received from another box.
public enum AlarmKey {
    public static func ladder(_ r: EscalationBook.ResidentState) -> String { "ladder:\(r.id)/\(r.ladder)" }
    public static func sos(_ a: AlertBook.Entry) -> String { "sos:\(a.idText)" }
    /// A call for help received from another box, chirping until answered.
    public static func received(_ a: AlertBook.Entry) -> String { "received:\(a.idText)" }
    /// A public warning's tone: by sender and identifier, so a repeat of it (a new `sent`) stays
    /// silenced, while an update (a new identifier) sounds again.
    public static func warning(_ w: CAPWarning) -> String { "warning:\(w.key.sender)/\(w.key.identifier)" }
}
