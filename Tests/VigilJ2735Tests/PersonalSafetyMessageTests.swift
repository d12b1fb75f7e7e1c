import Foundation
import Testing
import VigilJ2735

/// PSMs encoded by an independent encoder (asn1tools; `scripts/j2735-vectors`), decoded to the
/// values they were made from; cut and mangled ones refused, never a trap.
@Suite struct PersonalSafetyMessageTests {
    struct Vectors: Decodable {
        struct Vector: Decodable {
            struct Expected: Decodable {
                var userType: String
                var secMark: UInt16
                var msgCnt: UInt8
                var id: String
                var latitude: Int32
                var longitude: Int32
                var elevation: Int32?
                var speed: UInt16
                var heading: UInt16
                var clusterSize: String?
            }
            var name: String
            var frame: String
            var psm: String
            var expected: Expected
        }
        var encoder: String
        var vectors: [Vector]
    }

    static let vectors: [Vectors.Vector] = {
        guard let url = Bundle.module.url(forResource: "psm", withExtension: "json", subdirectory: "Vectors"),
              let data = try? Data(contentsOf: url), let decoded = try? JSONDecoder().decode(Vectors.self, from: data) else { return [] }
        return decoded.vectors
    }()

    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex, let j = hex.index(i, offsetBy: 2, limitedBy: hex.endIndex), let b = UInt8(hex[i ..< j], radix: 16) {
            out.append(b)
            i = j
        }
        return out
    }

    static let userTypes: [String: PersonalSafetyMessage.UserType] = [
        "unavailable": .unavailable, "aPEDESTRIAN": .pedestrian, "aPEDALCYCLIST": .pedalCyclist,
        "aPUBLICSAFETYWORKER": .publicSafetyWorker, "anANIMAL": .animal,
    ]
    static let clusters: [String: PersonalSafetyMessage.ClusterSize] = ["unavailable": .unavailable, "small": .small, "medium": .medium, "large": .large]

    @Test func thereAreVectorsFromTheIndependentEncoder() {
        #expect(Self.vectors.count >= 7)
    }

    @Test(arguments: vectors.indices)
    func everyVectorDecodesToTheValuesItWasMadeFrom(_ index: Int) throws {
        let v = Self.vectors[index]
        let frame = try MessageFrame.decode(Self.bytes(v.frame))
        #expect(frame.messageID == MessageFrame.personalSafetyMessage, "\(v.name)")
        #expect(frame.value == Self.bytes(v.psm))
        #expect(frame.encode() == Self.bytes(v.frame), "the frame encodes back to the encoder's bytes")
        let psm = try PersonalSafetyMessage.decode(frame.value)
        let e = v.expected
        #expect(psm.userType == Self.userTypes[e.userType], "\(v.name)")
        #expect(psm.secondMark == e.secMark && psm.messageCount == e.msgCnt)
        #expect(psm.temporaryID == Self.bytes(e.id))
        #expect(psm.latitude == e.latitude && psm.longitude == e.longitude, "\(v.name)")
        #expect(psm.elevation == e.elevation, "\(v.name)")
        #expect(psm.speed == e.speed && psm.heading == e.heading, "\(v.name)")
        #expect(psm.clusterSize == e.clusterSize.flatMap { Self.clusters[$0] }, "\(v.name)")
    }

    @Test func unitsAndUnavailableValues() throws {
        let first = try PersonalSafetyMessage.decode(Self.bytes(Self.vectors[0].psm))
        #expect(abs((first.metersPerSecond ?? 0) - 1.4) < 1e-9 && first.headingDegrees == 90 && first.hasPosition)
        let none = try #require(Self.vectors.first { $0.name.hasPrefix("unavailable") })
        let psm = try PersonalSafetyMessage.decode(Self.bytes(none.psm))
        #expect(psm.metersPerSecond == nil && !psm.hasPosition)
        let worker = try #require(Self.vectors.first { $0.name.hasPrefix("worker") })
        #expect(try PersonalSafetyMessage.decode(Self.bytes(worker.psm)).headingDegrees == nil)
    }

    /// Every cut of every vector is refused as truncated (or, cut inside what the decoder does
    /// not read, decodes to the same values); none traps.
    @Test(arguments: vectors.indices)
    func cutVectorsAreRefusedNeverATrap(_ index: Int) throws {
        let frame = Self.bytes(Self.vectors[index].frame)
        for n in 0 ..< frame.count {
            #expect(throws: J2735Error.self) { _ = try MessageFrame.decode(Array(frame.prefix(n))) }
        }
        let psm = Self.bytes(Self.vectors[index].psm)
        let whole = try PersonalSafetyMessage.decode(psm)
        // The root up to the heading takes 204 bits (26 octets with what follows).
        for n in 0 ..< 25 {
            #expect(throws: J2735Error.self) { _ = try PersonalSafetyMessage.decode(Array(psm.prefix(n))) }
        }
        #expect(try PersonalSafetyMessage.decode(psm + [0xFF, 0x00]) == whole, "trailing bytes are not read")
    }

    @Test func mangledInputsNeverTrap() {
        var generator = SystemRandomNumberGenerator()
        for v in Self.vectors {
            let frame = Self.bytes(v.frame)
            for _ in 0 ..< 2_000 {
                var m = frame
                for _ in 0 ..< Int.random(in: 1...4, using: &generator) {
                    let i = Int.random(in: 0 ..< m.count, using: &generator)
                    m[i] ^= UInt8.random(in: 1...255, using: &generator)
                }
                if let f = try? MessageFrame.decode(m) { _ = try? PersonalSafetyMessage.decode(f.value) }
                _ = try? PersonalSafetyMessage.decode(m)
            }
        }
        // Lengths the decoder does not take: a fragmented open type.
        #expect(throws: J2735Error.unsupported("a fragmented length")) { _ = try MessageFrame.decode([0x00, 0x20, 0xC1, 0x00]) }
    }

    /// The TIMs (work zones, queues) from the same encoder (decoded in TravelerInformationTests): as
    /// MessageFrames they decode to id 31 and their value, and encode back to the same bytes.
    @Test func timFramesFromTheIndependentEncoderAreFramesToo() throws {
        struct TIMVectors: Decodable {
            struct Vector: Decodable { var name: String; var frame: String; var tim: String }
            var vectors: [Vector]
        }
        let url = try #require(Bundle.module.url(forResource: "tim", withExtension: "json", subdirectory: "Vectors"))
        let vectors = try JSONDecoder().decode(TIMVectors.self, from: Data(contentsOf: url)).vectors
        #expect(vectors.count >= 4)
        for v in vectors {
            let frame = try MessageFrame.decode(Self.bytes(v.frame))
            #expect(frame.messageID == MessageFrame.travelerInformation, "\(v.name)")
            #expect(frame.value == Self.bytes(v.tim))
            #expect(frame.encode() == Self.bytes(v.frame))
        }
    }

    /// The box's own PSMs (VRU mode) decode to what it meant; for the vectors it can express
    /// (no acceleration set) its encoding differs from the independent encoder's only in the
    /// accuracy, which the box sends as unavailable.
    @Test(arguments: vectors.indices)
    func theBoxsOwnEncodingDecodesToTheSameValues(_ index: Int) throws {
        let v = Self.vectors[index]
        guard !v.name.contains("acceleration") else { return }
        let psm = try PersonalSafetyMessage.decode(Self.bytes(v.psm))
        #expect(try PersonalSafetyMessage.decode(psm.encode()) == psm, "\(v.name)")
        let frame = MessageFrame(messageID: MessageFrame.personalSafetyMessage, value: psm.encode()).encode()
        #expect(try MessageFrame.decode(frame).value == psm.encode())
        var vector = Self.bytes(v.psm), mine = psm.encode()
        #expect(vector.count == mine.count, "\(v.name)")
        // Accuracy: the 32 bits after the position, whose end depends on the elevation.
        let start = 144 + (psm.elevation == nil ? 0 : 16)
        for bit in start ..< start + 32 {
            vector[bit >> 3] &= ~(0x80 >> UInt8(bit & 7))
            mine[bit >> 3] &= ~(0x80 >> UInt8(bit & 7))
        }
        #expect(vector == mine, "\(v.name): bit for bit, but for the accuracy")
    }

    @Test func theReaderReadsConstrainedNumbersAtTheirWidths() throws {
        var r = UPERReader([0b1010_0000, 0xFF])
        #expect(try r.integer(in: 0...1) == 1)
        #expect(try r.integer(in: -2...1) == -2 + 1)   // "01": 2 bits
        #expect(try r.integer(in: 5...5) == 5)          // no bits
        #expect(r.position == 3)
        #expect(throws: J2735Error.truncated) { _ = try r.bits(14) }
        var w = UPERWriter()
        w.integer(7_200, in: 0...28_800)
        var back = UPERReader(w.bytes)
        #expect(try back.integer(in: 0...28_800) == 7_200)
    }
}
