/// One attempt at one report to the alarm receiving centre, as a pure decision (the I/O is
/// `AlarmCentreLink`'s): the receivers in configuration order, one connection each. A NAK gets
/// one resend on the same connection (it most often means the frame's time fell outside the
/// centre's window, and the resend carries a fresh time); anything else that is not an ACK —
/// DUH, garbage, silence, a closed or refused connection — moves on to the next receiver. After
/// the last, the attempt has failed, with what each receiver did; the outbox's back-off decides
/// when the next attempt starts (from the first receiver again).
struct AlarmCentreAttempt: Equatable {
    /// What one receiver did with the frame (or the connection).
    enum Outcome: Equatable {
        case acknowledged
        case negative
        case notUnderstood
        /// A reply that failed the parser's checks (the parser's reason).
        case garbage(String)
        case silent
        case closed
        case connectFailed(String)
        case connectTimedOut
        case sendFailed(String)

        /// How status and the attempt's error say it.
        var text: String {
            switch self {
            case .acknowledged: "ACK"
            case .negative: "NAK"
            case .notUnderstood: "DUH (the centre does not support the message)"
            case .garbage(let why): "an unreadable reply (\(why))"
            case .silent: "no reply"
            case .closed: "closed the connection without a reply"
            case .connectFailed(let why): "no connection (\(why))"
            case .connectTimedOut: "no connection in time"
            case .sendFailed(let why): "the frame could not be sent (\(why))"
            }
        }
    }

    enum Next: Equatable {
        /// Connect to receiver `index` and send the frame.
        case connect(Int)
        /// Send the frame again (fresh time) on the open connection.
        case resend
        /// The centre has it: receiver `index` answered ACK.
        case delivered(Int)
        /// Every receiver failed: the attempt's error, receiver by receiver.
        case failed(String)
    }

    let receivers: [String]
    private(set) var current = 0
    private(set) var resendsHere = 0
    private(set) var problems: [String] = []
    static let resendsAfterNAK = 1

    init(receivers: [String]) { self.receivers = receivers }

    /// Where the attempt starts.
    var first: Next { receivers.isEmpty ? .failed("no receiver is configured") : .connect(0) }

    /// What the current receiver did, and what comes next.
    mutating func record(_ outcome: Outcome) -> Next {
        guard current < receivers.count else { return .failed(summary) }
        if outcome == .acknowledged { return .delivered(current) }
        if outcome == .negative, resendsHere < Self.resendsAfterNAK {
            resendsHere += 1
            return .resend
        }
        problems.append("\(receivers[current]): \(outcome.text)")
        current += 1
        resendsHere = 0
        return current < receivers.count ? .connect(current) : .failed(summary)
    }

    var summary: String { problems.joined(separator: "; ") }
}
