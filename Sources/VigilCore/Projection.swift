import VigilEvents

/// What a projection consumes: a decoded event, or the fact that one could not be decoded
/// (so health counters can show it; the other projections ignore it).
public enum ProjectionInput: Sendable {
    case event(Event)
    case undecodable(EventDecodingError)
}

/// A projection is a pure reducer: `apply` is a function of (state, input) only — no clock, no
/// I/O, no globals — so replaying the log always rebuilds the same state, byte for byte.
public protocol Projection: Codable, Equatable, Sendable {
    mutating func apply(_ input: ProjectionInput)
}

extension Projection {
    /// The reducer in its functional form: (State, Input) -> State.
    public func applying(_ input: ProjectionInput) -> Self {
        var next = self
        next.apply(input)
        return next
    }
}
