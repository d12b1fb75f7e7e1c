import VigilCAP
import VigilEvents

/// Public warnings heard on the air (docs/signed-frames.md "Public warning frame"): a
/// neighbouring box, certified by the network, says an authority's warning is in force at its
/// site. The box announces it as its own warnings are (page, LEDs, buzzer, staff channel), unless
/// it holds the same warning itself (the same sender and identifier), and until the neighbour's
/// last frame of it expires: a neighbour signs anew every ten minutes while the warning lasts,
/// so one it no longer holds leaves here within half an hour.
extension WarningBook {
    public struct HeardWarning: Codable, Equatable, Sendable {
        public var signer: UInt32
        /// The warning's 40-bit name on the air (`airDigest`).
        public var digest: UInt64
        public var sounds: Bool
        public var headline: String
        public var expiresMicroseconds: UInt64
        public var heardFrom: UInt64
        /// The `WarningHeard` that last changed it.
        public var sequence: UInt64
        public var firstHeardMicroseconds: UInt64
    }

    /// Heard warnings kept, at most: far more than a place has warnings in force at once.
    public static let heardLimit = 64
    /// A box's heard warnings, at most (a stolen box cannot fill the book alone; its newest
    /// replaces its soonest to end).
    public static let heardPerSigner = 4
    /// A later frame of a heard warning is logged when it keeps it this much longer in force
    /// (its signer signs anew every ten minutes).
    public static let heardRenewalMicroseconds: UInt64 = 600_000_000
    /// How far beyond its arrival a heard warning may last (twice a frame's lifetime: a receiver
    /// whose clock is not vouched for accepts that much).
    static let heardLifetimeMicroseconds: UInt64 = 3_600_000_000
    /// The sender of a heard warning as the box shows it: a space, which CAP forbids in a sender,
    /// keeps it apart from every real message.
    static let airSender = "vigil air"
    static let airIdentifierPrefix = "air-"
    /// Staff messages about warnings heard on the air in an hour, at most, apart from the box's
    /// own warnings' six: a stolen box inventing warnings cannot spend those.
    static let heardMessagesPerHour = 2

    /// A warning's name on the air: 40 bits of FNV-1a (64) over its CAP sender, a zero byte and
    /// its identifier, which a repeat keeps. Not a security measure (any certified box may name
    /// any warning): it lets a box that holds a warning itself recognise a neighbour's word of it.
    public static func airDigest(_ key: CAPReference) -> UInt64 { airDigest(sender: key.sender, identifier: key.identifier) }

    public static func airDigest(sender: String, identifier: String) -> UInt64 {
        fnv1a(Array(sender.utf8) + [0] + Array(identifier.utf8)) & 0xFF_FFFF_FFFF
    }

    /// A warning's name on the air, for one in force here: its own, or the name a neighbour's
    /// frame gave one heard on the air.
    public static func airName(_ w: CAPWarning) -> UInt64 { heardName(w.key)?.digest ?? airDigest(w.key) }

    /// The name and headline digest in a heard warning's key ("air-NAME-HEADLINE"); nil for any
    /// other key.
    static func heardName(_ key: CAPReference) -> (digest: UInt64, headline: UInt64)? {
        guard key.sender == airSender, key.identifier.hasPrefix(airIdentifierPrefix) else { return nil }
        let parts = key.identifier.dropFirst(airIdentifierPrefix.count).split(separator: "-")
        guard parts.count == 2, let digest = UInt64(parts[0], radix: 16), let headline = UInt64(parts[1], radix: 16) else { return nil }
        return (digest, headline)
    }

    static func headlineDigest(_ headline: String) -> UInt64 { fnv1a(Array(headline.utf8)) & 0xFFFF_FFFF }

    /// Whether a key is of a warning heard on the air.
    public static func isHeard(_ key: CAPReference) -> Bool { heardName(key) != nil }

    /// FNV-1a, 64 bits: stable across runs and builds (Swift's Hasher is seeded per process).
    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash
    }

    /// Whether the node logs a frame heard at `atMicroseconds`: a warning new from this signer,
    /// one whose level or headline changed, or one a later frame keeps in force
    /// `heardRenewalMicroseconds` longer. Frames repeat every advertising round: the rest are
    /// copies.
    public func wouldLog(_ h: WarningHeard, atMicroseconds now: UInt64) -> Bool {
        guard h.expiresUs > now else { return false }
        guard let known = heard.first(where: { $0.signer == h.signer && $0.digest == h.digest }) else { return true }
        return known.sounds != h.sounds || known.headline != Self.storedHeadline(h.headline)
            || min(h.expiresUs, now &+ Self.heardLifetimeMicroseconds) >= known.expiresMicroseconds &+ Self.heardRenewalMicroseconds
    }

    mutating func applyHeard(_ h: WarningHeard, event: Event) {
        let now = event.timeMicroseconds
        guard h.expiresUs > now, h.digest >> 40 == 0 else { return }
        let expires = min(h.expiresUs, now &+ Self.heardLifetimeMicroseconds)
        let headline = Self.storedHeadline(h.headline)
        if let i = heard.firstIndex(where: { $0.signer == h.signer && $0.digest == h.digest }) {
            heard[i].sounds = h.sounds
            heard[i].headline = headline
            heard[i].expiresMicroseconds = max(heard[i].expiresMicroseconds, expires)
            heard[i].heardFrom = h.heardFrom
            heard[i].sequence = event.sequence
            return
        }
        let mine = heard.indices.filter { heard[$0].signer == h.signer }
        if mine.count >= Self.heardPerSigner, let soonest = mine.min(by: { heard[$0].expiresMicroseconds < heard[$1].expiresMicroseconds }) {
            heard.remove(at: soonest)
        }
        guard heard.count < Self.heardLimit else {
            heardDropped &+= 1
            return
        }
        heard.append(HeardWarning(signer: h.signer, digest: h.digest, sounds: h.sounds, headline: headline, expiresMicroseconds: expires,
                                  heardFrom: h.heardFrom, sequence: event.sequence, firstHeardMicroseconds: now))
        heard.sort { ($0.signer, $0.digest) < ($1.signer, $1.digest) }
    }

    /// A headline as the book keeps and compares it (the frame's canonical form, bounded again:
    /// an event in the log is read as it is).
    static func storedHeadline(_ text: String) -> String { String(CAPText.oneLine(text, limit: 64)) }

    /// The heard warnings to announce: one per warning and headline (the loudest word of it, the
    /// latest to end: two boxes saying different things of one warning are both shown, so a
    /// stolen box cannot reword a neighbour's), none the box holds itself or held and saw end
    /// (a cancel or update here is not undone by a neighbour whose feed lags), as warnings of
    /// an issuer named for what it is.
    func heardHere() -> [CAPWarning] {
        guard !heard.isEmpty else { return [] }
        let held = Set(warnings.current.keys.map(Self.airDigest)).union(warnings.ended.keys.map(Self.airDigest))
        var best: [String: HeardWarning] = [:]
        for h in heard where !held.contains(h.digest) {
            let group = "\(h.digest) \(h.headline)"
            if let b = best[group], (b.sounds ? 1 : 0, b.expiresMicroseconds, b.sequence) >= (h.sounds ? 1 : 0, h.expiresMicroseconds, h.sequence) { continue }
            best[group] = h
        }
        return best.values.sorted { ($0.sounds ? 1 : 0, $0.sequence) > ($1.sounds ? 1 : 0, $1.sequence) }.map(Self.announced)
    }

    /// Where a heard warning in force came from: the latest `WarningHeard` of its name and headline.
    func heardSource(_ key: CAPReference) -> Source? {
        guard let (digest, headline) = Self.heardName(key) else { return nil }
        return heard.filter { $0.digest == digest && Self.headlineDigest($0.headline) == headline }.max { $0.sequence < $1.sequence }.map {
            Source(feed: "the air: box \(String($0.signer, radix: 16))", sequence: $0.sequence, signatureVerified: false)
        }
    }

    /// A heard warning as the page, the LEDs, the buzzer and `vigil why` take warnings: an
    /// Actual, public message of an unknown grading (the frame carries the level, not the
    /// grading), from the box that told of it (which says an authority warns: nothing here can
    /// check that), with that box's headline.
    static func announced(_ h: HeardWarning) -> CAPWarning {
        let box = String(h.signer, radix: 16)
        let what = h.headline.isEmpty ? "Public warning" : h.headline
        let info = CAPInfo(language: "", categories: [.other], event: what, urgency: .unknown, severity: .unknown, certainty: .unknown,
                           senderName: "box \(box) nearby (its word, unverified)", headline: what,
                           description: "Box \(box) nearby holds this warning from a public authority and told the boxes in range. "
                               + "Its words are the box's: this box cannot check them with the authority.")
        let identifier = airIdentifierPrefix + String(h.digest, radix: 16) + "-" + String(headlineDigest(h.headline), radix: 16)
        let alert = CAPAlert(identifier: identifier, sender: airSender,
                             sent: CAPTime(microseconds: Int64(clamping: h.firstHeardMicroseconds)), status: .actual, messageType: .alert,
                             scope: .public, infos: [info])
        var warning = CAPWarning(alert, receivedMicroseconds: Int64(clamping: h.firstHeardMicroseconds), settings: CAPWarningSettings(),
                                 origin: CAPOrigin(feed: "air:" + box))
        warning.appliesHere = true
        warning.level = h.sounds ? .sounds : .shown
        warning.expiresMicroseconds = Int64(clamping: h.expiresMicroseconds)
        return warning
    }

    /// One line for `vigil log` and `vigil why`.
    public static func summary(_ h: WarningHeard) -> String {
        let what = h.headline.isEmpty ? "(no headline)" : String(CAPText.oneLine(h.headline, limit: 64))
        return "box \(String(h.signer, radix: 16)) says a public warning is in force there (\(h.sounds ? "sounds" : "shown")): \(what), "
            + "name \(String(h.digest, radix: 16)), frame until \(CivilTime(utcSeconds: Int64(clamping: h.expiresUs / 1_000_000)).text) UTC, heard from \(formatAddress(h.heardFrom))"
    }
}
