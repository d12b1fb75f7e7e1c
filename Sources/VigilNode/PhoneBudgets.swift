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
/// The bounds (README "Connections", docs/phones.md) make the worst hour of a hostile phone
/// loop a known number of bytes in the log (`phone_flood_log_bytes_per_hour`).
struct PhoneBudgets {
    enum Verdict: Equatable {
        case taken
        /// This address is over its own rate: its fault (a strike).
        case phoneOverRate
        /// Phones together used the box's budget: not this phone's fault, no strike.
        case boxBusy
    }

    struct Limits: Equatable {
        var perPhoneBurst: Int
        var perPhoneIntervalMicroseconds: UInt64
        var everyoneBurst: Int
        var everyoneIntervalMicroseconds: UInt64 = 20_000_000
        var callsBurst = 10
        var callsIntervalMicroseconds: UInt64 = 60_000_000
        var linkEventsBurst = 32
        var linkEventsIntervalMicroseconds: UInt64 = 30_000_000
        var rememberedPhones = 256

        /// From the configuration: each phone `message_burst` then one per `message_interval`; all
        /// phones together at least 60 (or `message_burst`), then one every 20 s.
        init(_ settings: ConnectionSettings) {
            perPhoneBurst = settings.messageBurst
            perPhoneIntervalMicroseconds = settings.messageIntervalMicroseconds
            everyoneBurst = max(60, settings.messageBurst)
        }
    }

    let limits: Limits
    private var phones: [UInt64: (rate: MessageRate, used: UInt64)] = [:]
    private var everyone: MessageRate
    private var calls: MessageRate
    private var linkEvents: MessageRate
    private var uses: UInt64 = 0

    init(_ limits: Limits, nowNanoseconds now: UInt64) {
        self.limits = limits
        everyone = MessageRate(burst: limits.everyoneBurst, intervalMicroseconds: limits.everyoneIntervalMicroseconds, nowNanoseconds: now)
        calls = MessageRate(burst: limits.callsBurst, intervalMicroseconds: limits.callsIntervalMicroseconds, nowNanoseconds: now)
        linkEvents = MessageRate(burst: limits.linkEventsBurst, intervalMicroseconds: limits.linkEventsIntervalMicroseconds, nowNanoseconds: now)
    }

    /// Addresses whose rate is remembered now (at most `rememberedPhones`).
    var rememberedCount: Int { phones.count }

    /// One message from `address`; `asksForHelp` for an sos or medical message.
    mutating func message(from address: UInt64, asksForHelp: Bool, nowNanoseconds now: UInt64) -> Verdict {
        uses &+= 1
        var entry = phones[address] ?? (MessageRate(burst: limits.perPhoneBurst, intervalMicroseconds: limits.perPhoneIntervalMicroseconds, nowNanoseconds: now), 0)
        entry.used = uses
        let own = entry.rate.take(nowNanoseconds: now)
        remember(address, entry)
        guard own else { return .phoneOverRate }
        if asksForHelp, calls.take(nowNanoseconds: now) { return .taken }
        return everyone.take(nowNanoseconds: now) ? .taken : .boxBusy
    }

    /// Whether a phone's link opening is logged (its close is logged only if it was).
    mutating func linkEvent(nowNanoseconds now: UInt64) -> Bool {
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
