import VigilEvents

/// The latest check-in of each resident.
public struct CheckInBook: Projection {
    public struct Latest: Codable, Equatable, Sendable {
        public var sequence: UInt64
        public var microseconds: UInt64
        public var source: Int
        public var value: Double?
        public var total: UInt64
    }

    public private(set) var residents: [String: Latest] = [:]

    public init() {}

    public mutating func apply(_ input: ProjectionInput) {
        guard case .event(let event) = input, case .checkIn(let checkIn) = event.body else { return }
        let total = (residents[checkIn.resident]?.total ?? 0) + 1
        residents[checkIn.resident] = Latest(sequence: event.sequence, microseconds: event.timeMicroseconds,
                                             source: checkIn.source.rawValue,
                                             // NaN or infinity would make the state unencodable
                                             // (JSON) and unequal to itself; keep finite values only.
                                             value: checkIn.hasValue && checkIn.value.isFinite ? checkIn.value : nil,
                                             total: total)
    }
}
