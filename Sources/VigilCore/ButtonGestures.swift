/// Turns raw button edges (kernel timestamps, bounces and all) into gestures.
///
/// Debounce is leading-edge: the first edge is taken at once (no added latency), edges in the
/// following `debounce` window are bounce and only update the raw level, and when the window
/// ends a raw level that differs from the taken one is taken then. A press held for
/// `longPress` fires `.longPress` while still held (so SOS does not wait for the release);
/// a release before that is a `.shortPress`. Held on to `cancelHold`, the same press fires
/// `.cancelHold` too (still held): the deliberate gesture that cancels this box's own SOS.
///
/// Pure: time comes in with the edges and with `tick(at:)`, which the loop calls at `nextTick`.
public struct ButtonGestureDecoder: Sendable {
    public struct Settings: Sendable, Equatable {
        public var debounceNanoseconds: UInt64 = 30_000_000
        public var longPressNanoseconds: UInt64 = 2_000_000_000
        /// A shorter press is a glitch (electrical noise, a brush of the hand), not a short
        /// press: noise must never silence the alarm of a resident who cannot answer.
        public var minimumPressNanoseconds: UInt64 = 50_000_000
        /// Held this long (from the press, so longer than `longPressNanoseconds`), a press fires
        /// `.cancelHold`. 0 = never.
        public var cancelHoldNanoseconds: UInt64 = 8_000_000_000
        public init() {}
    }

    public enum Gesture: Equatable, Sendable {
        case pressed(atNanoseconds: UInt64)
        case longPress(atNanoseconds: UInt64)
        /// Still held at `cancelHold`, after the long press.
        case cancelHold(atNanoseconds: UInt64)
        case shortPress(heldNanoseconds: UInt64)
        /// Released after a long press.
        case released(heldNanoseconds: UInt64)
        /// Released too soon to be a press at all.
        case glitch(heldNanoseconds: UInt64)
    }

    public let settings: Settings
    public private(set) var pressed = false
    private var rawPressed = false
    private var pressedAt: UInt64 = 0
    private var lockoutUntil: UInt64 = 0
    private var longFired = false
    private var cancelFired = false

    /// When a press in progress reaches `cancelHold`, if it will.
    private var cancelThreshold: UInt64? {
        guard pressed, !cancelFired, settings.cancelHoldNanoseconds > 0 else { return nil }
        return pressedAt &+ max(settings.cancelHoldNanoseconds, settings.longPressNanoseconds)
    }

    public init(settings: Settings = Settings()) { self.settings = settings }

    public mutating func edge(pressed level: Bool, atNanoseconds t: UInt64) -> [Gesture] {
        // Whatever fell due before this edge happened first, even if the loop was too busy to
        // tick: a release stamped after the threshold ends a long press, not a short one.
        var out = advance(to: t)
        rawPressed = level
        if t >= lockoutUntil && level != pressed { out += take(level, at: t) }
        return out
    }

    public mutating func tick(atNanoseconds t: UInt64) -> [Gesture] {
        advance(to: t)
    }

    /// Applies, in time order, the debounce decisions and the long-press threshold due by `t`.
    private mutating func advance(to t: UInt64) -> [Gesture] {
        var out: [Gesture] = []
        while true {
            let settle: UInt64? = rawPressed != pressed ? lockoutUntil : nil
            let long: UInt64? = pressed && !longFired ? pressedAt &+ settings.longPressNanoseconds : nil
            let cancel: UInt64? = longFired ? cancelThreshold : nil
            if let at = settle, at <= t, long.map({ at <= $0 }) ?? true, cancel.map({ at <= $0 }) ?? true {
                out += take(rawPressed, at: at)
            } else if let at = long, at <= t {
                longFired = true
                out.append(.longPress(atNanoseconds: at))
            } else if let at = cancel, at <= t {
                cancelFired = true
                out.append(.cancelHold(atNanoseconds: at))
            } else {
                return out
            }
        }
    }

    /// When the decoder needs `tick`: the end of a debounce window with a pending change, or the
    /// long-press or cancel-hold threshold of a press in progress.
    public var nextTick: UInt64? {
        var next: UInt64?
        if rawPressed != pressed { next = lockoutUntil }
        if pressed && !longFired {
            let threshold = pressedAt &+ settings.longPressNanoseconds
            next = next.map { min($0, threshold) } ?? threshold
        } else if let threshold = cancelThreshold {
            next = next.map { min($0, threshold) } ?? threshold
        }
        return next
    }

    private mutating func take(_ level: Bool, at t: UInt64) -> [Gesture] {
        pressed = level
        lockoutUntil = t &+ settings.debounceNanoseconds
        if level {
            pressedAt = t
            longFired = false
            cancelFired = false
            return [.pressed(atNanoseconds: t)]
        }
        let held = t &- pressedAt
        if longFired { return [.released(heldNanoseconds: held)] }
        return [held < settings.minimumPressNanoseconds ? .glitch(heldNanoseconds: held) : .shortPress(heldNanoseconds: held)]
    }
}
