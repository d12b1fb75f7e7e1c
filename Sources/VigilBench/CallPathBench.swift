import Foundation
import VigilAlarmCentre
import VigilBoard
import VigilCore
import VigilLog
import VigilNode
import VigilSystem
import VigilTestSupport

/// sos_to_notifier_ms and sos_to_arc_ack_ms (issue 27): a simulated press on a real, running node
/// with the default call tree (one staff number, then the alarm centre) until
/// - red is on (the same figure as sos_latency_p99_ms, here beside the others);
/// - the notifier process has the call's message on its standard input: the notifier is `cat`
///   writing into a FIFO this process reads, stamped when the line arrives;
/// - the alarm centre has acknowledged the call's Contact ID report: pysiaalarm 3.2.2
///   (scripts/sia-centre, encrypted) on loopback, stamped when its "ACK" line arrives here (the
///   node reads the same ACK from loopback at the same moment).
///
/// Every latency counts from the moment the press became long (its edge + the long press), as
/// sos_latency_p99_ms does. Each cycle then cancels the SOS (the staff's CANCELLED message and the
/// centre's restore) and waits for both before the next press, so cycles do not queue.
struct CallPathBench {
    static let notifierMetric = "sos_to_notifier_ms"
    static let arcMetric = "sos_to_arc_ack_ms"
    static let metrics = [notifierMetric, arcMetric]
    static let key = "0123456789ABCDEF"
    static let waitTimeoutNanoseconds: UInt64 = 20_000_000_000

    let plan: Plan
    let options: Options
    let reporter: Reporter

    var presses: Int { options.quick ? 30 : 100 }

    func run() throws {
        var red: [UInt64] = [], notifier: [UInt64] = [], ack: [UInt64] = []
        let runs = max(1, min(plan.runs, presses))
        for run in 0..<runs {
            let count = presses / runs + (run < presses % runs ? 1 : 0)
            let result = try withTemporaryDirectory("callpath") { try measure(directory: $0, presses: count) }
            red += result.red
            notifier += result.notifier
            ack += result.ack
            progress("call path run \(run + 1)/\(runs): \(count) presses, notifier p50 \(p(result.notifier, 50)) ms p99 \(p(result.notifier, 99)) ms, "
                     + "ACK p50 \(p(result.ack, 50)) ms p99 \(p(result.ack, 99)) ms")
        }
        red.sort()
        notifier.sort()
        ack.sort()
        let common: [(String, JSONValue)] = [
            ("count", .int(red.count)), ("runs", .int(runs)),
            ("red_on_p50", .optional(percentile(red, 50).map(milliseconds))),
            ("red_on_p99", .optional(percentile(red, 99).map(milliseconds))),
            ("latency", .string("event_monotonic - (press_edge_ts + long_press)")),
            ("tree", .string("staff (one number) at once, then arc at once (default tree)")),
            ("sync", .string(SyncMode.deferredMeta.rawValue)),
        ]
        if reporter.wants(Self.notifierMetric), let p99 = percentile(notifier, 99) {
            reporter.emit(MetricLine(metric: Self.notifierMetric, value: milliseconds(p99), unit: "ms", context: [
                ("p50", .optional(percentile(notifier, 50).map(milliseconds))), ("p99", .double(milliseconds(p99))),
                ("max", .optional(notifier.last.map(milliseconds))),
                ("notifier", .string("/bin/sh -c 'cat >> FIFO' (the message on its stdin, read here from the FIFO)")),
                ("target_p99", .int(1_000)),
            ] + common))
        }
        if reporter.wants(Self.arcMetric), let p99 = percentile(ack, 99) {
            reporter.emit(MetricLine(metric: Self.arcMetric, value: milliseconds(p99), unit: "ms", context: [
                ("p50", .optional(percentile(ack, 50).map(milliseconds))), ("p99", .double(milliseconds(p99))),
                ("max", .optional(ack.last.map(milliseconds))),
                ("centre", .string("pysiaalarm 3.2.2 on loopback, AES-128, Contact ID 1120; its ACK line read here")),
                ("target_p99", .int(2_000)),
            ] + common))
        }
    }

    private func p(_ values: [UInt64], _ q: Double) -> Double { percentile(values.sorted(), q).map(milliseconds) ?? 0 }

    struct RunResult {
        var red: [UInt64] = []
        var notifier: [UInt64] = []
        var ack: [UInt64] = []
    }

    private func measure(directory: String, presses: Int) throws -> RunResult {
        let centre: ReceiverProcess
        do {
            centre = try ReceiverProcess(account: "1234", key: Self.key)
        } catch {
            throw BenchError("call path: the alarm centre did not start (scripts/setup installs pysiaalarm): \(error)")
        }
        let fifo = directory + "/notified"
        guard mkfifo(fifo, 0o600) == 0 else { throw BenchError("call path: mkfifo \(fifo) failed") }
        let script = directory + "/notify.sh"
        try "#!/bin/sh\nexec cat >> '\(fifo)'\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)

        var configuration = SOSLatencyBench.pressConfiguration(directory: directory + "/data")
        configuration.notifier.command = script
        configuration.projections.ladder.staff = ["+34600111222"]
        configuration.projections.ladder.siteName = "Bench Shelter"
        var arc = AlarmCentreSettings(receivers: [.init(address: "127.0.0.1", port: UInt16(centre.port))],
                                      identity: try DC09Identity(account: "1234", receiver: "1", line: "1"))
        arc.key = try DC09Key(bytes: Array(Self.key.utf8))
        arc.testEveryMicroseconds = 0
        configuration.alarmCentre = arc

        let lines = LineStamps()
        // O_RDWR: the FIFO never reports end of file between notifier runs.
        let reader = open(fifo, O_RDWR | O_CLOEXEC)
        guard reader >= 0 else { throw BenchError("call path: cannot open \(fifo)") }
        let fifoThread = try OSThread(name: "bench-notified") {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = read(reader, &buffer, buffer.count)
                guard n > 0 else { return }
                let now = monotonicNanoseconds()
                let text = String(decoding: buffer[..<n], as: UTF8.self)
                lines.add(notifier: text.split(separator: "\n").map(String.init), at: now)
                if text.contains("\"bench-stop\"") { return }
            }
        }
        // Only this thread reads the centre's output until it has stopped.
        let output = CentreOutput(centre)
        let centreThread = try OSThread(name: "bench-centre") {
            while let line = output.centre.nextLine(timeout: 60) {
                if let frame = line["frame"] as? [String: Any], frame["response"] as? String == "ACK" { lines.add(ack: monotonicNanoseconds()) }
                if line["stopped"] != nil { return }
            }
        }

        let probe = SOSProbe()
        let running = try SOSLatencyBench.startProbedNode(configuration, probe: probe, thread: "vigil-bench-callpath")
        let node = running.handle
        var result = RunResult()
        var failure: (any Error)?
        do {
            for cycle in 0..<presses {
                let before = probe.snapshot()
                let seen = lines.snapshot()
                press(node, probe)
                guard let raised = probe.wait(timeoutNanoseconds: Self.waitTimeoutNanoseconds, until: {
                    $0.onEdges.count > before.onEdges.count && $0.pressEdges.count > before.pressEdges.count && $0.releases > before.releases
                }), let pressedAt = raised.pressEdges.last, let redOnAt = raised.onEdges.last else {
                    throw BenchError("call path: no red for press \(cycle)")
                }
                let threshold = pressedAt + SOSLatencyBench.longPressNanoseconds
                guard let told = lines.wait(timeoutNanoseconds: Self.waitTimeoutNanoseconds, until: {
                    $0.notifier.count > seen.notifier.count && $0.acks.count > seen.acks.count
                }) else { throw BenchError("call path: press \(cycle): the notifier or the centre heard nothing in 20 s") }
                guard told.notifier[seen.notifier.count].text.contains("\"channel\":\"call\""),
                      told.notifier[seen.notifier.count].text.contains("SOS") else {
                    throw BenchError("call path: press \(cycle): the notifier's first line is not the call: \(told.notifier[seen.notifier.count].text)")
                }
                result.red.append(redOnAt &- threshold)
                result.notifier.append(told.notifier[seen.notifier.count].at &- threshold)
                result.ack.append(told.acks[seen.acks.count] &- threshold)
                // Cancel, and wait for the staff's CANCELLED and the centre's restore.
                press(node, probe)
                guard probe.wait(timeoutNanoseconds: Self.waitTimeoutNanoseconds, until: { $0.offCount > raised.offCount && $0.releases > raised.releases }) != nil,
                      lines.wait(timeoutNanoseconds: Self.waitTimeoutNanoseconds, until: {
                          $0.notifier.count >= seen.notifier.count + 2 && $0.acks.count >= seen.acks.count + 2
                      }) != nil else {
                    throw BenchError("call path: press \(cycle): the cancel was not told to both")
                }
            }
        } catch {
            failure = error
        }
        // The last messages' attempts are recorded once each notifier exits: let them settle, or
        // the stop would cut the last one short (and it would rightly go again after a restart).
        for _ in 0..<200 where failure == nil {
            let asked = lines.snapshot().checks
            node.onLoop { n in
                lines.checked(pending: n.projections.outbox.pending.count { $0.channel == .call || $0.channel == .arc })
            }
            guard let answered = lines.wait(timeoutNanoseconds: Self.waitTimeoutNanoseconds, until: { $0.checks > asked }),
                  answered.pending > 0 else { break }
            _ = lines.wait(timeoutNanoseconds: 10_000_000) { _ in false }
        }
        node.requestStop(reason: "benchmark done")
        _ = probe.wait(timeoutNanoseconds: Self.waitTimeoutNanoseconds) { $0.finished }
        let stopped = running.join()?.node
        _ = "{\"id\":\"bench-stop\"}\n".withCString { write(reader, $0, strlen($0)) }
        fifoThread.join()
        close(reader)
        // The centre's thread owns its output: it ends at the "stopped" line (or end of file).
        kill(centre.process.processIdentifier, SIGTERM)
        centreThread.join()
        centre.process.waitUntilExit()
        if let failure { throw failure }
        if let error = probe.snapshot().error { throw BenchError("call path: the node failed: \(error)") }
        guard let stopped else { throw BenchError("call path: the node's thread handed nothing back") }
        let pending = stopped.projections.outbox.pending.filter { $0.channel == .call || $0.channel == .arc }
        guard pending.isEmpty, stopped.projections.calls.open.isEmpty else {
            throw BenchError("call path: \(pending.count) messages left pending (\(pending.map(\.id).joined(separator: ", "))), \(stopped.projections.calls.open.count) calls open")
        }
        return result
    }

    private func press(_ node: NodeHandle, _ probe: SOSProbe) {
        node.onLoop { n in
            guard let board = n.board as? ProbedBoard else { return probe.fail("the node's board is not the probed board") }
            do {
                try board.inner.press(holdMicroseconds: SOSLatencyBench.holdMicroseconds, afterMicroseconds: SOSLatencyBench.gapMicroseconds)
            } catch {
                probe.fail("press failed: \(error)")
            }
        }
    }
}

/// The centre's process handed to the one thread that reads its output.
final class CentreOutput: @unchecked Sendable {
    let centre: ReceiverProcess
    init(_ centre: ReceiverProcess) { self.centre = centre }
}

/// Lines the notifier wrote and ACKs the centre sent, stamped when they arrived here.
final class LineStamps: Sendable {
    struct Stamped { var text: String; var at: UInt64 }
    struct State {
        var notifier: [Stamped] = []
        var acks: [UInt64] = []
        /// Answers from the loop to "how many call messages are pending?".
        var checks = 0
        var pending = 0
    }

    private let shared = WaitableState(State())

    func add(notifier lines: [String], at time: UInt64) {
        shared.update { $0.notifier += lines.filter { !$0.isEmpty }.map { Stamped(text: $0, at: time) } }
    }

    func checked(pending: Int) {
        shared.update {
            $0.checks += 1
            $0.pending = pending
        }
    }

    func add(ack time: UInt64) { shared.update { $0.acks.append(time) } }

    func snapshot() -> State { shared.snapshot() }

    func wait(timeoutNanoseconds: UInt64, until condition: (State) -> Bool) -> State? {
        shared.wait(timeoutNanoseconds: timeoutNanoseconds, until: condition)
    }
}
