import Foundation
import VigilBoard
import VigilCore
import VigilNode
import VigilRadio
import VigilSystem

/// mass_call_notify_s (issue 27): 200 calls for help at once — 136 residents whose "are you OK?"
/// ladders reach their alarm step in the same instant and 64 SOS heard over the air from 16 other
/// boxes (the most the box opens calls for: `CallBook.maximumRemoteOpen`) — until the notifier
/// process has the last call's message on its standard input. The notifier is `cat` writing into a
/// FIFO this process reads (one process per message, as a real notifier). None may be lost: the
/// run fails unless 200 distinct call messages arrive and 200 calls are open.
///
/// The node runs on a manual clock (the ladders' hours pass in one step), its radio is fed the
/// signed frames directly; the measured time is real (monotonic), from the step that makes the
/// calls until the last message is read here.
struct MassCallBench {
    static let metric = "mass_call_notify_s"
    static let residents = 136
    static let heardBoxes = 16
    static let heardPerBox = 4
    static var calls: Int { residents + heardBoxes * heardPerBox }
    static let timeoutNanoseconds: UInt64 = 120_000_000_000
    static let staff = "+34600111222"

    let plan: Plan
    let reporter: Reporter

    func run() throws {
        var seconds: [Double] = [], baselines: [Double] = []
        for run in 0..<plan.runs {
            let s = try withTemporaryDirectory("masscall") { try measure(directory: $0) }
            let b = try withTemporaryDirectory("masscall-baseline") { try spawnOnly(directory: $0) }
            seconds.append(s)
            baselines.append(b)
            progress("mass call run \(run + 1)/\(plan.runs): \(Self.calls) calls notified in \(String(format: "%.2f", s)) s; "
                     + "the same \(Self.calls) notifier runs alone \(String(format: "%.2f", b)) s")
        }
        seconds.sort()
        baselines.sort()
        let median = seconds[seconds.count / 2]
        reporter.emit(MetricLine(metric: Self.metric, value: median, unit: "s", baseline: baselines[baselines.count / 2], context: [
            ("baseline_is", .string("the same notifier run 200 times back to back with a call-sized message, no node: the floor process spawning sets")),
            ("runs", .int(seconds.count)), ("min", .double(seconds.first ?? 0)), ("max", .double(seconds.last ?? 0)),
            ("calls", .int(Self.calls)), ("residents", .int(Self.residents)), ("heard_sos", .int(Self.heardBoxes * Self.heardPerBox)),
            ("notifier", .string("/bin/sh -c 'cat >> FIFO', one process per message, one at a time")),
            ("tree", .string("one staff number at once (default tree)")),
            ("lost", .int(0)),
        ]))
    }

    /// The baseline: the notifier script run `calls` times in a row, each with a message of a
    /// call's size on stdin and waited for, as Deliveries runs it (no node, no log).
    private func spawnOnly(directory: String) throws -> Double {
        let script = directory + "/notify.sh"
        try "#!/bin/sh\nexec cat >> '\(directory)/notified'\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let message = Array(("{\"attempt\":1,\"channel\":\"call\",\"id\":\"call/alert:2000:1/0.0/+34600111222\",\"recipients\":[\"+34600111222\"],"
            + "\"text\":\"SOS alert:2000:1 at Bench Shelter, box 2000 (heard over the air), since 10:00 UTC. Reply TAKE or T1234 to take it.\"}\n").utf8)
        let started = monotonicNanoseconds()
        for _ in 0..<Self.calls {
            let child = try ChildProcess(path: script, arguments: [], input: message)
            var fd = pollfd(fd: child.exitDescriptor, events: Int16(POLLIN), revents: 0)
            while poll(&fd, 1, 10_000) < 0 && errno == EINTR {}
            guard child.reap() == 0 else { throw BenchError("mass call baseline: the notifier failed") }
        }
        return Double(monotonicNanoseconds() &- started) / 1e9
    }

    private func measure(directory: String) throws -> Double {
        let fifo = directory + "/notified"
        guard mkfifo(fifo, 0o600) == 0 else { throw BenchError("mass call: mkfifo \(fifo) failed") }
        let script = directory + "/notify.sh"
        try "#!/bin/sh\nexec cat >> '\(fifo)'\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let data = directory + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let shelterKey = [UInt8](repeating: 0x5A, count: 32)
        try (Hex.encode(shelterKey) + "\n").write(toFile: data + "/shelter.key", atomically: true, encoding: .utf8)
        chmod(data + "/shelter.key", 0o600)

        var configuration = NodeConfiguration()
        configuration.dataDirectory = data
        configuration.sync = .deferredMeta
        configuration.radio = "sim"
        configuration.notifier.command = script
        configuration.projections.ladder.staff = [Self.staff]
        configuration.projections.ladder.siteName = "Bench Shelter"
        configuration.callTestEveryMicroseconds = 0

        let lines = LineStamps()
        let reader = open(fifo, O_RDWR | O_CLOEXEC) // never end of file between notifier runs
        guard reader >= 0 else { throw BenchError("mass call: cannot open \(fifo)") }
        let fifoThread = try OSThread(name: "bench-masscall-fifo") {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            var partial = ""
            while true {
                let n = read(reader, &buffer, buffer.count)
                guard n > 0 else { return }
                let now = monotonicNanoseconds()
                partial += String(decoding: buffer[..<n], as: UTF8.self)
                var complete = partial.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                partial = complete.removeLast()
                lines.add(notifier: complete, at: now)
                if complete.contains(where: { $0.contains("\"bench-stop\"") }) { return }
            }
        }
        defer {
            _ = "{\"id\":\"bench-stop\"}\n".withCString { write(reader, $0, strlen($0)) }
            fifoThread.join()
            close(reader)
        }

        let clock = ManualClock()
        let radio = try InjectedRadio()
        let made: Node
        do {
            made = try Node(configuration: configuration, clock: clock, monotonic: clock, logger: benchNodeLogger(), radio: radio,
                            board: try SimulatedBoard(profile: configuration.board, monotonic: clock))
        } catch {
            throw BenchError("mass call: cannot open a node in \(data): \(error)")
        }
        let ended = WaitableState<String?>(nil)
        let running = try NodeThread(made, name: "vigil-bench-masscall") { error in
            ended.update { $0 = error.map { "failed: \($0)" } ?? "stopped" }
        }
        let node = running.handle
        defer {
            node.requestStop(reason: "benchmark done")
            _ = running.join()
        }
        func settle() throws {
            let done = WaitableState(false)
            node.whenSettled { _ in done.update { $0 = true } }
            guard done.wait(timeoutNanoseconds: Self.timeoutNanoseconds, until: { $0 }) != nil else {
                throw BenchError("mass call: the node did not settle (\(ended.snapshot() ?? "running"))")
            }
        }
        func state<T: Sendable>(_ read: @escaping @Sendable (Node) -> T) throws -> T {
            let box = WaitableState<T?>(nil)
            node.onLoop { n in box.update { $0 = read(n) } }
            guard let value = box.wait(timeoutNanoseconds: Self.timeoutNanoseconds, until: { $0 != nil }) ?? nil else {
                throw BenchError("mass call: the node did not answer")
            }
            return value
        }
        /// Waits until every message made so far has been handed to the notifier and recorded.
        func drain() throws {
            let deadline = monotonicNanoseconds() + Self.timeoutNanoseconds
            while try state({ $0.projections.outbox.pending.contains { $0.channel != .broadcast } }) {
                guard monotonicNanoseconds() < deadline else { throw BenchError("mass call: messages stayed pending") }
                _ = lines.wait(timeoutNanoseconds: 5_000_000) { _ in false }
            }
        }
        try settle()

        // The residents: a minute to the prompt, a minute to the staff's text, a minute to the
        // alarm step. No phone and no contacts: the alarm step's call is their only message to
        // the staff besides the text step's.
        for i in 1...Self.residents {
            var s = ResidentSettings(id: "room-\(i)")
            s.name = "Resident \(i)"
            s.intervalMicroseconds = 60_000_000
            s.confirmMicroseconds = 60_000_000
            s.textToAlarmMicroseconds = 60_000_000
            s.alarmToNotifyMicroseconds = 3_600_000_000
            let answered = WaitableState<NodeReply?>(nil)
            node.submit(.enrolResident(s)) { reply in answered.update { $0 = reply } }
            guard let reply = answered.wait(timeoutNanoseconds: Self.timeoutNanoseconds, until: { $0 != nil }) ?? nil, reply.ok else {
                throw BenchError("mass call: enrolling room-\(i) was refused")
            }
        }
        try settle()
        // Up to just before the alarm step: prompts, then the staff's texts, each second's
        // messages delivered before the next (the notifier's timeout runs on this clock too).
        for _ in 0..<179 {
            clock.advance(byMicroseconds: 1_000_000)
            try settle()
            try drain()
        }
        let before = lines.snapshot().notifier.count

        // The instant: 64 SOS heard from 16 boxes, and the residents' alarm steps come due.
        let now = clock.nowMicroseconds()
        var reports: [AdvertisingReport] = []
        let key = try AlertFrameKey(shelterKey: shelterKey)
        for box in 0..<Self.heardBoxes {
            for counter in 1...Self.heardPerBox {
                let frame = AlertFrame(type: .sos, severity: .critical, hops: 0, origin: UInt32(0x2000 + box), counter: UInt32(counter),
                                       expirySeconds: UInt32(now / 1_000_000 + 3_600))
                let payload = try AdvertisingPayload.vigil(frame: try frame.encode(key: key))
                reports.append(AdvertisingReport(address: 0xC0_00_00_00_20_00 + UInt64(box), addressType: .addressRandom, rssi: -60,
                                                 connectable: false, data: payload.bytes, timeMicroseconds: now))
            }
        }
        let started = monotonicNanoseconds()
        radio.inject(reports)
        clock.advance(byMicroseconds: 2_000_000)
        guard let told = lines.wait(timeoutNanoseconds: Self.timeoutNanoseconds, until: { s in
            s.notifier.dropFirst(before).count(where: { $0.text.contains("\"channel\":\"call\"") }) >= Self.calls
        }) else {
            let got = lines.snapshot().notifier.dropFirst(before).count { $0.text.contains("\"channel\":\"call\"") }
            let open = (try? state { $0.projections.calls.open.count }) ?? -1
            throw BenchError("mass call: \(got) of \(Self.calls) call messages reached the notifier (\(open) calls open)")
        }
        let callLines = told.notifier.dropFirst(before).filter { $0.text.contains("\"channel\":\"call\"") }
        let last = callLines.prefix(Self.calls).map(\.at).max() ?? started
        let ids = Set(callLines.compactMap { line -> String? in
            (try? JSONSerialization.jsonObject(with: Data(line.text.utf8)) as? [String: Any])?["id"] as? String
        })
        let open = try state { $0.projections.calls.open.count }
        guard ids.count == Self.calls, open == Self.calls else {
            throw BenchError("mass call: \(ids.count) distinct call messages, \(open) calls open; expected \(Self.calls) of each")
        }
        try drain()
        return Double(last &- started) / 1e9
    }
}

/// A radio whose reports the benchmark hands over (signed frames "heard" from other boxes).
final class InjectedRadio: RadioAdapter, @unchecked Sendable {
    let name = "injected"
    private let wake: EventFD
    var descriptor: Int32 { wake.fd }
    var reportsState: Bool { false }
    private let queue = LockedValue<[AdvertisingReport]>([])

    init() throws { wake = try EventFD() }

    func inject(_ reports: [AdvertisingReport]) {
        queue.withLock { $0 += reports }
        wake.signal()
    }

    func start() throws {}
    func stop() {}
    func advertise(_ plan: AdvertisingPlan) {}

    func readReady(into outputs: inout [RadioOutput]) throws {
        wake.drain()
        let batch = queue.withLock { q in
            defer { q.removeAll() }
            return q
        }
        outputs += batch.map { .report($0) }
    }
}
