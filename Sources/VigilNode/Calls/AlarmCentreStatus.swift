import VigilCore

/// The link to the alarm receiving centre as `vigil status`, the page and `/metrics` show it:
/// what its receivers did, when the centre last acknowledged, and since when it has not.
public struct AlarmCentreStatus: Sendable, Codable, Equatable {
    public var receivers: [String]
    /// Replies and failures, by kind, since the start.
    public var acknowledged: UInt64 = 0
    public var negative: UInt64 = 0
    public var notUnderstood: UInt64 = 0
    public var garbage: UInt64 = 0
    public var silent: UInt64 = 0
    public var closed: UInt64 = 0
    public var unreachable: UInt64 = 0
    /// The last ACK (wall clock, microseconds) and the receiver that gave it.
    public var lastAcknowledgedMicroseconds: UInt64?
    public var lastAcknowledgedBy: String?
    /// The first failed attempt since the last success (nil: the last one succeeded, or none yet).
    public var failingSinceMicroseconds: UInt64?
    /// What the last failed attempt found, receiver by receiver.
    public var lastProblem: String?
    /// The last test report: when, and whether a receiver acknowledged it.
    public var lastTestMicroseconds: UInt64?
    public var lastTestPassed: Bool?
    /// Whether reports are encrypted (`arc.key`): in the clear, an ACK can be forged on the path.
    public var encrypted = false
    /// How far the centre's clock was from the box's at the last NAK that gave its time (seconds,
    /// positive: the centre is ahead).
    public var clockSkewSeconds: Int64?
    /// The centre acknowledged this run's "running from memory" trouble report.
    public var runningFromMemoryReported = false

    public init(receivers: [String]) { self.receivers = receivers }

    mutating func count(_ outcome: AlarmCentreAttempt.Outcome) {
        switch outcome {
        case .acknowledged: acknowledged += 1
        case .negative: negative += 1
        case .notUnderstood: notUnderstood += 1
        case .garbage: garbage += 1
        case .silent: silent += 1
        case .closed, .sendFailed: closed += 1
        case .connectFailed, .connectTimedOut: unreachable += 1
        }
    }

    mutating func finished(delivered: Bool, receiver: String?, error: String, test: Bool, at time: UInt64) {
        if delivered {
            lastAcknowledgedMicroseconds = time
            lastAcknowledgedBy = receiver
            failingSinceMicroseconds = nil
        } else {
            if failingSinceMicroseconds == nil { failingSinceMicroseconds = time }
            lastProblem = error
        }
        if test {
            lastTestMicroseconds = time
            lastTestPassed = delivered
        }
    }

    /// "cannot call for help: the alarm centre unreachable since 03:12 UTC" material: nil while
    /// the centre answers.
    public var problem: String? {
        guard let since = failingSinceMicroseconds else { return nil }
        let at = CivilTime(utcSeconds: Int64(clamping: since / 1_000_000)).text
        return "the alarm centre has not acknowledged since \(at) UTC: \(lastProblem ?? "no reply")"
    }
}
