import Crypto

/// Derives every identifier a Temporary Exposure Key advertised — the matching hot path: with
/// millions of published keys, each key costs one HKDF, one AES key setup and `rollingPeriod`
/// (usually 144) AES blocks.
///
/// A deriver owns reusable cipher contexts and buffers: use one per thread (it is not Sendable).
/// The output for each engine is identical; tests hold every engine to the official vectors.
public final class RollingProximityIdentifierDeriver {
    /// How the blocks are computed.
    public enum Engine: String, Sendable, CaseIterable, CustomStringConvertible {
        /// swift-crypto's HKDF, then one `AES.permute` per identifier (a key setup each time):
        /// the straightforward baseline, always available.
        case perIdentifier
        /// OpenSSL libcrypto: HKDF through a pre-keyed HMAC context, then one AES-128-ECB key
        /// setup and all blocks in one EVP call. Available when the package links `COpenSSL`.
        case openSSLBatch

        /// The engines this build can run.
        public static var available: [Engine] {
            #if canImport(COpenSSL)
            return [.perIdentifier, .openSSLBatch]
            #else
            return [.perIdentifier]
            #endif
        }

        /// The fastest engine this build can run (measured: see the benchmark).
        public static var fastest: Engine { available.last ?? .perIdentifier }

        public var description: String { rawValue }
    }

    public let engine: Engine
    #if canImport(COpenSSL)
    private let libcrypto: LibcryptoIdentifierEngine?
    #endif

    /// - Throws: `.cipherFailed` if the engine is not in this build or its library cannot set up.
    public init(engine: Engine = .fastest) throws(ExposureCryptoError) {
        self.engine = engine
        switch engine {
        case .perIdentifier:
            #if canImport(COpenSSL)
            libcrypto = nil
            #endif
        case .openSSLBatch:
            #if canImport(COpenSSL)
            libcrypto = try LibcryptoIdentifierEngine()
            #else
            throw .cipherFailed(operation: "the openSSLBatch engine", detail: "this build does not link OpenSSL (COpenSSL)")
            #endif
        }
    }

    /// Replaces the contents of `identifiers` with the key's identifiers in interval order:
    /// `identifiers[i]` is the RPI of interval `key.rollingStartIntervalNumber + i`. Reusing the
    /// same array across keys avoids allocation.
    public func derive(_ key: TemporaryExposureKey, into identifiers: inout [RollingProximityIdentifier]) throws(ExposureCryptoError) {
        switch engine {
        case .perIdentifier:
            identifiers.removeAll(keepingCapacity: true)
            let identifierKey = ExposureKeySchedule.identifierKey(for: key.keyData)
            for interval in key.intervals {
                identifiers.append(try ExposureKeySchedule.identifier(forInterval: interval, identifierKey: identifierKey))
            }
        case .openSSLBatch:
            #if canImport(COpenSSL)
            guard let libcrypto else { throw .cipherFailed(operation: "the openSSLBatch engine", detail: "not set up") }
            let count = Int(key.rollingPeriod)
            if identifiers.count != count {
                identifiers = Array(repeating: RollingProximityIdentifier(Bytes16(lo: 0, hi: 0)), count: count)
            }
            // Array.withUnsafeMutableBytes is untyped-rethrows: carry the typed error out by hand.
            let failure = identifiers.withUnsafeMutableBytes { out -> ExposureCryptoError? in
                do throws(ExposureCryptoError) {
                    try libcrypto.identifiers(keyData: key.keyData, firstInterval: key.rollingStartIntervalNumber, count: count, into: out)
                    return nil
                } catch {
                    return error
                }
            }
            if let failure { throw failure }
            #else
            throw .cipherFailed(operation: "the openSSLBatch engine", detail: "this build does not link OpenSSL (COpenSSL)")
            #endif
        }
    }

    /// The key's identifiers as a new array (convenience; `derive(_:into:)` reuses storage).
    public func identifiers(of key: TemporaryExposureKey) throws(ExposureCryptoError) -> [RollingProximityIdentifier] {
        var out: [RollingProximityIdentifier] = []
        try derive(key, into: &out)
        return out
    }
}
