/// Errors of the GAEN key schedule and its cipher engines.
public enum ExposureCryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A byte string had the wrong length for what it was meant to be (a TEK, an RPI, ...).
    case wrongLength(what: String, expected: Int, actual: Int)
    /// A rolling period outside 1...144 or a key whose intervals would run past UInt32.max.
    case invalidRollingPeriod(UInt32)
    /// The cipher library refused an operation that, given valid lengths, should not fail.
    case cipherFailed(operation: String, detail: String)

    public var description: String {
        switch self {
        case let .wrongLength(what, expected, actual):
            return "\(what) must be \(expected) bytes, got \(actual)"
        case let .invalidRollingPeriod(period):
            return "rolling period \(period) is outside 1...\(Exposure.intervalsPerDay) intervals"
        case let .cipherFailed(operation, detail):
            return "\(operation) failed: \(detail)"
        }
    }
}
