import VigilCAP
import VigilEvents

/// The public warnings projection (docs/warnings.md): the rules of `CAPWarnings`, driven by the
/// log. A `WarningReceived` holds the CAP document as its feed served it, read again here with the
/// same reader, so replay gives the same warnings; a `WarningDeadline` ends those whose time is
/// up, so a quiet box ends them too and no clock is read.
public struct WarningBook: Codable, Equatable, Sendable {
    /// Where the box is and which languages it shows (`ProjectionSettings.warnings`).
    public var settings = CAPWarningSettings()
    public private(set) var warnings = CAPWarnings()
    /// Where each message in force came from, for `vigil why` and the page.
    public private(set) var sources: [CAPReference: Source] = [:]
    /// Documents in the log the reader refused (written by a newer reader, or damaged): counted,
    /// never applied.
    public private(set) var unreadable: UInt64 = 0
    /// Public warnings neighbouring boxes told of on the air (`WarningHeard`), in (signer,
    /// digest) order: at most `heardPerSigner` a box and `heardLimit` in all.
    public internal(set) var heard: [HeardWarning] = []
    /// Heard warnings not kept: the book was full.
    public internal(set) var heardDropped: UInt64 = 0

    /// The origin of a message the hub relayed from `feed`: not the feed itself, which the box
    /// may poll under a stricter signature rule of its own.
    public static func relayedOrigin(_ feed: String) -> String { "hub:" + feed }

    /// Where a logged message came from, as the rules of `CAPWarnings` weigh it.
    public static func origin(_ received: WarningReceived) -> CAPOrigin { CAPOrigin(feed: received.feed, staff: received.byStaff) }

    public struct Source: Codable, Equatable, Sendable {
        public var feed: String
        /// The `WarningReceived` that brought it.
        public var sequence: UInt64
        public var signatureVerified: Bool
    }

    public init(settings: CAPWarningSettings = CAPWarningSettings()) {
        self.settings = settings
    }

    /// Applies one event; returns what a warning message did (nil for other events, a deadline
    /// and an unreadable document).
    @discardableResult
    public mutating func apply(_ event: Event) -> CAPWarnings.Outcome? {
        switch event.body {
        case .warningReceived(let received):
            guard let alert = try? CAPReader.read([UInt8](received.document)) else {
                unreadable &+= 1
                return nil
            }
            let outcome = warnings.apply(alert, receivedMicroseconds: Int64(clamping: event.timeMicroseconds), settings: settings,
                                         origin: Self.origin(received))
            switch outcome {
            case .new(let key), .repeated(let key, _), .updated(let key, _):
                sources[key] = Source(feed: received.link.isEmpty ? received.feed : received.link, sequence: event.sequence,
                                      signatureVerified: received.signatureVerified)
            case .cancelled, .ignored:
                break
            }
            forgetEnded()
            return outcome
        case .warningDeadline(let deadline):
            _ = warnings.expire(nowMicroseconds: Int64(clamping: deadline.dueUs))
            heard.removeAll { $0.expiresMicroseconds <= deadline.dueUs }
            forgetEnded()
            return nil
        case .warningHeard(let h):
            applyHeard(h, event: event)
            return nil
        default:
            return nil
        }
    }

    /// Whether `alert`, arriving at `atMicroseconds`, would change the warnings: the node logs only
    /// such messages (a feed polled every two minutes does not fill the card with copies).
    /// A repeat that changes nothing shown (same infos, level, place and end) is not taken
    /// either: a feed re-publishing its alerts every few minutes costs the card nothing.
    public func wouldTake(_ alert: CAPAlert, atMicroseconds: UInt64, origin: CAPOrigin = CAPOrigin(feed: "")) -> Bool {
        whyNot(alert, atMicroseconds: atMicroseconds, origin: origin) == nil
    }

    /// Why `alert` would change nothing, in words; nil when it would.
    public func whyNot(_ alert: CAPAlert, atMicroseconds: UInt64, origin: CAPOrigin = CAPOrigin(feed: "")) -> String? {
        var copy = warnings
        switch copy.apply(alert, receivedMicroseconds: Int64(clamping: atMicroseconds), settings: settings, origin: origin) {
        case .ignored(let why):
            return Self.text(why)
        case .repeated(let new, let old):
            // Nothing new, unless the warning in force would end before half of what the repeat
            // gives it is past (a warning with no stated end lasts a day from its `sent`: a feed
            // repeating it keeps it, logged twice a day, instead of letting it lapse and sound anew).
            let now = Int64(clamping: atMicroseconds)
            if let before = warnings.current[old], let after = copy.current[new], before.announcesTheSame(as: after),
               before.expiresMicroseconds - now >= (after.expiresMicroseconds - now) / 2 {
                return "a repeat of a warning in force, with nothing new"
            }
            return nil
        case .cancelled(let ended):
            // A cancel of nothing in force here changes nothing the box shows: not worth the card
            // (a feed's index may list cancels of long-ended alerts for days).
            return ended.isEmpty ? "it cancels nothing in force here" : nil
        case .new, .updated:
            return nil
        }
    }

    /// What `alert`, arriving at `atMicroseconds`, would do, without doing it.
    public func trial(_ alert: CAPAlert, atMicroseconds: UInt64) -> CAPWarnings.Outcome {
        var copy = warnings
        return copy.apply(alert, receivedMicroseconds: Int64(clamping: atMicroseconds), settings: settings)
    }

    /// Why a message was not taken, in words.
    public static func text(_ why: CAPWarnings.Ignored) -> String {
        switch why {
        case .duplicate: "the box has this message already"
        case .superseded: "a newer message updated, cancelled or repeated it already"
        case .expiredBeforeSent: "it expires before it was sent"
        case .expiredOnArrival: "it has expired"
        case .notAWarning: "Ack and Error messages are not warnings"
        case .notPublic: "it is Restricted or Private, not for the public"
        case .full: "\(CAPWarnings.currentLimit) warnings are in force already"
        }
    }

    /// When the next warning ends by itself (the node appends a `WarningDeadline` then).
    public var nextDeadlineMicroseconds: UInt64? {
        let own = warnings.nextExpiryMicroseconds.map { UInt64(clamping: $0) }
        guard let air = heard.map(\.expiresMicroseconds).min() else { return own }
        return min(own ?? air, air)
    }

    /// The warnings in force here, loudest first: the box's own (from its feeds, its hub, its
    /// staff), then those neighbours told of on the air that it does not hold itself and that
    /// did not end here (`heardHere`).
    public var inForceHere: [CAPWarning] {
        let own = warnings.inForceHere
        let air = heardHere()
        guard !air.isEmpty else { return own }
        return (own + air).enumerated().sorted { a, b in
            a.element.level.rank != b.element.level.rank ? a.element.level.rank > b.element.level.rank : a.offset < b.offset
        }.map(\.element)
    }

    /// The loudest output a warning in force asks for.
    public var loudest: CAPWarning.Level { inForceHere.map(\.level).max { $0.rank < $1.rank } ?? warnings.loudest }

    /// Where a warning in force came from: its feed, or for one heard on the air the latest
    /// `WarningHeard` of it.
    public func source(of key: CAPReference) -> Source? {
        sources[key] ?? heardSource(key)
    }

    // Sources in a fixed order, as `CAPWarnings` encodes its messages: equal states, equal bytes.
    enum CodingKeys: String, CodingKey { case settings, warnings, sources, unreadable, heard, heardDropped }
    struct SourceEntry: Codable { var key: CAPReference; var source: Source }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        settings = try c.decode(CAPWarningSettings.self, forKey: .settings)
        warnings = try c.decode(CAPWarnings.self, forKey: .warnings)
        sources = Dictionary(try c.decode([SourceEntry].self, forKey: .sources).map { ($0.key, $0.source) }, uniquingKeysWith: { first, _ in first })
        unreadable = try c.decode(UInt64.self, forKey: .unreadable)
        heard = try c.decode([HeardWarning].self, forKey: .heard)
        heardDropped = try c.decode(UInt64.self, forKey: .heardDropped)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(settings, forKey: .settings)
        try c.encode(warnings, forKey: .warnings)
        try c.encode(sources.map { SourceEntry(key: $0.key, source: $0.value) }.sorted { $0.key < $1.key }, forKey: .sources)
        try c.encode(unreadable, forKey: .unreadable)
        try c.encode(heard, forKey: .heard)
        try c.encode(heardDropped, forKey: .heardDropped)
    }

    private mutating func forgetEnded() {
        if sources.count > warnings.current.count {
            sources = sources.filter { warnings.current[$0.key] != nil }
        }
    }

    /// One line for `vigil log` and `vigil why`: what the document is, or why it cannot be read.
    public static func summary(_ received: WarningReceived) -> String {
        let feed = received.feed.isEmpty ? "" : " (feed \(CAPText.oneLine(received.feed, limit: 120)))"
        do {
            let alert = try CAPReader.read([UInt8](received.document))
            let info = alert.infos.first
            let what = CAPText.oneLine(info.map { $0.headline ?? $0.event } ?? (alert.note ?? ""), limit: 120)
            let grading = info.map { " \($0.severity.rawValue)/\($0.urgency.rawValue)/\($0.certainty.rawValue)" } ?? ""
            return "public warning \(CAPText.oneLine(alert.identifier, limit: 80)) from \(CAPText.oneLine(alert.sender, limit: 80)): "
                + "\(alert.messageType.rawValue), \(alert.status.rawValue)\(grading): \(what)\(feed)"
        } catch {
            return "an unreadable CAP document of \(received.document.count) bytes\(feed): \(CAPText.oneLine("\(error)", limit: 200))"
        }
    }
}
