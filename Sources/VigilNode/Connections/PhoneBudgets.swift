/// What phones in radio range may cost the box, whatever links and addresses they use (issue 28):
/// a pure state machine the GATT server asks before it logs a message or a link.
///
/// - Each address keeps its own rate across reconnects (`perPhone`, remembered for the last
///   `rememberedPhones` addresses), so closing and reopening a link buys nothing.
/// - An address that rotates (or many phones) meets the box-wide budget (`everyone`): a bound on
///   what all phones together add to the log in an hour, whatever they do.
/// - Phones' calls for help (sos, medical) have a reserve of their own (`calls`) that other
///   messages cannot spend: a flood of chat or fire messages leaves a real SOS its way in. When
///   the reserve is spent too, they may use what is left of `everyone`.
/// - Link events (`LinkChanged` of phones' links) are shed over their own budget (`linkEvents`):
///   an open that is not logged has its close not logged either (the caller keeps that).
///
/// The bounds (docs/connections.md "Connections", docs/phones.md) make the worst hour of a hostile phone
/// loop a known number of bytes in the log (`phone_flood_log_bytes_per_hour`).
public struct PhoneBudgets: Sendable {
    public enum Verdict: Equatable, Sendable {
        case taken
        /// This address is over its own rate: its fault (a strike).
        case phoneOverRate
        /// Phones together used the box's budget: not this phone's fault, no strike.
        case boxBusy
    }

    public struct Limits: Equatable, Sendable {
        public var perPhoneBurst: Int
        public var perPhoneIntervalMicroseconds: UInt64
        public var everyoneBurst: Int
        public var everyoneIntervalMicroseconds: UInt64 = 20_000_000
        public var callsBurst = 10
        public var callsIntervalMicroseconds: UInt64 = 60_000_000
        public var linkEventsBurst = 32
        public var linkEventsIntervalMicroseconds: UInt64 = 30_000_000
        public var rememberedPhones = 256

        /// From the configuration: each phone `message_burst` then one per `message_interval`; all
        /// phones together at least 60 (or `message_burst`), then one every 20 s.
        public init(_ settings: ConnectionSettings) {
            perPhoneBurst = settings.messageBurst
            perPhoneIntervalMicroseconds = settings.messageIntervalMicroseconds
            everyoneBurst = max(60, settings.messageBurst)
        }
    }

    public let limits: Limits
    private var phones: [UInt64: (rate: MessageRate, used: UInt64)] = [:]
    private var everyone: MessageRate
    private var calls: MessageRate
    private var linkEvents: MessageRate
    private var uses: UInt64 = 0

    public init(_ limits: Limits, nowNanoseconds now: UInt64) {
        self.limits = limits
        everyone = MessageRate(burst: limits.everyoneBurst, intervalMicroseconds: limits.everyoneIntervalMicroseconds, nowNanoseconds: now)
        calls = MessageRate(burst: limits.callsBurst, intervalMicroseconds: limits.callsIntervalMicroseconds, nowNanoseconds: now)
        linkEvents = MessageRate(burst: limits.linkEventsBurst, intervalMicroseconds: limits.linkEventsIntervalMicroseconds, nowNanoseconds: now)
    }

    /// EchoAlert's categories that ask for help: a call for staff (`CallBook.phoneAsked`), with
    /// the reserve. Every other category is a message for staff.
    public static func asksForHelp(_ category: String) -> Bool { category == "sos" || category == "medical" }

    /// Addresses whose rate is remembered now (at most `rememberedPhones`).
    public var rememberedCount: Int { phones.count }

    /// One message from `address`; `asksForHelp` for an sos or medical message.
    public mutating func message(from address: UInt64, asksForHelp: Bool, nowNanoseconds now: UInt64) -> Verdict {
        uses &+= 1
        var entry = phones[address] ?? (MessageRate(burst: limits.perPhoneBurst, intervalMicroseconds: limits.perPhoneIntervalMicroseconds, nowNanoseconds: now), 0)
        entry.used = uses
        let own = entry.rate.take(nowNanoseconds: now)
        defer { remember(address, entry) }
        guard own else { return .phoneOverRate }
        if asksForHelp, calls.take(nowNanoseconds: now) { return .taken }
        guard everyone.take(nowNanoseconds: now) else {
            // Not this phone's doing: a phone retrying while the box is busy keeps its own rate.
            entry.rate.giveBack()
            return .boxBusy
        }
        return .taken
    }

    /// Whether a phone's link opening is logged (its close is logged only if it was).
    public mutating func linkEvent(nowNanoseconds now: UInt64) -> Bool {
        linkEvents.take(nowNanoseconds: now)
    }

    private mutating func remember(_ address: UInt64, _ entry: (rate: MessageRate, used: UInt64)) {
        if phones[address] == nil, phones.count >= limits.rememberedPhones,
           let oldest = phones.min(by: { $0.value.used < $1.value.used })?.key {
            // The least recently heard is forgotten: a flood of new addresses meets `everyone`.
            phones[oldest] = nil
        }
        phones[address] = entry
    }
}
