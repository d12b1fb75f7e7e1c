import Foundation
import Testing
import VigilEvents

/// The committed golden files prove that this build still reads what every schema version wrote.
/// A new version's files are written (once, when the schema grows) with
/// `VIGIL_WRITE_GOLDEN=v21 swift test --filter GoldenFileTests`; older versions are never rewritten.
@Suite("Golden files")
struct GoldenFileTests {
    /// Every schema version, oldest first, with the events its files hold.
    static let versions: [(name: String, events: [(timeMicroseconds: UInt64, body: EventBody)], kinds: [EventKind])] = [
        ("v1", Fixtures.goldenEvents, Array(EventKind.known.prefix(9))),
        ("v2", Fixtures.goldenEventsV2, Array(EventKind.known.prefix(15))),
        ("v3", Fixtures.goldenEventsV3, Array(EventKind.known.prefix(15))),
        ("v4", Fixtures.goldenEventsV4, Array(EventKind.known.prefix(18))),
        ("v5", Fixtures.goldenEventsV5, Array(EventKind.known.prefix(19))),
        ("v6", Fixtures.goldenEventsV6, Array(EventKind.known.prefix(22))),
        ("v7", Fixtures.goldenEventsV7, Array(EventKind.known.prefix(25))),
        ("v8", Fixtures.goldenEventsV8, Array(EventKind.known.prefix(26))),
        ("v9", Fixtures.goldenEventsV9, Array(EventKind.known.prefix(29))),
        ("v10", Fixtures.goldenEventsV10, Array(EventKind.known.prefix(30))),
        ("v11", Fixtures.goldenEventsV11, Array(EventKind.known.prefix(31))),
        ("v12", Fixtures.goldenEventsV12, Array(EventKind.known.prefix(32))),
        ("v13", Fixtures.goldenEventsV13, Array(EventKind.known.prefix(35))),
        ("v14", Fixtures.goldenEventsV14, Array(EventKind.known.prefix(35))),
        ("v15", Fixtures.goldenEventsV15, Array(EventKind.known.prefix(37))),
        ("v16", Fixtures.goldenEventsV16, Array(EventKind.known.prefix(40))),
        ("v17", Fixtures.goldenEventsV17, Array(EventKind.known.prefix(41))),
        ("v18", Fixtures.goldenEventsV18, Array(EventKind.known.prefix(41))),
        ("v19", Fixtures.goldenEventsV19, Array(EventKind.known.prefix(42))),
        ("v20", Fixtures.goldenEventsV20, Array(EventKind.known.prefix(44))),
        ("v21", Fixtures.goldenEventsV21, EventKind.known),
    ]

    @Test(arguments: versions.map(\.name))
    func goldenFilesAreRewrittenOnlyWhenAsked(version: String) throws {
        let events = try #require(Self.versions.first { $0.name == version }).events
        let generated = try GoldenFormat.generate(events)
        if ProcessInfo.processInfo.environment["VIGIL_WRITE_GOLDEN"] == version {
            let directory = GoldenFormat.sourceDirectory().appendingPathComponent(version)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(generated.bin).write(to: directory.appendingPathComponent("events.bin"))
            try Data(generated.jsonl.utf8).write(to: directory.appendingPathComponent("events.jsonl"))
            print("wrote golden files to \(directory.path)")
            #expect(try Data(contentsOf: directory.appendingPathComponent("events.bin")) == Data(generated.bin))
        } else {
            // Not writing: the committed files must be what the current encoder writes for the
            // same events, so the wire format has not drifted.
            let directory = try GoldenFormat.bundledDirectory().appendingPathComponent(version)
            let committed = try [UInt8](Data(contentsOf: directory.appendingPathComponent("events.bin")))
            #expect(committed == generated.bin, "the encoder no longer writes the \(version) golden bytes")
        }
    }

    @Test(arguments: versions.map(\.name))
    func committedGoldenEventsDecodeToTheirExpectedBodies(version: String) throws {
        let kinds = try #require(Self.versions.first { $0.name == version }).kinds
        let directory = try GoldenFormat.bundledDirectory().appendingPathComponent(version)
        let bin = try [UInt8](Data(contentsOf: directory.appendingPathComponent("events.bin")))
        let jsonl = try String(contentsOf: directory.appendingPathComponent("events.jsonl"), encoding: .utf8)
        let records = try GoldenFormat.decode(bin)
        let expected = try jsonl.split(separator: "\n").map { try GoldenFormat.parseLine(String($0)) }

        try #require(records.count == expected.count)
        #expect(records.count >= kinds.count)
        for (index, (record, want)) in zip(records, expected).enumerated() {
            let body = try EventCodec.decode(kind: record.kind, payload: record.payload, sequence: UInt64(index + 1))
            #expect(record.kind == UInt32(want.kind.rawValue), "record \(index)")
            #expect(record.timeMicroseconds == want.timeMicroseconds, "record \(index)")
            #expect(body == want.body, "record \(index) (\(want.kind.name)) decodes differently")
        }

        // The files cover what they claim to cover.
        let bodies = expected.map(\.body)
        #expect(Set(bodies.map(\.kind.rawValue)) == Set(kinds.map(\.rawValue)))
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
