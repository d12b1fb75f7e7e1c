/// The time a box can vouch for (issue 29, docs/signed-frames.md "Time"). A Raspberry Pi has no
/// real-time clock: after a power cut without network it boots at the time it last saved, hours
/// or days behind. Frames are judged by this clock's reading, not by the wall clock alone.
///
/// In order of trust:
/// 1. **system**: the kernel says the wall clock is synchronised (NTP): the wall clock is used.
/// 2. **hub**: the hub's time, read over its pinned TLS: kept as an offset from the monotonic clock.
/// 3. **frame**: the signing time of a verified frame whose signer vouched for its own clock. Only
///    moves forward (a replayed old frame cannot set the box back), and a first anchor must not be
///    older than the box's own wall clock by more than the frames' maximum age: a box whose clock
///    is behind (the usual case) adopts a fresh frame's time and still refuses a day-old one.
/// 4. **none**: the wall clock, not vouched for (shown as such; frames from this box say so).
///
/// Pure: the caller passes the wall and monotonic readings, so tests and replay need no clock.
public struct VouchedClock: Sendable, Equatable {
    public enum Source: String, Sendable, Equatable, Codable {
        case system, hub, frame, none
    }

    public struct Reading: Sendable, Equatable {
        public var microseconds: UInt64
        public var source: Source
        public init(microseconds: UInt64, source: Source) {
            self.microseconds = microseconds
            self.source = source
        }
        /// Whether frames signed now may say the signer's clock is vouched for.
        public var vouched: Bool { source != .none }
    }

    struct Anchor: Sendable, Equatable {
        var networkMicroseconds: UInt64
        var monotonicMicroseconds: UInt64
        var source: Source
    }

    public private(set) var systemSynchronised = false
    private(set) var anchor: Anchor?
    /// A first frame anchor older than the wall clock by more than this is not adopted.
    public let maximumFrameAgeMicroseconds: UInt64

    public init(maximumFrameAgeMicroseconds: UInt64 = 3_600_000_000) {
        self.maximumFrameAgeMicroseconds = maximumFrameAgeMicroseconds
    }

    /// The time now, and how the box knows it.
    public func now(wallMicroseconds wall: UInt64, monotonicMicroseconds monotonic: UInt64) -> Reading {
        if systemSynchronised { return Reading(microseconds: wall, source: .system) }
        if let anchor {
            return Reading(microseconds: anchor.networkMicroseconds &+ (monotonic &- min(monotonic, anchor.monotonicMicroseconds)) ,
                           source: anchor.source)
        }
        return Reading(microseconds: wall, source: .none)
    }

    /// The kernel's view of the wall clock changed (synchronised or not).
    public mutating func systemClock(synchronised: Bool) { systemSynchronised = synchronised }

    /// The hub's time, read over its pinned TLS at `monotonic`: replaces any frame anchor.
    public mutating func hubTime(_ microseconds: UInt64, monotonicMicroseconds monotonic: UInt64) {
        anchor = Anchor(networkMicroseconds: microseconds, monotonicMicroseconds: monotonic, source: .hub)
    }

    /// A verified frame whose signer vouched for its clock, signed at `signedAt`. Returns whether
    /// the box's time moved. Ignored while the system clock is synchronised or the hub's time is known.
    @discardableResult
    public mutating func heardVouchedFrame(signedAtMicroseconds signedAt: UInt64, wallMicroseconds wall: UInt64,
                                           monotonicMicroseconds monotonic: UInt64) -> Bool {
        guard !systemSynchronised else { return false }
        let current = now(wallMicroseconds: wall, monotonicMicroseconds: monotonic)
        switch current.source {
        case .system, .hub:
            return false
        case .frame:
            guard signedAt > current.microseconds else { return false }
        case .none:
            guard signedAt &+ maximumFrameAgeMicroseconds >= wall else { return false }
        }
        anchor = Anchor(networkMicroseconds: signedAt, monotonicMicroseconds: monotonic, source: .frame)
        return true
    }
}
