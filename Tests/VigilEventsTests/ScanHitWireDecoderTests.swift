import Foundation
import SwiftProtobuf
import Testing
@testable import VigilEvents

/// The ScanHit fast path must decode exactly what swift-protobuf decodes, or step aside.
@Suite struct ScanHitWireDecoderTests {
    static func randomHit(_ rng: inout some RandomNumberGenerator) -> ScanHit {
        var hit = ScanHit()
        let extremes: [UInt64] = [0, 1, 127, 128, 16_383, 16_384, UInt64(UInt32.max), UInt64.max]
        hit.address = Bool.random(using: &rng) ? extremes.randomElement(using: &rng)! : UInt64.random(in: 0...0xFFFF_FFFF_FFFF, using: &rng)
        hit.addressType = [.addressPublic, .addressRandom, .UNRECOGNIZED(7), .UNRECOGNIZED(-3)].randomElement(using: &rng)!
        hit.rssiMin = [Int32.min, -127, -60, 0, 20, Int32.max].randomElement(using: &rng)!
        hit.rssiMax = Int32.random(in: -100...20, using: &rng)
        hit.rssiSum = [Int64.min, -1, 0, 1, Int64.max, Int64.random(in: -100_000...0, using: &rng)].randomElement(using: &rng)!
        hit.count = UInt32.random(in: 0...UInt32.max, using: &rng)
        hit.firstOffsetUs = extremes.randomElement(using: &rng)!
        hit.lastOffsetUs = UInt64.random(in: 0...3_000_000, using: &rng)
        if Bool.random(using: &rng) { hit.txPower = [Int32.min, -20, 0, 4, Int32.max].randomElement(using: &rng)! }
        if Bool.random(using: &rng) {
            var ad = AdvertisementSummary()
            ad.flags = UInt32.random(in: 0...255, using: &rng)
            ad.name = ["", "Phone-9c40", "Ärztin 🚑 Station 4", String(repeating: "x", count: 40)].randomElement(using: &rng)!
            ad.serviceUuids16 = (0..<Int.random(in: 0...4, using: &rng)).map { _ in UInt32.random(in: 0...0xFFFF, using: &rng) }
            ad.companyID = UInt32.random(in: 0...0x10000, using: &rng)
            ad.appearance = UInt32.random(in: 0...0xFFFF, using: &rng)
            ad.connectable = Bool.random(using: &rng)
            ad.serviceDataUuids16 = (0..<Int.random(in: 0...2, using: &rng)).map { _ in UInt32.random(in: 0...0xFFFF, using: &rng) }
            hit.advertisement = ad
        }
        return hit
    }

    static func generic(_ bytes: [UInt8]) -> ScanHit? {
        var options = BinaryDecodingOptions()
        options.discardUnknownFields = true
        return try? ScanHit(serializedBytes: bytes, options: options)
    }

    static func fast(_ bytes: [UInt8]) -> ScanHit? {
        bytes.withUnsafeBytes { ScanHitWireDecoder.decode($0) }
    }

    @Test func agreesWithSwiftProtobufOnRandomHits() throws {
        var rng = SystemRandomNumberGenerator()
        var fastPathTaken = 0
        for _ in 0..<5_000 {
            let hit = Self.randomHit(&rng)
            let bytes: [UInt8] = try hit.serializedBytes()
            let fast = try #require(Self.fast(bytes), "well-formed hits take the fast path")
            #expect(fast == Self.generic(bytes))
            #expect(fast == hit)
            fastPathTaken += 1
        }
        #expect(fastPathTaken == 5_000)
    }

    @Test func eitherAgreesOrStepsAsideOnMutatedBytes() throws {
        var rng = SystemRandomNumberGenerator()
        var steppedAside = 0
        for _ in 0..<20_000 {
            var bytes: [UInt8] = try Self.randomHit(&rng).serializedBytes()
            guard !bytes.isEmpty else { continue }
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            case 1: bytes.removeLast(Int.random(in: 1...bytes.count, using: &rng))
            default: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
            }
            if let fast = Self.fast(bytes) {
                #expect(fast == Self.generic(bytes), "fast path disagreed on \(bytes)")
            } else {
                steppedAside += 1
            }
        }
        #expect(steppedAside > 0, "mutations exercise the fallback")
    }

    @Test func unpackedRepeatedUUIDsAndRepeatedSubmessagesAreHandledOrDeferred() throws {
        // Field 3 of the summary as unpacked varints (legal for proto3 parsers to accept).
        let summary: [UInt8] = [0x18, 0x6F, 0x18, 0xFD, 0x01]
        let bytes: [UInt8] = [0x08, 0x01, 0x52, UInt8(summary.count)] + summary
        let fast = try #require(Self.fast(bytes))
        #expect(fast == Self.generic(bytes))
        #expect(fast.advertisement.serviceUuids16 == [0x6F, 0xFD])
        // The same submessage twice must merge; the fast path leaves that to swift-protobuf.
        let twice = bytes + [0x52, UInt8(summary.count)] + summary
        #expect(Self.fast(twice) == nil)
        #expect(try EventCodec.decode(kind: UInt32(EventKind.scanHit.rawValue), payload: twice, sequence: 1)
            == .scanHit(try #require(Self.generic(twice))))
    }
}

/// Replay's fast path decodes ScanHits into `ScanHitFields`: it must accept exactly what the
/// message fast path accepts and give the fields of what swift-protobuf decodes.
@Suite struct ScanHitFieldsDecoderTests {
    static func fields(_ bytes: [UInt8]) -> ScanHitFields? {
        bytes.withUnsafeBytes { EventCodec.scanHitFields(payload: $0) }
    }

    @Test func agreesWithSwiftProtobufOnRandomHits() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let hit = ScanHitWireDecoderTests.randomHit(&rng)
            let bytes: [UInt8] = try hit.serializedBytes()
            let fields = try #require(Self.fields(bytes), "well-formed hits take the fast path")
            #expect(fields == ScanHitFields(try #require(ScanHitWireDecoderTests.generic(bytes))))
            #expect(fields == ScanHitFields(hit))
        }
    }

    @Test func acceptsExactlyWhatTheMessageFastPathAcceptsOnMutatedBytes() throws {
        var rng = SystemRandomNumberGenerator()
        var steppedAside = 0
        for _ in 0..<20_000 {
            var bytes: [UInt8] = try ScanHitWireDecoderTests.randomHit(&rng).serializedBytes()
            guard !bytes.isEmpty else { continue }
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            case 1: bytes.removeLast(Int.random(in: 1...bytes.count, using: &rng))
            default: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
            }
            let fields = Self.fields(bytes)
            let message = ScanHitWireDecoderTests.fast(bytes)
            #expect(fields == message.map(ScanHitFields.init), "fields and message fast paths disagree on \(bytes)")
            if let fields {
                // Taken only when swift-protobuf decodes it too, to the same fields.
                #expect(ScanHitWireDecoderTests.generic(bytes).map(ScanHitFields.init) == fields, "disagreed on \(bytes)")
            } else {
                steppedAside += 1
            }
        }
        #expect(steppedAside > 0, "mutations exercise the fallback")
    }

    @Test func unusualShapesAreLeftToTheFullDecoder() throws {
        let summary: [UInt8] = [0x18, 0x6F, 0x18, 0xFD, 0x01, 0x12, 0x03, 0x54, 0x61, 0x67] // unpacked UUIDs, name "Tag"
        let bytes: [UInt8] = [0x08, 0x01, 0x52, UInt8(summary.count)] + summary
        #expect(Self.fields(bytes)?.name == "Tag")
        // The summary twice merges: swift-protobuf's job.
        #expect(Self.fields(bytes + [0x52, UInt8(summary.count)] + summary) == nil)
        // An unknown field (a newer schema) and invalid UTF-8 in the name step aside too.
        #expect(Self.fields(bytes + [0xF8, 0x01, 0x01]) == nil)
        #expect(Self.fields([0x52, 0x03, 0x12, 0x01, 0xFF]) == nil)
        #expect(Self.fields([]) == ScanHitFields())
    }
}
