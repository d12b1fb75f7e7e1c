import Foundation
import VigilEvents
import VigilCore

/// Residents' time zones from the system's tz database (/usr/share/zoneinfo, the `tzdata`
/// package). The node reads the files; VigilCore parses the bytes (`TimeZoneRules`) and the
/// ladder uses the rules through its settings (`LadderContext`, which says why).
public enum TimeZoneFiles {
    public static let directory = "/usr/share/zoneinfo"

    /// An IANA name such as Europe/Madrid: letters, digits, "_", "-", "+" and "/" between
    /// parts; never absolute and never "..", so it always names a file inside the database.
    public static func isPlausibleName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 64, !name.hasPrefix("/"), !name.hasSuffix("/") else { return false }
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        return parts.allSatisfy { part in
            !part.isEmpty && part != "." && part != ".."
                && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_-+".contains($0)) }
        }
    }

    /// The zone's rules, or nil if the name is implausible or the file is missing or not TZif.
    public static func load(_ name: String) -> TimeZoneRules? {
        guard isPlausibleName(name), let data = FileManager.default.contents(atPath: directory + "/" + name) else { return nil }
        return try? TimeZoneRules(tzif: Array(data))
    }

    /// `base` with the rules of every zone the residents use (those already held are kept).
    /// Zones whose files cannot be read stay missing: the ladder falls back to fixed offsets.
    static func context(_ base: LadderContext, keeping held: LadderContext, for book: EscalationBook) -> LadderContext {
        var c = base
        for name in Set(book.residents.values.map(\.timeZone)) where !name.isEmpty {
            if let rules = load(name) ?? held.zones[name] ?? base.zones[name] { c.zones[name] = rules }
        }
        return c
    }
}

/// Loads a zone's rules as soon as a resident starts using it (`vigil resident set --time-zone`),
/// so the next deadline is computed with them; and says which zones are missing.
final class TimeZoneWatch: NodeComponent {
    unowned let context: any NodeContext
    private var warned: Set<String> = []
    /// Loads the rules of every zone residents use into the ladder's context (`Node.refreshLadderContext`):
    /// the one write to the projections outside an event, kept in the node that owns them.
    private let refreshLadderContext: () -> Void

    init(context: any NodeContext, refreshLadderContext: @escaping () -> Void) {
        self.context = context
        self.refreshLadderContext = refreshLadderContext
    }

    func start() throws(NodeError) { check() }

    func applied(_ event: Event) {
        switch event.body {
        case .residentEnrolled(let r), .residentUpdated(let r):
            if !r.timeZone.isEmpty, context.projections.escalations.context.zones[r.timeZone] == nil {
                refreshLadderContext()
                check()
            }
        default:
            break
        }
    }

    private func check() {
        for zone in context.projections.escalations.missingZones where !warned.contains(zone) {
            warned.insert(zone)
            context.logger.warning("time zone rules missing: quiet times use the fixed UTC offset", metadata: [
                "zone": "\(zone)", "looked_in": "\(TimeZoneFiles.directory)",
            ])
        }
    }
}
