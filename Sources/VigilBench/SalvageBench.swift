import Foundation
import VigilEvents
import VigilLog
import VigilSystem

/// log_check_s and log_salvage_s: the time `vigil log check` and `vigil log salvage` take on a log
/// of `plan.replayEvents` mixed events (1M in a full run) after 200 random 8-byte writes into its
/// data.mdb (what the issue measured a failing card doing). Baseline: a raw LMDB cursor walk of
/// the same log before the damage (the least any reader of every record costs). The page cache is
/// warm, as on a box that has just written the log; an SD card's reads add to both.
struct SalvageBench {
    let plan: Plan
    let reporter: Reporter
    static let metrics = ["log_check_s", "log_salvage_s"]
    static let damagingWrites = 200

    func run() throws {
        try withTemporaryDirectory("salvage") { base in
            let pristine = base + "/pristine"
            progress("salvage: building a log of \(plan.replayEvents) mixed events")
            try buildMixedLog(directory: pristine, plan: plan)
            let damaged = try damage(pristine + "/data.mdb")
            var checks: [Double] = [], salvages: [Double] = [], walks: [Double] = []
            var last: SalvageReport?
            for run in 1...plan.runs {
                let walk = try RawLMDB.cursorWalk(directory: pristine)
                walks.append(Double(walk.nanoseconds) / 1e9)
                let directory = base + "/run\(run)"
                try FileSystem.createDirectory(directory)
                try Data(damaged).write(to: URL(fileURLWithPath: directory + "/data.mdb"))
                let check = try LogCheck.check(directory: directory)
                checks.append(check.seconds)
                let salvage = try LogSalvage.salvage(directory: directory, now: 1)
                salvages.append(salvage.seconds)
                last = salvage
                progress("salvage run \(run)/\(plan.runs): raw walk \(walks.last ?? 0) s, check \(check.seconds) s "
                         + "(\(check.damagedPages.count) damaged pages, \(check.corruptRecords.count) corrupt runs), salvage \(salvage.seconds) s: "
                         + "\(salvage.recovered) kept (\(salvage.recoveredOutsideTree) outside the tree), \(salvage.lostCount) lost")
                try? FileManager.default.removeItem(atPath: directory)
            }
            let fileBytes = damaged.count
            let context: [(String, JSONValue)] = [
                ("events", .int(plan.replayEvents)), ("runs", .int(plan.runs)), ("cache", .string("warm")),
                ("damaging_writes", .int(Self.damagingWrites)), ("file_bytes", .int(fileBytes)),
                ("baseline_is", .string("LMDB cursor walk of the undamaged log")),
            ]
            reporter.emit(MetricLine(metric: "log_check_s", value: median(checks) ?? 0, unit: "s", baseline: median(walks),
                                     context: context + [("damaged_pages", .int(last?.check.damagedPages.count ?? 0))]))
            reporter.emit(MetricLine(metric: "log_salvage_s", value: median(salvages) ?? 0, unit: "s", baseline: median(walks),
                                     context: context + [
                                        ("recovered", .int(Int(last?.recovered ?? 0))),
                                        ("recovered_outside_tree", .int(Int(last?.recoveredOutsideTree ?? 0))),
                                        ("lost", .int(Int(last?.lostCount ?? 0))),
                                     ]))
        }
    }

    /// The file's bytes with 200 random 8-byte runs written past the meta pages (a fixed seed).
    private func damage(_ path: String) throws -> [UInt8] {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var rng = SplitMix64(seed: 12)
        for _ in 0..<Self.damagingWrites {
            let at = 8_192 + Int(rng.next() % UInt64(bytes.count - 8_200))
            var value = rng.next()
            for i in 0..<8 { bytes[at + i] = UInt8(truncatingIfNeeded: value); value >>= 8 }
        }
        return bytes
    }
}
