import VigilExposure

/// Test helpers: hex in, and small builders. Test-only, so a bad literal fails the test
/// through `#require` rather than trapping.
enum Hex {
    static func bytes(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < chars.count {
            guard let byte = UInt8(String(decoding: chars[i..<(i + 2)], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
            i += 2
        }
        return out
    }

    static func string(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { b in (b < 16 ? "0" : "") + String(b, radix: 16) }.joined()
    }
}

/// A deterministic generator (SplitMix64) so property-style tests are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A malformed literal in a test's own data.
struct BadTestData: Error, CustomStringConvertible {
    let description: String
}

enum Fixture {
    static func bytes(_ hex: String) throws -> [UInt8] {
        guard let bytes = Hex.bytes(hex) else { throw BadTestData(description: "not hex: \(hex)") }
        return bytes
    }

    static func rpi(_ hex: String) throws -> RollingProximityIdentifier {
        guard let rpi = RollingProximityIdentifier(try bytes(hex)) else { throw BadTestData(description: "not an RPI: \(hex)") }
        return rpi
    }

    static func aem(_ hex: String) throws -> AssociatedEncryptedMetadata {
        guard let aem = AssociatedEncryptedMetadata(try bytes(hex)) else { throw BadTestData(description: "not an AEM: \(hex)") }
        return aem
    }

    static func metadata(_ hex: String) throws -> AssociatedMetadata {
        guard let metadata = AssociatedMetadata(bytes: try bytes(hex)) else { throw BadTestData(description: "not metadata: \(hex)") }
        return metadata
    }
}
