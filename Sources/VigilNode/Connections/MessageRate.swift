/// A peer's message allowance on a GATT link (a token bucket): `burst` messages at once, then
/// one more per interval. Kept in nanoseconds of credit, so refills are exact (no rounding
/// drift). Time is the loop's monotonic clock, passed in.
struct MessageRate: Sendable, Equatable {
    let intervalNanoseconds: UInt64
    let capacityNanoseconds: UInt64
    private var creditNanoseconds: UInt64
    private var refilledNanoseconds: UInt64

    init(burst: Int, intervalMicroseconds: UInt64, nowNanoseconds: UInt64) {
        // Configuration bounds both (message_burst ≤ 1,000, an interval of seconds), so these
        // products are far from overflowing; clamped anyway.
        intervalNanoseconds = min(max(intervalMicroseconds, 1), 3_600_000_000) * 1_000
        capacityNanoseconds = UInt64(min(max(burst, 1), 1_000_000)) * intervalNanoseconds
        creditNanoseconds = capacityNanoseconds
        refilledNanoseconds = nowNanoseconds
    }

    /// Gives back one message's allowance taken by `take` (the message was refused for another
    /// reason, not this peer's doing).
    mutating func giveBack() {
        creditNanoseconds = min(capacityNanoseconds, creditNanoseconds + intervalNanoseconds)
    }

    /// Whether the allowance is whole at `now`: the bucket is the same as a fresh one.
    func isFull(nowNanoseconds now: UInt64) -> Bool {
        creditNanoseconds + min(now > refilledNanoseconds ? now - refilledNanoseconds : 0, capacityNanoseconds) >= capacityNanoseconds
    }

    /// Takes one message's allowance; false when the peer is over its rate (nothing taken).
    mutating func take(nowNanoseconds now: UInt64) -> Bool {
        if now > refilledNanoseconds {
            // Monotonic time only moves forward; an earlier reading adds nothing.
            creditNanoseconds = min(capacityNanoseconds, creditNanoseconds + min(now - refilledNanoseconds, capacityNanoseconds))
            refilledNanoseconds = now
        }
        guard creditNanoseconds >= intervalNanoseconds else { return false }
        creditNanoseconds -= intervalNanoseconds
        return true
    }
}
