import CoreMetrics
import Logging
import VigilBoard
import VigilCore
import VigilEvents
import VigilHubProtocol
import VigilLog
import VigilRadio
import VigilSystem

/// The outputs the state calls for, time, and stopping.
extension Node {
    // MARK: Outputs

    /// Derives the desired patterns from the projections (and what the node knows that is not an
    /// event: the log's failure, the centre's link) and drives the board to match.
    func reconcileOutputs() {
        guard !isCarrying else { return }
        patterns.update(OutputPolicy.decide(projections, running: !stopping, logFailure: fromMemory?.failure,
                                            callPathProblem: callPathProblem),
                        nowNanoseconds: monotonic.nowNanoseconds())
        driveOutputs()
    }

    /// Why the box cannot call for help now, from its self-tests and the centre's link; nil: no
    /// path is known to fail.
    var callPathProblem: String? {
        let problems = [configuration.alarmCentre == nil ? nil : alarmCentre.status.problem,
                        notifierTest.configured ? notifierTest.status.problem : nil].compactMap { $0 }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    /// Sets every line to its pattern's level now and arms the timer for the next change.
    func driveOutputs() {
        let now = monotonic.nowNanoseconds()
        let time = clock.nowMicroseconds()
        for line in OutputLine.allCases {
            do {
                try board.drive(line, on: patterns.level(line, nowNanoseconds: now), timeMicroseconds: time)
            } catch {
                counters.boardErrors += 1
                logger.error("cannot drive output", metadata: ["line": "\(line.rawValue)", "error": "\(error)"])
            }
        }
        if let next = patterns.nextChange(afterNanoseconds: now) {
            scheduler.schedule(Self.patternTimer, atNanoseconds: next)
        } else {
            scheduler.cancel(Self.patternTimer)
        }
    }

    // MARK: Time

    /// The monotonic time at which the node's wall clock reaches `due` (it may run faster than
    /// real time, `--time-scale`).
    func monotonicDeadline(forWallMicroseconds due: UInt64) -> UInt64 {
        let now = clock.nowMicroseconds()
        let realMicroseconds = Double(due > now ? due - now : 0) / clock.rate
        return monotonic.nowNanoseconds() &+ UInt64(min(realMicroseconds * 1_000, 1e17))
    }

    var uptimeSeconds: Double { Double(monotonic.nowNanoseconds() &- startedMonotonic) / 1e9 }

    // MARK: Stopping

    func beginStop(reason: String) {
        stopping = true
        logger.info("stopping", metadata: ["reason": "\(reason)"])
        for c in active { c.stop() }
        var stopped = NodeStopped()
        stopped.reason = reason
        append(.nodeStopped(stopped))
    }

    func finish() {
        if opening == nil { checkpoints.write() }
        log.close()
        drainDurable() // the close acknowledged whatever was left; nothing should be pending now
        board.stop()
        control.close()
        // An orderly stop: this run did not crash reading its log, so the next start need not check
        // it first. A failure of the log itself leaves the mark, and the next start checks; so
        // does a stop before this start's check and open were done.
        if let opening {
            opening.close()
        } else if !(fatal?.mayBeTheLog ?? false) {
            LogRecovery.checkedThisStart(directory: configuration.dataDirectory)
        }
        // The directory is free for the next node as soon as this one is done with it.
        lockFile.unlock()
        finished = true
        logger.info("node stopped", metadata: [
            "applied_through": "\(projections.appliedThrough)", "events": "\(projections.health.totalEvents)",
        ])
    }

    func shutdownAfterFailure() {
        if opening == nil, !(fatal?.mayBeTheLog ?? false) { LogRecovery.checkedThisStart(directory: configuration.dataDirectory) }
        radio.stop()
        board.stop()
        control.close()
        log.close()
        opening?.close()
        lockFile.unlock()
        finished = true
    }
}
