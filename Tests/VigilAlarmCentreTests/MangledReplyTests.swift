import Testing
import VigilSystem
@testable import VigilAlarmCentre

/// Random damage to real replies: the parser and splitter must return (refuse or accept) for every
/// input and keep `DC09Fuzz`'s promises. Deterministic: a fixed seed per run.
@Suite struct MangledReplyTests {
    static let seeds: [[UInt8]] = [
        Fixture.bytes(Fixture.capturedAck), Fixture.bytes(Fixture.capturedNak), Fixture.bytes(Fixture.capturedDuh),
        ReplyParsingTests.encryptedAck(), ReplyParsingTests.encryptedAck(key: Fixture.hexKey256),
        Fixture.framed("\"NAK\"0000L0R0A0[]_02:38:32,11-28-2026"),
        Fixture.framed("\"ACK\"0042R12L1#1234[]_02:38:32,11-28-2026"),
    ]
    static let specials: [UInt8] = Array("\n\r\"*[]|#_:,-0AaLR9".utf8) + [0x00, 0x7F, 0x80, 0xFF]

    @Test func twelveThousandMangledRepliesNeverTrapAndKeepThePromises() {
        var random = SplitMix64(seed: 0xDC09)
        var accepted = 0, refused = 0
        for round in 0..<12_000 {
            let seed = Self.seeds[random.below(Self.seeds.count)]
            // Half the rounds damage the whole frame (mostly refused at the CRC); half damage the
            // body and frame it again with a correct CRC and length, to reach the field checks.
            var input: [UInt8]
            if round % 2 == 0 {
                input = mangle(seed, &random)
            } else {
                input = Fixture.framed(mangle(Array(seed.dropFirst(9).dropLast()), &random))
            }
            let broken = DC09Fuzz.brokenPromises(input)
            #expect(broken.isEmpty, "\(broken) for \(input)")
            for expectation in DC09Fuzz.expectations {
                if (try? DC09Reply.parse(input, expecting: expectation)) != nil { accepted += 1 } else { refused += 1 }
            }
        }
        #expect(refused > 0 && accepted > 0)   // both paths were exercised
    }

    @Test func randomBytesNeverTrap() {
        var random = SplitMix64(seed: 9)
        for _ in 0..<2_000 {
            let count = random.below(300)
            var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if random.below(2) == 0, !bytes.isEmpty { bytes[0] = 0x0A; bytes[bytes.count - 1] = 0x0D }
            #expect(DC09Fuzz.brokenPromises(bytes).isEmpty)
        }
    }

    private func mangle(_ original: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = original
        for _ in 0...random.below(4) {
            let at = bytes.isEmpty ? 0 : random.below(bytes.count)
            switch random.below(7) {
            case 0 where !bytes.isEmpty: bytes[at] = UInt8(truncatingIfNeeded: random.next())
            case 1: bytes.insert(Self.specials[random.below(Self.specials.count)], at: min(at, bytes.count))
            case 2 where !bytes.isEmpty: bytes.remove(at: at)
            case 3: bytes = Array(bytes.prefix(at))
            case 4 where !bytes.isEmpty: bytes.insert(contentsOf: bytes[at...].prefix(random.below(20)), at: at)
            case 5:
                let other = Self.seeds[random.below(Self.seeds.count)]
                bytes = Array(bytes.prefix(at)) + other.dropFirst(random.below(other.count))
            case 6 where !bytes.isEmpty: bytes[at] = Self.specials[random.below(Self.specials.count)]
            default: bytes.append(UInt8(truncatingIfNeeded: random.next()))
            }
        }
        return bytes
    }
}

/// VigilSystem's seeded generator, with the bound the mutations need.
extension SplitMix64 {
    /// 0..<bound (bound > 0), or 0 for bound 0.
    mutating func below(_ bound: Int) -> Int { bound <= 0 ? 0 : Int(next() % UInt64(bound)) }
}
