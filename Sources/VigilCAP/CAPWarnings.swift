/// The public warnings in force at a site, as CAP messages arrive and time passes: a pure state
/// machine (no clock; times come with the calls), the rules the box's warnings projection will
/// apply event by event (docs/warnings.md, "Which warnings are in force").
///
/// The ways CAP consumers fail, and what this does instead:
/// - an Update or a Cancel that does not clear what it replaces: `references` end every message
///   they name, and a message that was ended is never taken again, even if it arrives late;
/// - test messages that sound: only status Actual can sound; Exercise, System, Test and Draft
///   are kept and shown with their status;
/// - duplicates across feeds: a message is one message by (sender, identifier, sent), and a
///   message repeated with a new `sent` but the same sender and identifier replaces the one in
///   force without being news;
/// - alerts that expired before they were sent, or before they arrived: not taken.
public struct CAPWarnings: Sendable, Equatable, Codable {
    /// Warnings in force, by the message that carries them.
    public private(set) var current: [CAPReference: CAPWarning] = [:]
    /// Messages ended (updated, cancelled, expired, repeated), kept so that a late copy is not
    /// taken again; the oldest are forgotten beyond `endedLimit`.
    public private(set) var ended: [CAPReference: Ended] = [:]

    /// How a message ended, and by whom: `binding` when its own origin (or staff, or time) ended
    /// it, so no origin's copy is taken again; otherwise only its ender's copies are refused.
    public struct Ended: Sendable, Equatable, Codable {
        public var ending: CAPWarning.Ending
        public var origin: CAPOrigin
        public var binding: Bool
    }

    public static let currentLimit = 256
    public static let endedLimit = 4096
    /// How long a warning with no `expires` stays in force unless cancelled or updated.
    public static let defaultLifetimeMicroseconds: Int64 = 24 * 3_600_000_000

    public init() {}

    /// What a message did.
    public enum Outcome: Sendable, Equatable {
        /// A new warning (`CAPWarning.level` says how loud).
        case new(CAPReference)
        /// The same sender and identifier again with another `sent`: it replaces the one in force
        /// and is not news (nothing sounds again for it).
        case repeated(CAPReference, replacing: CAPReference)
        /// An Update: the warnings it names are ended, it is in force.
        case updated(CAPReference, replacing: [CAPReference])
        /// A Cancel: the warnings it names are ended.
        case cancelled([CAPReference])
        /// Not taken, and why.
        case ignored(Ignored)
    }

    public enum Ignored: String, Sendable, Equatable, Codable {
        /// This very message was taken before (from this feed or another).
        case duplicate
        /// The message was updated, cancelled or repeated by a newer one already.
        case superseded
        /// Its `expires` is before its `sent`.
        case expiredBeforeSent = "expired_before_sent"
        /// It had expired when it arrived.
        case expiredOnArrival = "expired_on_arrival"
        /// Ack and Error messages are about messages, not warnings.
        case notAWarning = "not_a_warning"
        /// Restricted and Private messages are for their addressees, not a shelter's public.
        case notPublic = "not_public"
        /// `currentLimit` warnings are in force already.
        case full
    }

    /// Takes one message that arrived at `receivedMicroseconds` from `origin`.
    ///
    /// A message ends (cancels, updates, repeats) only warnings of its own sender that came from
    /// its own origin (the same feed), or any of its sender's when staff handed it in: a feed
    /// cannot end what another feed brought by naming its sender and identifier. A message that
    /// ended is not taken again from the origin that ended it; from any origin when it was ended
    /// by the origin it came from (its own cancel, update or expiry).
    public mutating func apply(_ alert: CAPAlert, receivedMicroseconds: Int64, settings: CAPWarningSettings,
                               origin: CAPOrigin = CAPOrigin(feed: "")) -> Outcome {
        let key = alert.key
        if current[key] != nil { return .ignored(.duplicate) }
        if let e = ended[key], e.binding || e.origin == origin {
            return .ignored(e.ending == .expired || e.ending == .taken ? .duplicate : .superseded)
        }
        switch alert.messageType {
        case .ack, .error: return .ignored(.notAWarning)
        case .cancel:
            let named = alert.references.filter { $0.sender == alert.sender }
            let inForce = inForceNamed(by: named, origin: origin)
            // Named and not heard yet: a late copy from the same origin is not taken.
            for reference in named where current[reference] == nil && ended[reference] == nil {
                end(reference, .cancelled, origin: origin, binding: origin.staff)
            }
            for reference in inForce { end(reference, .cancelled, origin: origin, binding: true) }
            end(key, .taken, origin: origin, binding: true)
            return .cancelled(inForce)
        case .alert, .update:
            break
        }
        guard alert.scope == .public else { return .ignored(.notPublic) }
        let warning = CAPWarning(alert, receivedMicroseconds: receivedMicroseconds, settings: settings, origin: origin)
        if warning.expiresMicroseconds <= alert.sent.microseconds { return .ignored(.expiredBeforeSent) }
        if warning.expiresMicroseconds <= receivedMicroseconds { return .ignored(.expiredOnArrival) }
        // A repeat of a message in force (same sender and identifier): the newer one stays. Another
        // origin's copy changes nothing: the one in force stays as its own origin said it.
        if let inForce = current.values.first(where: { $0.key.sender == key.sender && $0.key.identifier == key.identifier }) {
            guard Self.may(origin, end: inForce) else { return .ignored(.duplicate) }
            if inForce.key.sent > key.sent { return .ignored(.superseded) }
            current[key] = warning
            end(inForce.key, .repeated, origin: origin, binding: true)
            return .repeated(key, replacing: inForce.key)
        }
        var replaced: [CAPReference] = []
        if alert.messageType == .update {
            let named = alert.references.filter { $0.sender == alert.sender }
            replaced = inForceNamed(by: named, origin: origin)
            for reference in named where current[reference] == nil && ended[reference] == nil {
                end(reference, .updated, origin: origin, binding: origin.staff)
            }
            for reference in replaced { end(reference, .updated, origin: origin, binding: true) }
        }
        guard makeRoom(for: warning) else { return .ignored(.full) }
        current[key] = warning
        return alert.messageType == .update ? .updated(key, replacing: replaced) : .new(key)
    }

    /// Whether a message from `origin` may end `warning`: staff may end any; a feed, what it brought.
    static func may(_ origin: CAPOrigin, end warning: CAPWarning) -> Bool { origin.staff || warning.origin == origin }

    /// At `currentLimit`, the quietest and oldest warning in force gives way to one at least as
    /// loud; a warning that would sound is never refused for room.
    private mutating func makeRoom(for warning: CAPWarning) -> Bool {
        guard current.count >= Self.currentLimit else { return true }
        guard let quietest = current.values.min(by: { ($0.level.rank, $0.key) < ($1.level.rank, $1.key) }),
              quietest.level.rank <= warning.level.rank else { return false }
        current[quietest.key] = nil
        return true
    }

    /// The messages in force from `origin` (any, for staff) that `references` name: exactly, or
    /// by sender and identifier (a reference may carry the `sent` of a repeat this box did not log).
    func inForceNamed(by references: [CAPReference], origin: CAPOrigin) -> [CAPReference] {
        current.values.filter { w in
            Self.may(origin, end: w) && references.contains { $0.sender == w.key.sender && $0.identifier == w.key.identifier }
        }.map(\.key).sorted()
    }

    /// Ends every warning whose time is up at `nowMicroseconds`; returns them, earliest first.
    public mutating func expire(nowMicroseconds: Int64) -> [CAPReference] {
        let due = current.values.filter { $0.expiresMicroseconds <= nowMicroseconds }
            .sorted { ($0.expiresMicroseconds, $0.key.sent) < ($1.expiresMicroseconds, $1.key.sent) }.map(\.key)
        for key in due { end(key, .expired, origin: current[key]?.origin ?? CAPOrigin(feed: ""), binding: true) }
        return due
    }

    /// When the next warning ends by itself (the node's clock arms its timer for it).
    public var nextExpiryMicroseconds: Int64? { current.values.map(\.expiresMicroseconds).min() }

    /// The warnings in force that apply here, loudest first, then newest.
    public var inForceHere: [CAPWarning] {
        current.values.filter(\.appliesHere).sorted {
            ($0.level.rank, $0.key.sent.microseconds) != ($1.level.rank, $1.key.sent.microseconds)
                ? ($0.level.rank, $0.key.sent.microseconds) > ($1.level.rank, $1.key.sent.microseconds)
                : $0.key < $1.key
        }
    }

    /// The loudest output any warning in force asks for.
    public var loudest: CAPWarning.Level { current.values.map(\.level).max { $0.rank < $1.rank } ?? CAPWarning.Level.none }

    // Encoded with its messages in a fixed order (sent, sender, identifier): equal states give
    // equal bytes, which checkpoints and `vigil replay` compare (a dictionary's order is not
    // the same from one process to the next).
    enum CodingKeys: String, CodingKey { case current, ended }
    struct EndedEntry: Codable { var key: CAPReference; var ended: Ended }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        current = Dictionary(try c.decode([CAPWarning].self, forKey: .current).map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        ended = Dictionary(try c.decode([EndedEntry].self, forKey: .ended).map { ($0.key, $0.ended) }, uniquingKeysWith: { first, _ in first })
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(current.values.sorted { $0.key < $1.key }, forKey: .current)
        try c.encode(ended.map { EndedEntry(key: $0.key, ended: $0.value) }.sorted { $0.key < $1.key }, forKey: .ended)
    }

    private mutating func end(_ key: CAPReference, _ ending: CAPWarning.Ending, origin: CAPOrigin, binding: Bool) {
        current[key] = nil
        ended[key] = Ended(ending: ending, origin: origin, binding: binding)
        // The oldest forgotten, a batch at a time, in CAPReference's total order (replay forgets
        // exactly what the live box forgot).
        if ended.count > Self.endedLimit {
            for old in ended.keys.sorted().prefix(Self.endedLimit / 8) { ended[old] = nil }
        }
    }
}

/// Where the box is and what it reads: the settings the warnings are judged by.
public struct CAPWarningSettings: Sendable, Equatable, Codable {
    /// The shelter's place (the site's location); nil when none is configured: then only
    /// geocodes (or an alert with no area at all) make a warning apply here.
    public var site: CAPPoint?
    /// Codes of the place (`SAME=006037`, `EMMA_ID=AU00123`): an area with one of them applies.
    public var geocodes: [CAPValue]
    /// Preferred languages, best first ("es", "en-AU"): the `info` blocks shown are those of the
    /// first language that has any, else those of the document's first language.
    public var languages: [String]

    public init(site: CAPPoint? = nil, geocodes: [CAPValue] = [], languages: [String] = []) {
        self.site = site
        self.geocodes = geocodes
        self.languages = languages
    }
}

/// One warning in force: the message, the infos chosen for the site's language, whether it
/// applies here and how loud it is.
public struct CAPWarning: Sendable, Equatable, Codable {
    public var key: CAPReference
    public var alert: CAPAlert
    /// The `info` blocks in the chosen language (at least one unless the alert has none).
    public var infos: [CAPInfo]
    public var appliesHere: Bool
    public var level: Level
    public var receivedMicroseconds: Int64
    /// The latest `expires` of the chosen infos, or `sent` + the default lifetime; at most
    /// `maximumLifetimeMicroseconds` after it was sent or arrived, whichever is later.
    public var expiresMicroseconds: Int64
    /// Where it came from: only that origin (or staff) may end it.
    public var origin: CAPOrigin

    /// A week: no warning stays on a box longer without being heard again (a feed's `expires` in
    /// 9999 does not light amber for ever).
    public static let maximumLifetimeMicroseconds: Int64 = 7 * 24 * 3_600_000_000

    /// How a warning is announced (docs/warnings.md, "How loud").
    public enum Level: String, Sendable, Equatable, Codable, CaseIterable {
        /// Kept, not shown on the box (it is for somewhere else).
        case none
        /// On the page and status; not on the LEDs (a test, an exercise, a minor or future one).
        case listed
        /// Amber on the box, on the page; the buzzer stays quiet.
        case shown
        /// Amber and the warning's buzzer pattern: an actual, severe or extreme, immediate or
        /// expected, observed or likely warning for this place.
        case sounds

        public var rank: Int {
            switch self {
            case .none: 0
            case .listed: 1
            case .shown: 2
            case .sounds: 3
            }
        }
    }

    /// Whether `other` would be announced exactly as this one is: the same infos (with the ends
    /// they state), level and place (a feed's repeat with only a new `sent`; the end the box
    /// works out from `sent` when none is stated, or its week's cap, moves with it and is not news).
    public func announcesTheSame(as other: CAPWarning) -> Bool {
        infos == other.infos && level == other.level && appliesHere == other.appliesHere
    }

    /// How a message stopped being in force.
    public enum Ending: String, Sendable, Equatable, Codable {
        case updated, cancelled, expired, repeated
        /// A Cancel message itself, once taken.
        case taken
    }

    public init(_ alert: CAPAlert, receivedMicroseconds: Int64, settings: CAPWarningSettings, origin: CAPOrigin = CAPOrigin(feed: "")) {
        key = alert.key
        self.origin = origin
        self.alert = alert
        self.receivedMicroseconds = receivedMicroseconds
        infos = Self.chooseInfos(alert.infos, languages: settings.languages)
        appliesHere = Self.applies(infos, settings: settings)
        level = Self.level(status: alert.status, infos: infos, appliesHere: appliesHere)
        let expiries = infos.compactMap { $0.expires?.microseconds }
        let stated = expiries.count == infos.count && !expiries.isEmpty
            ? expiries.max() ?? alert.sent.microseconds
            : alert.sent.microseconds + CAPWarnings.defaultLifetimeMicroseconds
        // From when it was sent or arrived, whichever is later (a box's clock may be behind).
        expiresMicroseconds = min(stated, max(receivedMicroseconds, alert.sent.microseconds) &+ Self.maximumLifetimeMicroseconds)
    }

    /// The infos of the first preferred language any info has (exact, then the primary subtag:
    /// "es" takes "es-ES"), else those of the first info's language.
    static func chooseInfos(_ infos: [CAPInfo], languages: [String]) -> [CAPInfo] {
        guard let first = infos.first else { return [] }
        func primary(_ tag: String) -> Substring { tag.lowercased().split(separator: "-").first ?? "" }
        for wanted in languages {
            let exact = infos.filter { $0.language.lowercased() == wanted.lowercased() }
            if !exact.isEmpty { return exact }
            let near = infos.filter { primary($0.language) == primary(wanted) }
            if !near.isEmpty { return near }
        }
        return infos.filter { $0.language == first.language }
    }

    /// Whether any chosen info's area holds the site or one of its codes; an info with no area
    /// covers all its sender covers (the feed was chosen for this place), so it applies.
    static func applies(_ infos: [CAPInfo], settings: CAPWarningSettings) -> Bool {
        infos.contains { info in
            if info.areas.isEmpty { return true }
            return info.areas.contains { area in
                if let site = settings.site, area.contains(site) { return true }
                return area.geocodes.contains { code in settings.geocodes.contains(code) }
            }
        }
    }

    /// The table of docs/warnings.md, "How loud".
    static func level(status: CAPAlert.Status, infos: [CAPInfo], appliesHere: Bool) -> Level {
        guard appliesHere else { return .none }
        guard status == .actual else { return .listed }
        let loudest = infos.map { info -> Level in
            let serious = info.severity == .extreme || info.severity == .severe
            let soon = info.urgency == .immediate || info.urgency == .expected
            let sure = info.certainty == .observed || info.certainty == .likely
            if serious && soon && sure { return .sounds }
            if info.urgency == .past || info.severity == .minor || info.urgency == .future || info.certainty == .unlikely { return .listed }
            return .shown
        }
        return loudest.max { $0.rank < $1.rank } ?? .listed
    }
}

/// Where a message came from: the feed (its configured address) or what staff called it when
/// they handed it in (`staff`).
public struct CAPOrigin: Sendable, Hashable, Codable {
    public var feed: String
    public var staff: Bool

    public init(feed: String, staff: Bool = false) {
        self.feed = feed
        self.staff = staff
    }
}
