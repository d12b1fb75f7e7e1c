import Foundation
import VigilBoard
import VigilLog
import VigilNode
import VigilSystem

/// button_ready_after_power_cut_s (issue 27, item 7): a node whose log holds 1M (and, in a full
/// run, 10M) events is SIGKILLed while it works (a process of its own: this binary with
/// `--power-cut-child DIR`, simulated advertisers feeding it scan hits); the page cache of its log
/// is dropped (fsync, then POSIX_FADV_DONTNEED: a cold start after a power cut); then a node
/// starts on it in this process and its button is pressed at once. The figure is the time from
/// the start until red is on. Baseline: `LogCheck.check` alone on the same file with its cache
/// dropped too, which is what an unclean stop made every start wait for before decision 0002.
/// Reported beside it: when the log was open (checked, opened, restored, and what happened
/// before carried into it).
struct PowerCutBench {
    static let metric = "button_ready_after_power_cut_s"
    static let childFlag = "--power-cut-child"

    let plan: Plan
    let options: Options
    let reporter: Reporter

    var sizes: [Int] { options.quick ? [plan.replayEvents] : [1_000_000, 10_000_000] }

    func run() throws {
        for size in sizes {
            try withTemporaryDirectory("powercut") { directory in
                progress("power cut: building a log of \(size) mixed events")
                let data = directory + "/data"
                try buildMixedLog(directory: data, events: size, plan: plan)
                try cleanRun(data)
                var ready: [Double] = [], opened: [Double] = [], checks: [Double] = []
                for run in 1...plan.runs {
                    try killUnderLoad(data)
                    dropCache(data)
                    let check = try LogCheck.check(directory: data)
                    checks.append(check.seconds)
                    dropCache(data)
                    let (red, open) = try startAndPress(data)
                    ready.append(red)
                    opened.append(open)
                    progress("power cut run \(run)/\(plan.runs), \(size) events: red \(String(format: "%.2f", red)) s after the start, "
                             + "the log open after \(String(format: "%.2f", open)) s; the check alone \(String(format: "%.2f", check.seconds)) s")
                }
                ready.sort()
                opened.sort()
                checks.sort()
                reporter.emit(MetricLine(metric: Self.metric, value: ready[ready.count / 2], unit: "s", baseline: checks[checks.count / 2], context: [
                    ("events", .int(size)), ("runs", .int(ready.count)), ("min", .double(ready.first ?? 0)), ("max", .double(ready.last ?? 0)),
                    ("log_open_s", .double(opened[opened.count / 2])),
                    ("file_bytes", .int(FileSystem.size(data + "/data.mdb") ?? 0)),
                    ("cache", .string("dropped (fsync + POSIX_FADV_DONTNEED) before the start and before the baseline")),
                    ("baseline_is", .string("LogCheck.check alone on the same file")),
                    ("target", .string("≤ 2 s whatever the log's size (issue 27 item 7)")),
                ]))
            }
        }
    }

    /// A node started and stopped cleanly on the fresh log: it replays it once and leaves a
    /// checkpoint, as a box that has been running for weeks has one.
    private func cleanRun(_ data: String) throws {
        var configuration = SOSLatencyBench.pressConfiguration(directory: data)
        configuration.simulation.advertisers = 0
        do {
            let node = try Node(configuration: configuration, logger: benchNodeLogger())
            try node.run(duration: 500_000)
        } catch {
            throw BenchError("power cut: the first node on the fresh log failed: \(error)")
        }
    }

    /// A node of its own process working on `data` (scan hits from simulated advertisers), then
    /// SIGKILL: what a power cut leaves, the start's "log not checked" mark included.
    private func killUnderLoad(_ data: String) throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        child.arguments = [Self.childFlag, data]
        let ready = Pipe()
        child.standardOutput = ready
        try child.run()
        // The child says when its loop runs; a second of load after that.
        _ = ready.fileHandleForReading.availableData
        usleep(1_000_000)
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        guard FileSystem.exists(data + "/log-check-pending") else {
            throw BenchError("power cut: the killed node left no unchecked-start mark")
        }
    }

    /// The log's pages leave the page cache (written first: DONTNEED drops only clean pages).
    private func dropCache(_ data: String) {
        for name in ["data.mdb", "lock.mdb"] {
            let fd = open(data + "/" + name, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            fsync(fd)
            _ = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
            close(fd)
        }
    }

    /// Seconds from the start of a node on `data` until a press made at once lights red, and
    /// until its log is open.
    private func startAndPress(_ data: String) throws -> (red: Double, open: Double) {
        var configuration = SOSLatencyBench.pressConfiguration(directory: data)
        configuration.simulation.advertisers = 0
        let started = monotonicNanoseconds()
        let probe = SOSProbe()
        let running = try SOSLatencyBench.startProbedNode(configuration, probe: probe, thread: "vigil-bench-powercut")
        let node = running.handle
        node.onLoop { n in
            guard let board = n.board as? ProbedBoard else { return probe.fail("the node's board is not the probed board") }
            do {
                try board.inner.press(holdMicroseconds: SOSLatencyBench.holdMicroseconds, afterMicroseconds: 0)
            } catch {
                probe.fail("press failed: \(error)")
            }
        }
        let red = probe.wait(timeoutNanoseconds: 600_000_000_000) { !$0.onEdges.isEmpty || $0.failure != nil || $0.finished }
        let open = DispatchSemaphore(value: 0)
        let openAt = LockedValue<UInt64>(0)
        node.whenState({ $0.liveStatus().logOpening == nil }) { _ in
            openAt.withLock { $0 = monotonicNanoseconds() }
            open.signal()
        }
        _ = open.wait(timeout: .now() + 600)
        node.requestStop(reason: "benchmark done")
        _ = probe.wait(timeoutNanoseconds: 60_000_000_000) { $0.finished }
        _ = running.join()
        guard let on = red?.onEdges.first else {
            throw BenchError("power cut: no red after the start (\(probe.snapshot().failure ?? probe.snapshot().error ?? "no reason"))")
        }
        let openedAt = openAt.withLock { $0 }
        guard openedAt > 0 else { throw BenchError("power cut: the log was not open within 10 minutes") }
        return (Double(on &- started) / 1e9, Double(openedAt &- started) / 1e9)
    }

    /// `--power-cut-child DIR`: runs a node on DIR with simulated advertisers until killed; prints
    /// a line once its loop runs.
    static func runChild(directory: String) -> Never {
        var configuration = SOSLatencyBench.pressConfiguration(directory: directory)
        configuration.simulation.advertisers = 200
        do {
            let node = try Node(configuration: configuration, logger: benchNodeLogger())
            node.onLoop { _ in
                writeAll("running\n", to: STDOUT_FILENO)
            }
            try node.run()
        } catch {
            writeAll("vigil-bench power-cut child: \(error)\n", to: STDERR_FILENO)
            exit(1)
        }
        exit(0)
    }
}
