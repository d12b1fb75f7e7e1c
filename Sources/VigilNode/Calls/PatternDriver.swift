import VigilCore
import VigilSystem

/// Realises output patterns on real time: each line's pattern is anchored when it first
/// appears, its level at any moment follows from that, and one timer covers the next change of
/// any line. Decisions come from `OutputPolicy` (pure); this is the effect side.
struct PatternDriver {
    private(set) var decisions: [OutputLine: OutputDecision] = [:]
    private var anchors: [OutputLine: UInt64] = [:]

    /// Takes new decisions; a line whose pattern changed restarts its pattern now.
    mutating func update(_ new: [OutputLine: OutputDecision], nowNanoseconds now: UInt64) {
        for line in OutputLine.allCases {
            let pattern = new[line]?.pattern ?? .off
            if decisions[line]?.pattern != pattern { anchors[line] = now }
        }
        decisions = new
    }

    func level(_ line: OutputLine, nowNanoseconds now: UInt64) -> Bool {
        guard let pattern = decisions[line]?.pattern else { return false }
        return pattern.level(atMilliseconds: (now &- (anchors[line] ?? now)) / 1_000_000)
    }

    /// The next moment (monotonic ns) any line changes level, if any pattern blinks.
    func nextChange(afterNanoseconds now: UInt64) -> UInt64? {
        var next: UInt64?
        for (line, decision) in decisions {
            let anchor = anchors[line] ?? now
            let elapsedMs = (now &- anchor) / 1_000_000
            guard let change = decision.pattern.nextChange(afterMilliseconds: elapsedMs) else { continue }
            let at = anchor &+ change * 1_000_000
            next = next.map { min($0, at) } ?? at
        }
        return next
    }
}
