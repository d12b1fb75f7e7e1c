/// A Temporary Exposure Key: 16 random bytes a device uses for one rolling period (normally a
/// day, 144 ten-minute intervals) to derive the identifiers it advertises, and publishes as a
/// diagnosis key after a positive test.
///
/// Invariants, checked by the initialiser: `rollingPeriod` is 1...144 and the key's intervals
/// do not run past `UInt32.max`.
public struct TemporaryExposureKey: Hashable, Sendable, CustomStringConvertible {
    /// The 16 key bytes (`keyData`).
    public let keyData: Bytes16
    /// The ENIntervalNumber of the key's first interval.
    public let rollingStartIntervalNumber: UInt32
    /// How many intervals the key was used for: 1...144.
    public let rollingPeriod: UInt32

    /// - Throws: `.invalidRollingPeriod` unless `rollingPeriod` is 1...144 and the intervals fit.
    public init(keyData: Bytes16, rollingStartIntervalNumber: UInt32, rollingPeriod: UInt32 = Exposure.intervalsPerDay) throws(ExposureCryptoError) {
        guard (1...Exposure.intervalsPerDay).contains(rollingPeriod),
              rollingStartIntervalNumber <= UInt32.max - rollingPeriod
        else { throw .invalidRollingPeriod(rollingPeriod) }
        self.keyData = keyData
        self.rollingStartIntervalNumber = rollingStartIntervalNumber
        self.rollingPeriod = rollingPeriod
    }

    /// - Throws: `.wrongLength` unless `keyData` is exactly 16 bytes; `.invalidRollingPeriod`.
    public init(keyData: some Collection<UInt8>, rollingStartIntervalNumber: UInt32, rollingPeriod: UInt32 = Exposure.intervalsPerDay) throws(ExposureCryptoError) {
        guard let key = Bytes16(keyData) else {
            throw .wrongLength(what: "Temporary Exposure Key", expected: Bytes16.count, actual: keyData.count)
        }
        try self.init(keyData: key, rollingStartIntervalNumber: rollingStartIntervalNumber, rollingPeriod: rollingPeriod)
    }

    /// A fresh random key for the day containing `interval`, starting at that day's first
    /// interval as GAEN devices do (so a key published later covers the whole day).
    /// The randomness comes from the caller (this module reads no system source): the node passes
    /// its secure generator, tests a seeded one.
    /// Misuse: `rng` must be cryptographically secure outside tests — a predictable key makes
    /// every identifier it advertises linkable.
    public static func generate(forDayContaining interval: UInt32, using rng: inout some RandomNumberGenerator) -> TemporaryExposureKey {
        let start = interval - interval % Exposure.intervalsPerDay
        let key = Bytes16(lo: rng.next(), hi: rng.next())
        // Only the last, partial day of the UInt32 range (year ~83,700) lacks 144 intervals;
        // clamp there rather than fail. UInt32.max is not a day start, so the period is ≥ 1.
        let period = min(Exposure.intervalsPerDay, UInt32.max - start)
        return TemporaryExposureKey(unchecked: key, start: start, period: period)
    }

    private init(unchecked key: Bytes16, start: UInt32, period: UInt32) {
        keyData = key
        rollingStartIntervalNumber = start
        rollingPeriod = period
    }

    /// The intervals the key was valid for.
    public var intervals: Range<UInt32> { rollingStartIntervalNumber ..< rollingStartIntervalNumber + rollingPeriod }

    /// Whether `interval` is one of the key's intervals.
    public func covers(interval: UInt32) -> Bool { intervals.contains(interval) }

    public var description: String {
        "TEK(\(keyData.hex), start \(rollingStartIntervalNumber), period \(rollingPeriod))"
    }
}
