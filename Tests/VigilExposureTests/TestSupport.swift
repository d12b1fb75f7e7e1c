import VigilExposure
import VigilSystem

// Hex text in and out: the one codec, VigilHex.Hex (re-exported by VigilSystem, which these
// tests also use for SplitMix64); decode gives nil for a bad literal, which tests
// turn into a failure with #require.

/// A malformed literal in a test's own data.
struct BadTestData: Error, CustomStringConvertible {
    let description: String
}

enum Fixture {
    static func bytes(_ hex: String) throws -> [UInt8] {
        guard let bytes = Hex.decode(hex) else { throw BadTestData(description: "not hex: \(hex)") }
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
