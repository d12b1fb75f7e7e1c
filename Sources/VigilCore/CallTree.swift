/// Who is told of a call for help, and when (`calls.tree`): ordered tiers, each with its
/// recipients and a wait after the tier before it started (the first tier starts at once). While
/// nobody takes the call, the tree moves tier by tier; after the last tier and `repeatAfter` it
/// starts again from the top, marked "STILL UNANSWERED", until `rounds` passes were made.
///
/// A setting, not history: the node sets it when it starts, and it is kept with the checkpoint so
/// checkpoint + tail replays with the tree the node used (as `LadderContext` is).
public struct CallTree: Codable, Equatable, Sendable {
    public struct Tier: Codable, Equatable, Sendable {
        /// The wait after the previous tier started (the first tier's is 0: at once).
        public var afterMicroseconds: UInt64
        /// Normalised addresses (`ContactAddress.text`): phone numbers, e-mail, webhooks, `arc`.
        public var recipients: [String]

        public init(afterMicroseconds: UInt64, recipients: [String]) {
            self.afterMicroseconds = afterMicroseconds
            self.recipients = recipients
        }
    }

    public var tiers: [Tier]
    /// Passes through the whole tree, the first included (at least 1).
    public var rounds: UInt32
    /// The wait after the last tier started before the next round starts from the top.
    public var repeatAfterMicroseconds: UInt64
    /// Whether the tree came from `calls.tree` (false: the default, from `notify.staff`).
    public var configured: Bool

    public init(tiers: [Tier] = [], rounds: UInt32 = 3, repeatAfterMicroseconds: UInt64 = 300_000_000, configured: Bool = false) {
        self.tiers = tiers
        self.rounds = max(1, rounds)
        self.repeatAfterMicroseconds = repeatAfterMicroseconds
        self.configured = configured
    }

    /// The default tree: the staff at once, then the alarm receiving centre when one is
    /// configured. A box set up with `notify.staff` tells its staff of every call without a new
    /// setting.
    public static func standard(staff: [String], arc: Bool) -> CallTree {
        var tiers: [Tier] = []
        if !staff.isEmpty { tiers.append(Tier(afterMicroseconds: 0, recipients: staff)) }
        if arc { tiers.append(Tier(afterMicroseconds: 0, recipients: ["arc"])) }
        return CallTree(tiers: tiers)
    }

    /// Every recipient of the tree, once each, in tier order.
    public var everyone: [String] {
        var seen = Set<String>()
        return tiers.flatMap(\.recipients).filter { seen.insert($0).inserted }
    }
}
