/// The time a box can vouch for (issue 29, docs/signed-frames.md "Time"). A Raspberry Pi has no
/// real-time clock: after a power cut without network it boots at the time it last saved, hours
/// or days behind. Frames are judged by this clock's reading, not by the wall clock alone.
///
/// In order of trust:
/// 1. **system**: the kernel says the wall clock is synchronised (NTP): the wall clock is used.
/// 2. **hub**: the hub's time, read over its pinned TLS: kept as an offset from the monotonic clock.
/// 3. **frame**: the signing times of accepted frames whose signers vouched for their clocks, once
///    **two different signers agree** (within `agreementMicroseconds`): one stolen box cannot move
///    a box's time. Only moves forward (replays cannot set a box back), and never to a time older
///    than the box's own wall clock by more than the frames' maximum age.
/// 4. **none**: the wall clock, not vouched for.
///
/// Only system and hub time are *vouched*: frames signed by a box whose time came from other
/// frames say the signer's clock is not vouched, so a time learned on the air does not spread.
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
        /// Whether frames signed now may say the signer's clock is vouched for, and frames heard
        /// are judged strictly (both ends of the window): system or hub time.
        public var vouched: Bool { source == .system || source == .hub }
    }

    struct Anchor: Sendable, Equatable {
        var networkMicroseconds: UInt64
        var monotonicMicroseconds: UInt64
        var source: Source
    }

    public private(set) var systemSynchronised = false
    private(set) var anchor: Anchor?
    /// The last vouched frame heard, waiting for another signer to agree.
    private var candidate: Candidate?
    struct Candidate: Sendable, Equatable {
        var signer: UInt32
        var signedAt: UInt64
        var monotonic: UInt64
    }
    /// A frame anchor older than the wall clock by more than this is not adopted.
    public let maximumFrameAgeMicroseconds: UInt64
    /// How close two signers' times must be to count as agreeing.
    public let agreementMicroseconds: UInt64

    public init(maximumFrameAgeMicroseconds: UInt64 = 3_600_000_000, agreementMicroseconds: UInt64 = 300_000_000) {
        self.maximumFrameAgeMicroseconds = maximumFrameAgeMicroseconds
        self.agreementMicroseconds = agreementMicroseconds
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

    /// An accepted frame whose signer (`signer`, its node id) vouched for its clock, signed at
    /// `signedAt`. Returns whether the box's time moved: only when another signer's frame heard
    /// before agrees within `agreementMicroseconds` (the earlier of the two times is taken).
    /// Ignored while the system clock is synchronised or the hub's time is known.
    @discardableResult
    public mutating func heardVouchedFrame(signer: UInt32, signedAtMicroseconds signedAt: UInt64, wallMicroseconds wall: UInt64,
                                           monotonicMicroseconds monotonic: UInt64) -> Bool {
        let current = now(wallMicroseconds: wall, monotonicMicroseconds: monotonic)
        guard current.source == .none || current.source == .frame else { return false }
        defer { candidate = Candidate(signer: signer, signedAt: signedAt, monotonic: monotonic) }
        guard let other = candidate, other.signer != signer else { return false }
        // The other signer's time, run on to now by the monotonic clock.
        let otherNow = other.signedAt &+ (monotonic &- min(monotonic, other.monotonic))
        let gap = otherNow > signedAt ? otherNow - signedAt : signedAt - otherNow
        guard gap <= agreementMicroseconds else { return false }
        let agreed = min(otherNow, signedAt)
        guard agreed &+ maximumFrameAgeMicroseconds >= wall else { return false }
        if current.source == .frame { guard agreed > current.microseconds else { return false } }
        anchor = Anchor(networkMicroseconds: agreed, monotonicMicroseconds: monotonic, source: .frame)
        return true
    }
}
