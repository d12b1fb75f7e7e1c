import Foundation
import Glibc
import VigilEvents
import VigilLog
import VigilSystem
import VigilCore
import VigilNode
import Dispatch

/// sighting_bytes_per_hit and crowded_14d_bytes: a crowded shelter's scan hits through the node's
/// own compactor (`Compaction.read`), on real logs.
///
/// The shelter: 2,000 phones, every one heard in every 2 s scan window (1,000 scan hits a
/// second, one ScanBatch record a window as the node logs them), each advertising a GAEN identifier that changes with its address every 15 minutes,
/// at a phase of its own (the worst case for the compacted tier: a phone without one compacts
/// to nothing). The raw hits of `minutes` are appended as the node appends them, every ten-minute
/// slot is compacted, and the sightings (with the device list each carries) are appended to a
/// second log: the bytes LMDB takes for
/// them, over the raw hits they replace, is `sighting_bytes_per_hit` (the baseline in the same
/// run is the raw tier's bytes per hit). `crowded_14d_bytes` is what 14 days take: the sightings
/// of 14 days at the measured rate, plus the raw tier (the hour compaction waits, and the slot
/// it is reading), at its measured rate. The 14 days are extrapolated from the simulated
/// slots, not simulated hit by hit (that would be 1.2 billion hits).
struct CompactionBench {
    let plan: Plan
    let reporter: Reporter
    static let metrics = ["sighting_bytes_per_hit", "crowded_14d_bytes"]
    static let phones = 2_000
    static let windowMicroseconds: UInt64 = 2_000_000

    /// The scan hit of `phone` in the window closing at `time`.
    static func hit(phone: Int, time: UInt64, using rng: inout SplitMix64) -> ScanHit {
        let phase = UInt64(phone) * 449_000_000 % 900_000_000
        let epoch = (time + phase) / 900_000_000
        var h = ScanHit()
        var idRng = SplitMix64(seed: UInt64(phone) << 32 | epoch)
        h.address = (idRng.next() & 0x3FFF_FFFF_FFFF) | 0x4000_0000_0000
        h.addressType = .addressRandom
        let base = -90 + Int32(rng.next() % 45)
        h.count = 2 + UInt32(rng.next() % 3)
        let spread = Int32(rng.next() % 8)
        h.rssiMin = base
        h.rssiMax = base + spread
        // Between count × min and count × max, as reports make it.
        h.rssiSum = Int64(base) * Int64(h.count) + Int64(rng.next() % (UInt64(spread) * UInt64(h.count) + 1))
        h.firstOffsetUs = 1_200_000 + rng.next() % 700_000
        h.lastOffsetUs = rng.next() % 300_000
        var ad = AdvertisementSummary()
        ad.flags = 0x1A
        ad.serviceUuids16 = [0xFD6F]
        ad.serviceDataUuids16 = [0xFD6F]
        ad.gaenRpi = Data((0..<2).flatMap { _ in withUnsafeBytes(of: idRng.next()) { Array($0) } })
        ad.gaenAem = Data(withUnsafeBytes(of: UInt32(truncatingIfNeeded: idRng.next())) { Array($0) })
        h.advertisement = ad
        return h
    }

    func run() throws {
        let minutes = 30
        let slots = minutes / 10
        try withTemporaryDirectory("compaction") { directory in
            let rawDirectory = directory + "/raw"
            let compactedDirectory = directory + "/compacted"
            try FileManager.default.createDirectory(atPath: rawDirectory, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: compactedDirectory, withIntermediateDirectories: true)
            var configuration = LogConfiguration(directory: rawDirectory)
            configuration.sync = .none
            configuration.initialMapSize = 1 << 30
            configuration.diskReserveBytes = 0
            let raw = try EventLog.open(configuration)
            // Windows close on the 2 s grid from a slot boundary; each window's hits, in phone order.
            let start = Workload.startMicroseconds - Workload.startMicroseconds % SlotTally.slotMicroseconds
            var rng = SplitMix64(seed: 7)
            var hits = 0
            var time = start + Self.windowMicroseconds
            let end = start + UInt64(minutes) * 60_000_000
            progress("compaction: appending \(minutes) min of 2,000 phones")
            // The sequences of each slot's records (the log numbers them from 1, in append order).
            var slotFirst: [UInt64] = []
            var records = 0
            // The device list as the node's projections fold the same hits: what each compaction
            // event carries (`DeviceStays`).
            var devices = DeviceList()
            while time < end {
                if slotFirst.count <= Int((time - start) / SlotTally.slotMicroseconds) { slotFirst.append(UInt64(records) + 1) }
                // One record per window, as the node logs it (`RadioIntake`).
                let window = (0..<Self.phones).map { Self.hit(phone: $0, time: time, using: &rng) }
                let (batch, rest) = ScanBatch.packing(window)
                guard rest.isEmpty else { throw BenchError("compaction: a hit did not fit its window's batch") }
                let (kind, payload) = EventCodec.encode(.scanBatch(batch))
                hits += window.count
                records += 1
                for hit in window { devices.apply(scanHit: ScanHitFields(hit), sequence: UInt64(records), timeMicroseconds: time) }
                let record = LogRecord(kind: kind, timeMicroseconds: time, payload: payload)
                // Every 10 windows, wait until the writer has them: the queue stays small.
                if records % 10 == 0 {
                    let done = DispatchSemaphore(value: 0)
                    let signal: @Sendable (Result<UInt64, LogError>) -> Void = { _ in done.signal() }
                    _ = try raw.append(record, priority: .critical, completion: signal)
                    done.wait()
                } else {
                    _ = try raw.append(record, priority: .critical)
                }
                time += Self.windowMicroseconds
            }
            // What a compaction logged now carries: the stays with a record before the span it
            // compacts, an hour back. Every phone's address rotates every 15 minutes, so none
            // (a device that never rotates, a beacon, would be carried: about 58 bytes).
            let stays = devices.stays(at: time, reaching: time - 60 * 60_000_000)
            raw.close()
            let rawLog = try EventLog.openReadOnly(directory: rawDirectory)
            let rawPages = try rawLog.read { try $0.eventsPageStatistics() }
            guard rawPages.entries == records else { throw BenchError("raw log has \(rawPages.entries) of \(records) records") }
            let rawBytesPerHit = Double(rawPages.totalBytes) / Double(hits)

            var compactedConfiguration = LogConfiguration(directory: compactedDirectory)
            compactedConfiguration.sync = .none
            compactedConfiguration.diskReserveBytes = 0
            let compacted = try EventLog.open(compactedConfiguration)
            var compactionSeconds: [Double] = []
            // The anonymous resident set (the heap: not the log's mapped pages, which the kernel
            // drops at will), sampled while the slots are compacted.
            let anonBefore = statusMegabytes("RssAnon:")
            let sampling = LockedValue<(stop: Bool, peak: Double)>((false, anonBefore))
            let sampler = Thread {
                while !sampling.withLock({ $0.stop }) {
                    let now = statusMegabytes("RssAnon:")
                    sampling.withLock { $0.peak = max($0.peak, now) }
                    usleep(2_000)
                }
            }
            sampler.start()
            var summarised: UInt64 = 0
            var identifierMinutes = 0
            var tracks = 0
            var eventBytes = 0
            var staysBytes = 0
            slotFirst.append(UInt64(records) + 1)
            for slot in 0..<slots {
                let began = monotonicSeconds()
                var sightings = try ScanSightingsReader.read(rawLog, sequences: slotFirst[slot]...(slotFirst[slot + 1] - 1),
                                                    start: start + UInt64(slot) * SlotTally.slotMicroseconds,
                                                    end: start + UInt64(slot + 1) * SlotTally.slotMicroseconds, tags: [])
                compactionSeconds.append(monotonicSeconds() - began)
                sightings.stays = stays
                staysBytes += (try? stays.serializedBytes() as [UInt8])?.count ?? 0
                summarised += sightings.hits
                tracks += sightings.tracks.count
                identifierMinutes += sightings.tracks.reduce(0) { $0 + $1.minutes.count }
                let (kind, payload) = EventCodec.encode(.scanSightings(sightings))
                eventBytes += payload.count
                _ = try compacted.append(LogRecord(kind: kind, timeMicroseconds: end + 3_600_000_000, payload: payload), priority: .critical)
            }
            compacted.close()
            guard summarised == UInt64(hits) else { throw BenchError("the compactor read \(summarised) of \(hits) hits") }
            let compactedLog = try EventLog.openReadOnly(directory: compactedDirectory)
            let compactedPages = try compactedLog.read { try $0.eventsPageStatistics() }
            let bytesPerHit = Double(compactedPages.totalBytes) / Double(hits)
            let hitsPerDay = Double(Self.phones) / 2 * 86_400
            let rawTierHits = hitsPerDay / 24 * (70.0 / 60) // an hour before compaction, plus the slot being read
            let fourteenDays = bytesPerHit * hitsPerDay * 14 + rawBytesPerHit * rawTierHits
            let seconds = compactionSeconds.sorted()[compactionSeconds.count / 2]
            progress("compaction: \(bytesPerHit) bytes/hit compacted, \(rawBytesPerHit) raw; 14 days \(Int(fourteenDays / 1e6)) MB")
            let anonPeak = sampling.withLock { $0.stop = true; return $0.peak }
            reporter.emit(MetricLine(metric: "sighting_bytes_per_hit", value: bytesPerHit, unit: "bytes/hit", baseline: rawBytesPerHit, context: [
                ("hits", .int(hits)),
                ("phones", .int(Self.phones)),
                ("slots", .int(slots)),
                ("deterministic", .bool(true)),
                ("identifiers", .int(tracks)),
                ("identifier_minutes", .int(identifierMinutes)),
                ("payload_bytes_per_identifier_minute", .double(Double(eventBytes - staysBytes) / Double(max(identifierMinutes, 1)))),
                ("device_stays", .int(stays.devices.count)),
                ("device_stays_bytes_per_event", .double(Double(staysBytes) / Double(max(slots, 1)))),
                ("raw_records", .int(records)),
                ("compaction_seconds_per_slot_median", .double(seconds)),
                // What reading and folding a slot adds to the heap at its peak (sampled every 2 ms).
                ("compaction_anon_rss_growth_mb", .double(max(0, anonPeak - anonBefore))),
            ]))
            reporter.emit(MetricLine(metric: "crowded_14d_bytes", value: fourteenDays, unit: "bytes", baseline: rawBytesPerHit * hitsPerDay * 14, context: [
                ("goal_bytes", .double(4 * 1_073_741_824)),
                ("scan_hits_per_day", .double(hitsPerDay)),
                ("sightings_bytes", .double(bytesPerHit * hitsPerDay * 14)),
                ("raw_tier_bytes", .double(rawBytesPerHit * rawTierHits)),
                ("extrapolated_from_minutes", .int(minutes)),
            ]))
        }
    }
}
