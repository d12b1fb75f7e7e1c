internal import CVigilLinux
#if canImport(Glibc)
import Glibc
#endif

public final class EventFD: Sendable {
    public let fd: Int32
    public init() throws(SystemError) {
        fd = try check("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
    }
    deinit { _ = Glibc.close(fd) }

    /// Adds one to the counter. Safe from any thread; never blocks (the counter cannot realistically overflow).
    public func signal() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(fd, $0.baseAddress, 8) }
    }

    /// Resets the counter; returns how many signals were pending.
    @discardableResult
    public func drain() -> UInt64 {
        var value: UInt64 = 0
        let n = withUnsafeMutableBytes(of: &value) { Glibc.read(fd, $0.baseAddress, 8) }
        return n == 8 ? value : 0
    }
}

/// A monotonic one-shot timerfd, re-armed by the loop for its next deadline.
public final class TimerFD: Sendable {
    public let fd: Int32
    public init() throws(SystemError) {
        fd = try check("timerfd_create") { timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC)) }
    }
    deinit { _ = Glibc.close(fd) }

    public func arm(afterNanoseconds ns: UInt64) throws(SystemError) {
        _ = try check("timerfd_settime") { cvigil_timerfd_arm_ns(fd, ns) }
    }
    public func disarm() throws(SystemError) {
        _ = try check("timerfd_settime") { cvigil_timerfd_disarm(fd) }
    }
    public func drain() {
        var value: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &value) { Glibc.read(fd, $0.baseAddress, 8) }
    }
}

/// An epoll instance. Tokens are caller-chosen identifiers handed back with readiness.
public final class Epoll: Sendable {
    public let fd: Int32
    public struct Ready: Sendable { public let token: UInt64; public let events: UInt32 }

    public static let readable = UInt32(EPOLLIN.rawValue)
    public static let writable = UInt32(EPOLLOUT.rawValue)
    public static let hangup = UInt32(EPOLLHUP.rawValue) | UInt32(EPOLLERR.rawValue)

    public init() throws(SystemError) {
        fd = try check("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
    }
    deinit { _ = Glibc.close(fd) }

    public func add(_ watched: Int32, token: UInt64, events: UInt32 = Epoll.readable) throws(SystemError) {
        _ = try check("epoll_ctl(ADD)") { cvigil_epoll_ctl(fd, EPOLL_CTL_ADD, watched, events, token) }
    }
    /// Changes what a watched descriptor is watched for (an MQTT socket's output while it has
    /// bytes queued), keeping its token.
    public func modify(_ watched: Int32, token: UInt64, events: UInt32) throws(SystemError) {
        _ = try check("epoll_ctl(MOD)") { cvigil_epoll_ctl(fd, EPOLL_CTL_MOD, watched, events, token) }
    }
    public func remove(_ watched: Int32) throws(SystemError) {
        _ = try check("epoll_ctl(DEL)") { cvigil_epoll_ctl(fd, EPOLL_CTL_DEL, watched, 0, 0) }
    }

    /// Blocks until at least one descriptor is ready (or `timeoutMilliseconds`, -1 = forever).
    public func wait(timeoutMilliseconds: Int32 = -1) throws(SystemError) -> [Ready] {
        var tokens = [UInt64](repeating: 0, count: 64)
        var events = [UInt32](repeating: 0, count: 64)
        let n = try check("epoll_wait") { cvigil_epoll_wait(fd, &tokens, &events, 64, timeoutMilliseconds) }
        return (0..<Int(n)).map { Ready(token: tokens[$0], events: events[$0]) }
    }
}
