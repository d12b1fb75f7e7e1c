import VigilEvents

/// What a call is: its kind, its takings and ending, the phone that asked, and the folded
/// summary an ended call leaves.
extension CallBook {
    public enum Kind: String, Codable, Sendable { case sos, medical, resident }

    public struct Taking: Codable, Equatable, Sendable {
        /// Who, as they gave it ("Luis", "+34600111222", "a person at box 1a2b").
        public var by: String
        /// `TakenVia` raw value.
        public var via: Int
        public var microseconds: UInt64
        public var sequence: UInt64
    }

    public struct Ending: Codable, Equatable, Sendable {
        /// "cancelled", "expired", "checked in", "resident removed".
        public var reason: String
        public var microseconds: UInt64
        public var sequence: UInt64
    }

    public struct Call: Codable, Equatable, Sendable {
        /// "alert:<origin hex>:<counter>" or "resident:<id>/<ladder>".
        public var id: String
        public var kind: Kind
        /// The alert's id text, for calls that are alerts.
        public var alert: String?
        public var resident: String?
        public var ladder: UInt32?
        /// Whose call it is: "this box", "box 1a2b (heard over the air)", "box 1a2b (from the hub)".
        public var source: String
        /// What, where and since when, as the first message says it.
        public var summary: String
        public var startedMicroseconds: UInt64
        public var startedSequence: UInt64
        /// The short code a reply may name ("T4821"): unique among open calls.
        public var code: String
        /// The tier and round started last.
        public var tier: UInt32
        public var round: UInt32
        public var stepStartedMicroseconds: UInt64
        /// Recipients told so far, in the order they were first told.
        public var told: [String]
        /// When each recipient was last told of this call (for "answering the last call sent to
        /// that number").
        public var lastTold: [String: UInt64]
        /// When each recipient was first told of this call: a reply written after it answers it.
        public var firstTold: [String: UInt64]
        /// The box the call's alert came from (this box's own id for one raised here).
        public var origin: UInt64
        /// The call's number at this box, 1 to 999, unique among open calls: what the alarm
        /// receiving centre tells open calls apart by (Contact ID's zone or user field). Made
        /// like the code, from the call's id and time: a call opened before the log was open
        /// (decision 0002) keeps its number when it is carried into the log.
        public var number: UInt64
        public var taken: Taking?
        public var ended: Ending?
        /// A phone's unverified call (`Phone`); nil for every other call.
        public var phone: Phone? = nil

        public var isOpen: Bool { ended == nil }
        /// Open and nobody has taken it: the tree still walks.
        public var isUnanswered: Bool { ended == nil && taken == nil }
    }

    /// Where a phone's call came from: a message nobody vouches for, written by whatever was in
    /// radio range. Staff decide it (`PhoneCallDecided`): confirmed, it becomes an alert of the
    /// network; dismissed, it ends.
    public struct Phone: Codable, Equatable, Sendable {
        /// The first message's sender, as an address text ("AA:BB:…/random").
        public var peer: String
        /// The message that opened the call.
        public var messageID: String
        /// Its text, printable, at most 200 characters.
        public var text: String
        /// Phones' sos and medical messages taken into this call while it was unanswered
        /// (the first included): one call, one message to each person, however many phones ask.
        public var messages: UInt32
        /// Confirmed: the alert raised from it.
        public var confirmedAlert: String?
        /// The other phones' messages taken into it, the latest `keptFolded` (who wrote what: a
        /// real call among pranks is there for staff to see before they dismiss it).
        public var folded: [Folded]?
    }

    public struct Folded: Codable, Equatable, Sendable {
        public var peer: String
        public var text: String
        public var microseconds: UInt64
    }
}
