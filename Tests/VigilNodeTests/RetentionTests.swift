import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilLog
import VigilSystem
@testable import VigilNode

@Suite struct RetentionTests {
    static let day: UInt64 = 86_400_000_000

    /// A log with 20 days of scan hits (contacts with GAEN identifiers, plain devices, and a
    /// resident's tag), written before the node starts.
    func writeHistory(_ dir: String, now: UInt64, tag: UInt64) async throws {
        let log = try EventLog.open(LogConfiguration(directory: dir))
        func put(_ body: EventBody, at time: UInt64) async throws {
            let (kind, payload) = EventCodec.encode(body)
            _ = try await log.appendDurably(LogRecord(kind: kind, timeMicroseconds: time, payload: payload), priority: .critical)
        }
        var resident = Resident()
        resident.id = "room-1"
        resident.mode = .off
        resident.bleTag = tag
        try await put(.residentEnrolled(resident), at: now - 21 * Self.day)
        // A second resident whose tag sightings were applied, then who left: retention must keep
        // those sightings too, or replay would differ from what the ladder saw.
        var gone = Resident()
        gone.id = "room-2"
        gone.mode = .off
        gone.bleTag = tag + 1
        try await put(.residentEnrolled(gone), at: now - 21 * Self.day)
        for d in stride(from: 20, through: 1, by: -1) {
            for k in 0..<5 {
                var hit = ScanHit()
                hit.address = k == 0 ? tag : k == 4 ? tag + 1 : 0x5000_0000_0000 | UInt64(d * 10 + k)
                hit.count = 2
                hit.rssiMin = -70; hit.rssiMax = -60; hit.rssiSum = -130
                if k == 1 { hit.advertisement.gaenRpi = Data(repeating: UInt8(d), count: 16) }
                try await put(.scanHit(hit), at: now - UInt64(d) * Self.day + UInt64(k) * 1_000_000)
            }
        }
        var removed = ResidentRemoved()
        removed.id = "room-2"
        try await put(.residentRemoved(removed), at: now - 1_000_000)
        log.close()
    }

    @Test func contactDataOlderThanTheRetentionIsDeletedAndReplayStillEqualsTheRunningState() async throws {
        let dir = TemporaryDirectory()
        let tag: UInt64 = 0x0A_0B_0C_0D_0E_0F
        let clock = ManualClock()
        let now = clock.nowMicroseconds()
        try await writeHistory(dir.path, now: now, tag: tag)
        var c = testConfiguration(dir, advertisers: 3)
        c.exposure.retentionFirstCheckMicroseconds = 100_000
        c.exposure.contacts.retentionMicroseconds = 14 * Self.day
        let node = try Node(configuration: c, clock: clock, monotonic: clock, logger: quietLogger)
        let stopped = try await run(node, on: clock, forMicroseconds: 1_500_000)

        let log = try EventLog.openReadOnly(directory: dir.path)
        var hits: [(time: UInt64, address: UInt64)] = []
        var retentions = 0
        try log.read { txn in
            try txn.forEach(from: 0) { result in
                guard case .event(let e) = Replay.input(result) else { return true }
                if case .scanHit(let h) = e.body { hits.append((e.timeMicroseconds, h.address)) }
                if case .contactRetention = e.body { retentions += 1 }
                return true
            }
        }
        // The node's own cutoff: the UTC midnight before `now` minus 14 days (its clock ran a
        // little after `now`).
        let cutoff = stopped.projections.exposures.lastRetentionCutoffMicroseconds
        #expect(cutoff % Self.day == 0)
        #expect(cutoff <= now - 14 * Self.day && cutoff > now - 15 * Self.day + 60_000_000)
        #expect(retentions == 1)
        // Older than 14 days: only the resident's tag sightings are left (the ladder's data).
        let old = hits.filter { $0.time < cutoff }
        #expect(!old.isEmpty && old.allSatisfy { $0.address == tag || $0.address == tag + 1 })
        #expect(old.contains { $0.address == tag + 1 }, "a removed resident's tag sightings are kept")
        // Days 1–14 (all after the midnight cutoff): every one of their hits is still there.
        let recent = hits.filter { $0.time >= cutoff && $0.time < now }
        #expect(recent.count == 14 * 5)
        #expect(log.statistics.purged == 0, "a reader does not purge")
        // Status counts what the log holds (issue 10, item 10).
        #expect(stopped.projections.health.count(of: .scanHit) == UInt64(hits.count))
        // Rebuilding from sequence 0 (with the old hits gone) equals the node's own state.
        let report = try Replay.verify(log, settings: c.projections)
        #expect(report.matches, "replay after retention equals the incremental state")
    }
}
