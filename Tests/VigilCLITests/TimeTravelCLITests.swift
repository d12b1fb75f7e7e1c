import Foundation
import Testing
import VigilEvents
import VigilLog

/// `vigil status --at` (issue 13, item 4): every projection as it was at a past moment, rebuilt
/// from the log, for after-incident review.
@Suite struct TimeTravelCLITests {
    static let t0: UInt64 = 1_790_000_000_000_000 // 2026-09-21T...Z

    /// A night at the shelter: the node starts, a resident is enrolled, an SOS is raised at the
    /// box and cancelled twelve minutes later, then an hour of quiet and a flood alert heard.
    func writeNight(_ dir: String) async throws {
        let log = try EventLog.open(LogConfiguration(directory: dir))
        func put(_ body: EventBody, minutes: UInt64) async throws {
            let (kind, payload) = EventCodec.encode(body)
            _ = try await log.appendDurably(LogRecord(kind: kind, timeMicroseconds: Self.t0 + minutes * 60_000_000, payload: payload), priority: .critical)
        }
        var started = NodeStarted()
        started.nodeID = 0xB0C5
        try await put(.nodeStarted(started), minutes: 0)
        var resident = Resident()
        resident.id = "room-12"
        resident.name = "Ada"
        resident.mode = .off
        try await put(.residentEnrolled(resident), minutes: 1)
        var sos = Alert()
        sos.id = AlertID(origin: 0xB0C5, counter: 1)
        sos.kind = .sos
        sos.severity = .critical
        try await put(.alertRaised(sos), minutes: 10)
        var cancel = AlertCancelled()
        cancel.id = sos.id
        cancel.reason = "false alarm"
        try await put(.alertCancelled(cancel), minutes: 22)
        var flood = Alert()
        flood.id = AlertID(origin: 0xF100D, counter: 4)
        flood.kind = .flood
        flood.severity = .warning
        flood.hops = 1
        try await put(.alertReceived(flood), minutes: 80)
        log.close()
    }

    static func iso(minutes: UInt64) -> String {
        Date(timeIntervalSince1970: Double(t0 + minutes * 60_000_000) / 1e6).formatted(.iso8601)
    }

    @Test func theStateAtAPastMomentShowsWhatWasTrueThen() async throws {
        let dir = TemporaryDirectory()
        try await writeNight(dir.path)

        // Five minutes into the SOS: it is active and raised here.
        let during = try CLI.run(["status", "--data", dir.path, "--at", Self.iso(minutes: 15)])
        #expect(during.status == 0, "\(during.stderr)")
        #expect(during.stdout.contains("as it was at"))
        #expect(during.stdout.contains("the log up to event 3"))
        #expect(during.stdout.contains("alerts: 1 active"))
        #expect(during.stdout.contains("b0c5:1 sos raised here"))

        // Before it: nothing active; after its cancel and the flood: only the flood.
        let before = try CLI.run(["status", "--data", dir.path, "--at", Self.iso(minutes: 5)])
        #expect(before.stdout.contains("the log up to event 2") && before.stdout.contains("alerts: 0 active"))
        let after = try CLI.run(["status", "--data", dir.path, "--at", Self.iso(minutes: 90), "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [String: Any])
        #expect(object["throughSequence"] as? Int == 5)
        let state = try #require(object["state"] as? [String: Any])
        #expect(state["appliedThrough"] as? Int == 5)

        // By sequence, the same moment as by time.
        let bySequence = try CLI.run(["status", "--data", dir.path, "--at-sequence", "3"])
        #expect(bySequence.stdout.contains("as it was after event 3") && bySequence.stdout.contains("alerts: 1 active"))
        #expect(bySequence.stdout.split(separator: "\n").dropFirst() == during.stdout.split(separator: "\n").dropFirst(),
                "the same state whether named by time or by sequence")

        // Before anything was logged.
        let empty = try CLI.run(["status", "--data", dir.path, "--at", "2000-01-01T00:00:00Z"])
        #expect(empty.status == 0 && empty.stdout.contains("nothing had been logged yet"))
    }

    @Test func aMomentThatIsNotATimeIsRefusedWithTheReason() async throws {
        let dir = TemporaryDirectory()
        try await writeNight(dir.path)
        let bad = try CLI.run(["status", "--data", dir.path, "--at", "yesterday"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("ISO 8601"))
        let both = try CLI.run(["status", "--data", dir.path, "--at=-5m", "--at-sequence", "2"])
        #expect(both.status == 64 && both.stderr.contains("not both"))
        // A duration ago: the night is long past, so all of it.
        for ago in [["--at=-5m"], ["--at", "5m ago"]] {
            let run = try CLI.run(["status", "--data", dir.path] + ago)
            #expect(run.status == 0 && run.stdout.contains("the log up to event 5"), "\(ago): \(run.stderr)")
        }
    }
}
