import VigilSystem

/// Watches descriptors on the loop: what a server the loop drives needs of it (`ControlServer`),
/// and part of every component's `NodeContext`. Loop-confined.
protocol DescriptorWatch: AnyObject {
    /// Watches `fd` for `events`; `handler` runs on the loop. False when the loop cannot (the
    /// failure is reported and the node stops); the caller then closes `fd`.
    func watch(_ fd: Int32, _ what: String, events: UInt32, handler: @escaping EventLoop.Handler) -> Bool
    func unwatch(_ fd: Int32, _ what: String)
}

/// The node's one loop: an epoll set, a handler per watched descriptor, an eventfd that wakes it
/// from other threads, and the work those threads hand over.
///
/// Only the loop thread runs handlers, so the state they touch needs no locks; `owner` checks
/// that in debug builds. Other threads talk to the loop through `perform` (a closure run on the
/// loop) and `wake()`, never by touching its state.
final class EventLoop: DescriptorWatch, @unchecked Sendable {
    typealias Handler = (_ events: UInt32) -> Void

    private let epoll: Epoll
    private let wakeFD: EventFD
    private var handlers: [UInt64: Handler] = [:]
    private var tokens: [Int32: UInt64] = [:]
    private var nextToken: UInt64 = 16
    private let requests = LockedValue<[@Sendable () -> Void]>([])
    let owner = ThreadOwner()
    /// Called with every epoll failure: the node's failure path.
    private let onFailure: (String, SystemError) -> Void

    init(onFailure: @escaping (String, SystemError) -> Void) throws(SystemError) {
        epoll = try Epoll()
        wakeFD = try EventFD()
        self.onFailure = onFailure
        // Token 1 is the wake-up; handlers run in `turn`.
        try epoll.add(wakeFD.fd, token: 1)
    }

    /// Wakes the loop (from any thread); it runs the handed-over work and looks at its timers.
    func wake() { wakeFD.signal() }

    /// Runs `work` on the loop thread, soon. Safe from any thread.
    func perform(_ work: @escaping @Sendable () -> Void) {
        requests.withLock { $0.append(work) }
        wakeFD.signal()
    }

    /// Watches `fd` for input (and hang-ups), or for `events`; `handler` runs on the loop with
    /// epoll's event bits. A failure is reported to the failure path and returns false.
    @discardableResult
    func watch(_ fd: Int32, _ what: String, events: UInt32 = Epoll.readable, handler: @escaping Handler) -> Bool {
        owner.check(what)
        let token = nextToken
        nextToken += 1
        do {
            try epoll.add(fd, token: token, events: events)
        } catch {
            onFailure("cannot watch \(what)", error)
            return false
        }
        handlers[token] = handler
        tokens[fd] = token
        return true
    }

    /// Stops watching `fd`. A descriptor the kernel already dropped from the set (closed, or a
    /// hung-up device) is not a failure; anything else is.
    func unwatch(_ fd: Int32, _ what: String) {
        owner.check(what)
        guard let token = tokens.removeValue(forKey: fd) else { return }
        handlers[token] = nil
        do {
            try epoll.remove(fd)
        } catch where error.errno == .noEntry || error.errno == .badDescriptor {
            return
        } catch {
            onFailure("cannot stop watching \(what)", error)
        }
    }

    /// Changes the events `fd` is watched for (its handler stays). A failure goes to the
    /// failure path and returns false.
    @discardableResult
    func change(_ fd: Int32, _ what: String, events: UInt32) -> Bool {
        owner.check(what)
        guard let token = tokens[fd] else { return false }
        do {
            try epoll.modify(fd, token: token, events: events)
            return true
        } catch {
            onFailure("cannot change what \(what) is watched for", error)
            return false
        }
    }

    func isWatching(_ fd: Int32) -> Bool { tokens[fd] != nil }

    /// Waits for descriptors and runs their handlers, then the handed-over work. Returns false
    /// when epoll itself failed (the failure path has been told).
    func turn() -> Bool {
        owner.check()
        let ready: [Epoll.Ready]
        do {
            ready = try epoll.wait()
        } catch {
            onFailure("epoll_wait failed", error)
            return false
        }
        var woken = false
        for event in ready {
            if event.token == 1 {
                woken = true
                continue
            }
            // A handler may unwatch others in the same batch: look each up when its turn comes.
            handlers[event.token]?(event.events)
        }
        if woken {
            _ = wakeFD.drain()
            let work = requests.withLock { r in
                let taken = r
                r.removeAll()
                return taken
            }
            for w in work { w() }
        }
        return true
    }
}

/// Carries failures reported by the loop and the scheduler to the node, which exists only after
/// they do. Both report on the loop thread.
final class FailureRelay: @unchecked Sendable {
    weak var target: Node?
    func report(_ what: String, _ error: SystemError) {
        target?.fail(.system(SystemError(what + ": " + error.operation, error.subject, errno: error.errno)))
    }
}
