import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOSSL
import VigilEvents
import VigilHub
import VigilHubProtocol
import VigilNode

/// The simulated boxes: each one follows the feed's stream from its cursor, again after the hub
/// ends one, and hands box A's alert items to the durable sink.
final class FeedPollers: @unchecked Sendable {
    let clients: [HTTPClient]
    let url: String
    let sink: DurableArrivals
    private let lock = NSLock()
    private var tasks: [Task<Void, Never>] = []
    private var failed = 0
    private var opened = 0

    init(clients: [HTTPClient], url: String, sink: DurableArrivals) {
        self.clients = clients
        self.url = url
        self.sink = sink
    }

    /// Streams opened so far (each box's first, then one each time the hub ends one).
    var streamsOpened: Int { lock.withLock { opened } }

    var failures: Int {
        lock.lock()
        defer { lock.unlock() }
        return failed
    }

    func start(_ boxes: [HubBench.EnrolledBox], after: UInt64, wave: Int) async throws {
        var index = 0
        while index < boxes.count {
            let slice = Array(boxes[index..<min(index + wave, boxes.count)].enumerated().map { (index + $0.offset, $0.element) })
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (i, box) in slice {
                    group.addTask {
                        guard try await self.read(box, index: i, after: after, wait: 0) != nil else {
                            throw BenchError("hub fanout: simulated box \(i)'s first read failed")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let started = slice.map { i, box in Task.detached { await self.poll(box, index: i, after: after) } }
            lock.withLock { tasks += started }
            index += wave
        }
    }

    func stop() {
        lock.lock()
        let all = tasks
        tasks = []
        lock.unlock()
        for t in all { t.cancel() }
    }

    private func poll(_ box: HubBench.EnrolledBox, index: Int, after start: UInt64) async {
        var cursor = start
        while !Task.isCancelled {
            do {
                if let next = try await follow(box, index: index, after: cursor) { cursor = next; continue }
            } catch {}
            if Task.isCancelled { return }
            lock.withLock { failed += 1 }
        }
    }

    /// One feed stream, as a box follows it (`HubClient.followFeed`), until the hub ends it; box
    /// A's items go to the sink. The new cursor, nil when it failed.
    private func follow(_ box: HubBench.EnrolledBox, index: Int, after start: UInt64) async throws -> UInt64? {
        var request = HTTPClientRequest(url: url + "/api/v1/boxes/\(NodeIDText.format(box.node))/feed?after=\(start)&wait=25&stream=1")
        request.headers.add(name: "authorization", value: box.credential.headerValue)
        lock.withLock { opened += 1 }
        let response = try await clients[index / HubFanoutBench.boxesPerClient % clients.count].execute(request, timeout: .minutes(5))
        guard response.status == .ok else { return nil }
        var cursor = start
        var lines = FeedLines()
        for try await piece in response.body {
            for line in try lines.take(piece.readableBytesView) {
                let answer = try JSONDecoder().decode(FeedAnswer.self, from: Data(line))
                arrived(answer, box: index)
                cursor = answer.cursor
            }
        }
        return cursor
    }

    private func arrived(_ answer: FeedAnswer, box index: Int) {
        for item in answer.items {
            guard let payload = Data(base64Encoded: item.payload),
                  let event = try? EventCodec.decode(kind: item.kind, payload: Array(payload), sequence: item.position) else { continue }
            switch event {
            case .alertRaised(let r): sink.arrived(box: index, alert: r.id, phase: .raised)
            case .alertTaken(let t): sink.arrived(box: index, alert: t.id, phase: .taken)
            default: break
            }
        }
    }

    /// One read of the feed; box A's items go to the sink. The new cursor, nil when it failed.
    private func read(_ box: HubBench.EnrolledBox, index: Int, after cursor: UInt64, wait: Int) async throws -> UInt64? {
        var request = HTTPClientRequest(url: url + "/api/v1/boxes/\(NodeIDText.format(box.node))/feed?after=\(cursor)&wait=\(wait)")
        request.headers.add(name: "authorization", value: box.credential.headerValue)
        let response = try await clients[index / HubFanoutBench.boxesPerClient % clients.count].execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 4 << 20)
        guard response.status == .ok else { return nil }
        let answer = try JSONDecoder().decode(FeedAnswer.self, from: Data(body.readableBytesView))
        arrived(answer, box: index)
        return answer.cursor
    }
}

/// The simulated boxes' storage: arrivals of the expected item are written to one file by one
/// thread and synced in groups; an arrival counts (and is timed) when its sync has returned.
final class DurableArrivals: @unchecked Sendable {
    enum Phase: UInt8 { case raised = 1, taken = 2 }

    private let fd: Int32
    private let boxes: Int
    private let condition = NSCondition()
    private var queue: [(box: Int, phase: Phase, alert: AlertID)] = []
    private var closing = false
    /// The item that counts: a raise of any new alert from `origin`, or the taking of `alert`.
    private var expected: (origin: UInt64, alert: AlertID?, phase: Phase)?
    private var durableAt: [UInt64]
    private var done = 0
    private var finished: OneShot<Void>?
    private var syncCount = 0
    /// Why arrivals could not be made durable, if they could not.
    private(set) var failure: String?
    /// Which alert each box's counted arrival was of.
    private var arrivedAlert: [AlertID?]
    private let writerEnded = DispatchSemaphore(value: 0)

    init(path: String, boxes: Int) throws {
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BenchError("hub fanout: cannot open \(path): errno \(errno)") }
        self.boxes = boxes
        durableAt = [UInt64](repeating: 0, count: boxes)
        arrivedAlert = [AlertID?](repeating: nil, count: boxes)
        let thread = Thread { [self] in
            write()
            writerEnded.signal()
        }
        thread.name = "fanout-arrivals"
        thread.start()
    }

    var syncs: Int {
        condition.lock()
        defer { condition.unlock() }
        return syncCount
    }

    /// From now on, arrivals of this phase from `origin` (of `alert` when given) count; done when
    /// every box has one. Set before the raise, which goes to the hub before its id is known here.
    func expect(origin: UInt64, alert: AlertID? = nil, phase: Phase) -> OneShot<Void> {
        let shot = OneShot<Void>()
        condition.lock()
        expected = (origin, alert, phase)
        durableAt = [UInt64](repeating: 0, count: boxes)
        arrivedAlert = [AlertID?](repeating: nil, count: boxes)
        done = 0
        finished = shot
        condition.unlock()
        return shot
    }

    func arrived(box: Int, alert: AlertID, phase: Phase) {
        condition.lock()
        defer { condition.unlock() }
        guard let expected, expected.origin == alert.origin, expected.alert == nil || expected.alert == alert, expected.phase == phase,
              box < boxes, durableAt[box] == 0 else { return }
        queue.append((box, phase, alert))
        condition.signal()
    }

    func count(_ phase: Phase) -> Int {
        condition.lock()
        defer { condition.unlock() }
        return expected?.phase == phase ? done : 0
    }

    /// Each box's time from `start` until its arrival was durable; only arrivals of `alert`
    /// (a raise is expected before its id is known: another alert of box A would count).
    func latencies(_ phase: Phase, of alert: AlertID, since start: UInt64) throws -> [UInt64] {
        condition.lock()
        defer { condition.unlock() }
        if let failure { throw BenchError("hub fanout: \(failure)") }
        guard expected?.phase == phase else { return [] }
        guard arrivedAlert.allSatisfy({ $0 == alert }) else {
            throw BenchError("hub fanout: some boxes counted another alert of box A than \(alert)")
        }
        return durableAt.filter { $0 > 0 }.map { $0 > start ? $0 - start : 0 }
    }

    func close() {
        condition.lock()
        closing = true
        condition.signal()
        condition.unlock()
        writerEnded.wait()
        _ = Glibc.close(fd)
    }

    private func write() {
        while true {
            condition.lock()
            while queue.isEmpty && !closing { condition.wait() }
            if queue.isEmpty && closing { condition.unlock(); return }
            let batch = queue
            queue = []
            condition.unlock()
            // A record a box keeps: its index, the phase, as a box's log entry would be.
            var bytes: [UInt8] = []
            bytes.reserveCapacity(batch.count * 5)
            for (box, phase, _) in batch {
                withUnsafeBytes(of: UInt32(box).littleEndian) { bytes += $0 }
                bytes.append(phase.rawValue)
            }
            var written = 0
            while written < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                written += n
            }
            // An arrival that did not reach the disk is not durable: the run fails.
            let synced = written == bytes.count && fdatasync(fd) == 0
            if !synced {
                condition.lock()
                failure = "the arrivals file could not be written or synced: errno \(errno)"
                condition.unlock()
                continue
            }
            let now = monotonicNanoseconds()
            condition.lock()
            syncCount += 1
            var shot: OneShot<Void>?
            for (box, phase, alert) in batch where expected?.phase == phase && durableAt[box] == 0 {
                durableAt[box] = now
                arrivedAlert[box] = alert
                done += 1
                if done == boxes { shot = finished }
            }
            condition.unlock()
            shot?.give(())
        }
    }
}
