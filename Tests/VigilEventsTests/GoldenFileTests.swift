import Foundation
import Testing
import VigilEvents

/// The committed golden files prove that this build still reads what schema v1 wrote.
/// Regenerate (only when deliberately adding a schema version) with
/// `VIGIL_WRITE_GOLDEN=1 swift test --filter GoldenFileTests`.
@Suite("Golden files")
struct GoldenFileTests {
    static let version = "v1"

    @Test func goldenFilesAreRewrittenOnlyWhenAsked() throws {
        let generated = try GoldenFormat.generate()
        if ProcessInfo.processInfo.environment["VIGIL_WRITE_GOLDEN"] == "1" {
            let directory = GoldenFormat.sourceDirectory().appendingPathComponent(Self.version)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(generated.bin).write(to: directory.appendingPathComponent("events.bin"))
            try Data(generated.jsonl.utf8).write(to: directory.appendingPathComponent("events.jsonl"))
            print("wrote golden files to \(directory.path)")
            #expect(try Data(contentsOf: directory.appendingPathComponent("events.bin")) == Data(generated.bin))
        } else {
            // Not writing: the committed files must be what the current encoder writes for the
            // same events, so the wire format has not drifted.
            let directory = try GoldenFormat.bundledDirectory().appendingPathComponent(Self.version)
            let committed = try [UInt8](Data(contentsOf: directory.appendingPathComponent("events.bin")))
            #expect(committed == generated.bin, "the encoder no longer writes the v1 golden bytes")
        }
    }

    @Test func committedGoldenEventsDecodeToTheirExpectedBodies() throws {
        let directory = try GoldenFormat.bundledDirectory().appendingPathComponent(Self.version)
        let bin = try [UInt8](Data(contentsOf: directory.appendingPathComponent("events.bin")))
        let jsonl = try String(contentsOf: directory.appendingPathComponent("events.jsonl"), encoding: .utf8)
        let records = try GoldenFormat.decode(bin)
        let expected = try jsonl.split(separator: "\n").map { try GoldenFormat.parseLine(String($0)) }

        try #require(records.count == expected.count)
        #expect(records.count >= EventKind.known.count)
        for (index, (record, want)) in zip(records, expected).enumerated() {
            let body = try EventCodec.decode(kind: record.kind, payload: record.payload, sequence: UInt64(index + 1))
            #expect(record.kind == UInt32(want.kind.rawValue), "record \(index)")
            #expect(record.timeMicroseconds == want.timeMicroseconds, "record \(index)")
            #expect(body == want.body, "record \(index) (\(want.kind.name)) decodes differently")
        }

        // The files cover what they claim to cover.
        let bodies = expected.map(\.body)
        #expect(Set(bodies.map(\.kind.rawValue)) == Set(EventKind.known.map(\.rawValue)))
        let hits = bodies.compactMap { if case .scanHit(let h) = $0 { h } else { nil } }
        #expect(hits.contains { $0.hasTxPower } && hits.contains { !$0.hasTxPower })
        #expect(hits.contains { $0.hasTxPower && $0.txPower == 0 })
        #expect(hits.contains { !$0.hasAdvertisement })
        let alerts = bodies.compactMap { body -> Alert? in
            switch body {
            case .alertRaised(let a), .alertReceived(let a): a
            default: nil
            }
        }
        #expect(alerts.contains { $0.hasLocation } && alerts.contains { !$0.hasLocation })
        let checkIns = bodies.compactMap { if case .checkIn(let c) = $0 { c } else { nil } }
        #expect(checkIns.contains { $0.hasValue } && checkIns.contains { !$0.hasValue })
    }
}
