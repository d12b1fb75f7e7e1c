/// How fast alerts this box has not heard before may arrive over the air: a token bucket per
/// sender (`radio.alerts.new_per_sender_burst` at once, then one more per
/// `new_per_sender_interval`). A stolen box keeps a valid certificate until the hub revokes it;
/// without this it could write new alerts (and renewals) into every box's log as fast as it can
/// advertise. Frames over the rate are counted and not logged; adverts repeat, so a real alert
/// held back is taken when its sender's allowance refills, while the sender is in range.
///
/// Senders: the signer of a signed frame (its certified node id; a stolen box has one, or the few
/// keys the hub certified it before its revocation), and the origin of a shared-key frame (the
/// only name such a frame has; a shelter-key holder can invent any). The two are tracked apart, so
/// invented origins never touch a certified box's allowance, and shared-key frames together are
/// held to `sharedKeyMultiple` senders' worth on top of each origin's own (enough for a
/// shelter's boxes heard at once after a partition heals): with the shared key, a forger's flood
/// is bounded, not prevented (which is why `radio.require_signed` exists).
///
/// Each table is bounded: when it is full, allowances that have refilled are forgotten (a fresh
/// one is the same), at most once an interval; if none has, newcomers share one allowance, so a
/// flood cannot grow memory or spend a known sender's allowance. Pure: time is the loop's
/// monotonic clock, passed in.
struct NewAlertAdmission: Sendable {
    enum Sender: Hashable, Sendable {
        case signer(UInt32)
        case sharedKeyOrigin(UInt32)
    }

    /// How many senders' allowance shared-key frames have together.
    static let sharedKeyMultiple = 16
    let burst: Int
    let intervalMicroseconds: UInt64
    private var signers: SenderTable
    private var origins: SenderTable
    /// Every shared-key frame's, together.
    private var sharedKey: MessageRate?

    init(burst: Int, intervalMicroseconds: UInt64, senderLimit: Int = 1_024) {
        self.burst = max(burst, 1)
        self.intervalMicroseconds = max(intervalMicroseconds, UInt64(Self.sharedKeyMultiple))
        signers = SenderTable(burst: self.burst, intervalMicroseconds: self.intervalMicroseconds, limit: senderLimit)
        origins = SenderTable(burst: self.burst, intervalMicroseconds: self.intervalMicroseconds, limit: senderLimit)
    }

    /// Senders with an allowance of their own (for tests).
    var senders: Int { signers.count + origins.count }

    /// Takes one new alert's allowance from `sender`; false when it is over its rate.
    mutating func admit(_ sender: Sender, nowNanoseconds now: UInt64) -> Bool {
        switch sender {
        case .signer(let id):
            return signers.admit(id, nowNanoseconds: now)
        case .sharedKeyOrigin(let id):
            guard origins.admit(id, nowNanoseconds: now) else { return false }
            var all = sharedKey ?? MessageRate(burst: burst * Self.sharedKeyMultiple,
                                               intervalMicroseconds: intervalMicroseconds / UInt64(Self.sharedKeyMultiple), nowNanoseconds: now)
            defer { sharedKey = all }
            if all.take(nowNanoseconds: now) { return true }
            origins.giveBack(id)
            return false
        }
    }
}

/// One allowance per sender id, bounded (NewAlertAdmission).
private struct SenderTable: Sendable {
    let burst: Int
    let intervalMicroseconds: UInt64
    let limit: Int
    private var rates: [UInt32: MessageRate] = [:]
    private var overflow: MessageRate?
    private var prunedAtNanoseconds: UInt64?

    init(burst: Int, intervalMicroseconds: UInt64, limit: Int) {
        self.burst = burst
        self.intervalMicroseconds = intervalMicroseconds
        self.limit = max(limit, 1)
    }

    var count: Int { rates.count }

    mutating func admit(_ id: UInt32, nowNanoseconds now: UInt64) -> Bool {
        if rates[id] == nil, rates.count >= limit, prunedAtNanoseconds.map({ now &- $0 >= intervalMicroseconds &* 1_000 }) ?? true {
            // A full table is pruned at most once an interval: a flood of newcomers costs one pass.
            prunedAtNanoseconds = now
            rates = rates.filter { !$0.value.isFull(nowNanoseconds: now) }
        }
        guard rates[id] != nil || rates.count < limit else {
            var shared = overflow ?? fresh(now)
            defer { overflow = shared }
            return shared.take(nowNanoseconds: now)
        }
        var rate = rates[id] ?? fresh(now)
        defer { rates[id] = rate }
        return rate.take(nowNanoseconds: now)
    }

    /// Returns what `admit` took from `id` (the frame was refused for another reason).
    mutating func giveBack(_ id: UInt32) {
        if rates[id] != nil { rates[id]?.giveBack() } else { overflow?.giveBack() }
    }

    private func fresh(_ now: UInt64) -> MessageRate {
        MessageRate(burst: burst, intervalMicroseconds: intervalMicroseconds, nowNanoseconds: now)
    }
}
