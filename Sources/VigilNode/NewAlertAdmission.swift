/// How fast one sender may bring this box alerts it has not heard before: a token bucket per
/// sender (`radio.alerts.new_per_sender_burst` at once, then one more per
/// `new_per_sender_interval`). A stolen box keeps a valid certificate until the hub revokes it, and
/// a shelter-key holder can forge any origin; without this either could fill the log with new
/// alerts as fast as it can advertise. Frames over the rate are counted and not logged; adverts
/// repeat, so a real alert held back is taken when its sender's allowance refills, not lost.
///
/// The sender is the signer of a signed frame (its certified node id) and the origin of a
/// shared-key one (the only name such a frame has). Senders are bounded: when `senderLimit`
/// distinct senders have buckets, those with a full allowance are forgotten (a fresh bucket is the
/// same), and if none is, newcomers share one overflow bucket, so a flood of invented origins
/// cannot grow memory or starve the senders already known. Pure: time is the loop's monotonic
/// clock, passed in.
struct NewAlertAdmission: Sendable {
    let burst: Int
    let intervalMicroseconds: UInt64
    let senderLimit: Int
    private var rates: [UInt32: MessageRate] = [:]
    private var overflow: MessageRate?

    init(burst: Int, intervalMicroseconds: UInt64, senderLimit: Int = 1_024) {
        self.burst = max(burst, 1)
        self.intervalMicroseconds = max(intervalMicroseconds, 1)
        self.senderLimit = max(senderLimit, 1)
    }

    /// Senders with a bucket of their own (for tests and status).
    var senders: Int { rates.count }

    /// Takes one new alert's allowance from `sender`; false when it is over its rate.
    mutating func admit(sender: UInt32, nowNanoseconds now: UInt64) -> Bool {
        if rates[sender] == nil, rates.count >= senderLimit {
            rates = rates.filter { !$0.value.isFull(nowNanoseconds: now) }
        }
        if rates[sender] == nil, rates.count >= senderLimit {
            var shared = overflow ?? fresh(now)
            defer { overflow = shared }
            return shared.take(nowNanoseconds: now)
        }
        var rate = rates[sender] ?? fresh(now)
        defer { rates[sender] = rate }
        return rate.take(nowNanoseconds: now)
    }

    private func fresh(_ now: UInt64) -> MessageRate {
        MessageRate(burst: burst, intervalMicroseconds: intervalMicroseconds, nowNanoseconds: now)
    }
}
