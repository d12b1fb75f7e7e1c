import Foundation
import NIOCore
import PostgresNIO
import VigilCore
import VigilEvents
import VigilHubProtocol

/// What the coordinators' page shows, read from the database in one go: every box with what it
/// last said, the network's alerts folded from the feed, and the residents whose ladder is
/// running at some box (folded from the uploaded events by VigilCore's own escalation rules).
public struct HubOverview: Sendable {
    public struct Box: Sendable, Equatable {
        public var node: UInt64
        public var name: String
        public var site: String?
        public var latitude: Double?
        public var longitude: Double?
        public var lastContact: Date?
        public var backlog: Int64?
        public var reportedAt: Date?
        public var occupancy: Int?
        public var occupancyMinuteMicroseconds: UInt64?
        public var revoked: Bool
        /// Calls for help raised at this box and still open.
        public var openCalls: Int = 0
    }

    public struct AlertRow: Sendable, Equatable {
        public var id: AlertID
        public var kind: AlertKind
        public var severity: AlertSeverity
        public var text: String
        /// The box's name, or "coordinator NAME".
        public var raisedBy: String
        public var raisedMicroseconds: UInt64
        public var expiresAtMicroseconds: UInt64
        public var cancelled: Bool
        public var acknowledgedBy: [String]
        public var fromCoordinator: Bool
        /// When the feed first carried its cancel.
        public var cancelledMicroseconds: UInt64? = nil

        public var isCallForHelp: Bool { kind == .sos || kind == .medical }
        public func isOpen(at now: UInt64) -> Bool { !cancelled && (expiresAtMicroseconds == 0 || expiresAtMicroseconds > now) }
    }

    public struct Escalation: Sendable, Equatable {
        public var box: String
        public var resident: String
        public var name: String
        public var room: String
        public var step: LadderStep
        public var ladderStartMicroseconds: UInt64
    }

    public var boxes: [Box]
    public var alerts: [AlertRow]
    public var escalations: [Escalation]
    /// The newest diagnosis-key files offered to the boxes (`vigil-hub keys add`).
    public var keyFiles: [KeyFileSummary] = []
    public var nowMicroseconds: UInt64

    public var openAlerts: [AlertRow] { alerts.filter { $0.isOpen(at: nowMicroseconds) } }
}

extension HubDatabase {
    /// Alerts older than this many feed items are not folded for the page.
    static let overviewFeedItems = 20_000

    public func overview(nowMicroseconds: UInt64) async throws -> HubOverview {
        var boxes = try await boxes()
        let names = Dictionary(boxes.map { ($0.node, $0.name) }, uniquingKeysWith: { a, _ in a })
        let alerts = try await foldAlerts(names: names)
        for index in boxes.indices {
            boxes[index].openCalls = alerts.filter { $0.id.origin == boxes[index].node && $0.isCallForHelp && $0.isOpen(at: nowMicroseconds) }.count
        }
        return HubOverview(boxes: boxes, alerts: alerts, escalations: try await foldEscalations(names: names),
                           keyFiles: try await keyFiles(limit: 10), nowMicroseconds: nowMicroseconds)
    }

    /// What CAP out needs (`HubCAPRoutes`): the boxes and the network's alerts; no residents,
    /// no key files.
    func capOverview(nowMicroseconds: UInt64) async throws -> HubOverview {
        let boxes = try await boxes()
        let alerts = try await foldAlerts(names: Dictionary(boxes.map { ($0.node, $0.name) }, uniquingKeysWith: { a, _ in a }))
        return HubOverview(boxes: boxes, alerts: alerts, escalations: [], nowMicroseconds: nowMicroseconds)
    }

    private func boxes() async throws -> [HubOverview.Box] {
        var boxes: [HubOverview.Box] = []
        for try await row in try await bounded.query("""
            SELECT node_id, name, site, latitude, longitude, last_contact, backlog, reported_at, occupancy, occupancy_minute_us,
                   revoked_at IS NOT NULL
            FROM boxes ORDER BY name
            """, logger: logger).decode((Int64, String, String?, Double?, Double?, Date?, Int64?, Date?, Int32?, Int64?, Bool).self) {
            boxes.append(HubOverview.Box(node: UInt64(bitPattern: row.0), name: row.1, site: row.2, latitude: row.3, longitude: row.4,
                                         lastContact: row.5, backlog: row.6, reportedAt: row.7, occupancy: row.8.map(Int.init),
                                         occupancyMinuteMicroseconds: row.9.map { UInt64(bitPattern: $0) }, revoked: row.10))
        }
        return boxes
    }

    /// The feed's alerts, each with its cancel and acknowledgements, newest first.
    private func foldAlerts(names: [UInt64: String]) async throws -> [HubOverview.AlertRow] {
        var rows: [String: HubOverview.AlertRow] = [:]
        var order: [String] = []
        for try await (originNode, kind, time, payload, coordinator) in try await bounded.query("""
            SELECT origin_node, kind, time_us, payload, coordinator FROM (
                SELECT * FROM feed ORDER BY position DESC LIMIT \(Self.overviewFeedItems)) AS recent
            ORDER BY position
            """, logger: logger).decode((Int64, Int32, Int64, ByteBuffer, String?).self) {
            let origin = UInt64(bitPattern: originNode)
            let who = origin == 0 ? "coordinator \(coordinator ?? "?")" : (names[origin] ?? NodeIDText.format(origin))
            guard let body = try? EventCodec.decode(kind: UInt32(bitPattern: kind), payload: Array(payload.readableBytesView), sequence: 0) else {
                continue
            }
            switch body {
            case .alertRaised(let a), .alertReceived(let a):
                let key = a.id.text
                guard rows[key] == nil else { continue }
                order.append(key)
                rows[key] = HubOverview.AlertRow(id: a.id, kind: a.kind, severity: a.severity, text: a.text, raisedBy: who,
                                                 raisedMicroseconds: UInt64(bitPattern: time), expiresAtMicroseconds: a.expiresAtUs,
                                                 cancelled: false, acknowledgedBy: [], fromCoordinator: origin == 0)
            case .alertReaffirmed(let r):
                rows[r.id.text]?.expiresAtMicroseconds = r.expiresAtUs
            case .alertCancelled(let c):
                if rows[c.id.text]?.cancelled == false { rows[c.id.text]?.cancelledMicroseconds = UInt64(bitPattern: time) }
                rows[c.id.text]?.cancelled = true
            case .alertAcknowledged(let k):
                if rows[k.id.text]?.acknowledgedBy.contains(who) == false { rows[k.id.text]?.acknowledgedBy.append(who) }
            case .alertTaken(let t) where t.hasID:
                // Who took the call, as the box that took it recorded it.
                // Said as the box's claim ("taken by …"), never in the form a coordinator's is.
                let taker = "taken by \(PrintableText.clean(t.by, limit: 64)) (at \(who))"
                if rows[t.id.text]?.acknowledgedBy.contains(taker) == false { rows[t.id.text]?.acknowledgedBy.append(taker) }
            default:
                continue
            }
        }
        return order.reversed().compactMap { rows[$0] }
    }

    /// Residents whose ladder is running, per box, by the same rules the box uses.
    private func foldEscalations(names: [UInt64: String]) async throws -> [HubOverview.Escalation] {
        let kinds: [Int32] = [EventKind.residentEnrolled, .residentUpdated, .residentRemoved, .checkIn, .deadlineReached].map { Int32($0.rawValue) }
        var books: [UInt64: EscalationBook] = [:]
        for try await (node, seq, kind, time, payload) in try await bounded.query("""
            SELECT node_id, seq, kind, time_us, payload FROM events WHERE kind = ANY(\(kinds)::integer[])
            ORDER BY node_id, epoch, seq
            """, logger: logger).decode((Int64, Int64, Int32, Int64, ByteBuffer).self) {
            let sequence = UInt64(bitPattern: seq)
            guard let body = try? EventCodec.decode(kind: UInt32(bitPattern: kind), payload: Array(payload.readableBytesView), sequence: sequence) else {
                continue
            }
            _ = books[UInt64(bitPattern: node), default: EscalationBook()]
                .apply(Event(sequence: sequence, timeMicroseconds: UInt64(bitPattern: time), body: body))
        }
        var out: [HubOverview.Escalation] = []
        for (node, book) in books {
            // From the first question on, including an emergency already triggered (contacts told).
            for r in book.residents.values where r.step >= LadderStep.prompt.rawValue {
                out.append(HubOverview.Escalation(box: names[node] ?? NodeIDText.format(node), resident: r.id, name: r.name, room: r.room,
                                                  step: r.ladderStep, ladderStartMicroseconds: r.ladderStartMicroseconds))
            }
        }
        // The furthest along first, then the longest running.
        return out.sorted {
            $0.step.rawValue != $1.step.rawValue ? $0.step.rawValue > $1.step.rawValue : $0.ladderStartMicroseconds < $1.ladderStartMicroseconds
        }
    }
}
