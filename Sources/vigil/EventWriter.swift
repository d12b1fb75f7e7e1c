import Foundation
import VigilCore
import VigilEvents
import VigilLog
import VigilNode
import VigilRadio
import VigilSystem

/// Sends commands that change a node's state (residents, check-ins, silencing, exposures). A
/// running node owns its log, so the command goes through its control socket and the reply
/// comes once its event is durable. With no node running, the CLI takes the node's lock, judges
/// the command against the log's state with the same `CommandInterpreter` the node uses, and
/// appends the event itself. Either way, success means durable.
enum CommandSender {
    /// Returns the durable event's sequence (and a raised alert's id).
    @discardableResult
    static func send(_ command: NodeCommand, dataDirectory dir: String) throws -> NodeReply {
        if FileSystem.exists(dir + "/control.sock"),
           let reply = try? ControlClient.send(command, dataDirectory: dir, timeoutMilliseconds: 10_000) {
            return try accepted(reply)
        }
        guard FileSystem.exists(dir + "/data.mdb") else { throw CLIError("no event log in \(dir) (start a node with `vigil run --data \(dir)` first)") }
        do {
            return try FileSystem.withExclusiveLock(dir + "/node.lock") { try appendDirectly(command, dir: dir) }
        } catch let error as SystemError where error.errno == .wouldBlock {
            throw CLIError("a node holds \(dir) but does not answer on \(dir)/control.sock")
        }
    }

    /// Sends a command only a running node can carry out (alerts go on the air); exit 69 when
    /// none answers.
    static func sendToRunningNode(_ command: NodeCommand, dataDirectory dir: String) throws -> NodeReply {
        guard FileSystem.exists(dir + "/control.sock") else {
            throw CLIError("no node is running on \(dir): alerts go on the air, so start it first (`vigil run --data \(dir)`)", code: 69)
        }
        let reply: NodeReply
        do {
            reply = try ControlClient.send(command, dataDirectory: dir, timeoutMilliseconds: 10_000)
        } catch {
            throw CLIError("the node on \(dir) does not answer: \(error)", code: 69)
        }
        return try accepted(reply)
    }

    /// The reply if it says yes; otherwise the refusal as a CLI error with its exit code.
    static func accepted(_ reply: NodeReply) throws -> NodeReply {
        if reply.ok, reply.unlogged == true {
            FileOutput.standardError.write("vigil: warning: the node's log stopped taking writes; this took effect but is held only in memory (replace the card)\n")
        }
        guard !reply.ok else { return reply }
        let message = reply.error ?? "no reason given"
        switch reply.refusal {
        case .invalid?, .conflict?: throw CLIError("the node refused: \(message)", code: 65)
        case .unavailable?: throw CLIError("the node cannot do that now: \(message)", code: 69)
        case .logRefused?, nil: throw CLIError("the node refused: \(message)")
        }
    }

    private static func appendDirectly(_ command: NodeCommand, dir: String) throws -> NodeReply {
        let log: EventLog
        do { log = try EventLog.open(LogConfiguration(directory: dir)) } catch { throw CLIError(error.description) }
        let now = realtimeMicroseconds()
        let outcome: CommandInterpreter.Outcome
        let state: Projections
        do {
            state = try Replay.currentState(log, settings: ProjectionSettings())
            outcome = CommandInterpreter.offline(state: state, nowMicroseconds: now).interpret(command)
        } catch {
            log.close()
            throw CLIError("\(error)")
        }
        let body: EventBody
        switch outcome {
        case .refused(let why, let message):
            log.close()
            return try accepted(.refused(why, message))
        case .event(let b, _):
            body = b
        }
        let (kind, payload) = EventCodec.encode(body)
        let done = Completion()
        try log.append(LogRecord(kind: kind, timeMicroseconds: now, payload: payload), priority: .critical) {
            done.set($0)
        }
        log.close() // drains and syncs: the completion has run
        guard let result = done.value else { throw CLIError("the log did not acknowledge the event") }
        switch result {
        case .success(let seq):
            forgetKeysOfSensorsGone(state: state, after: Event(sequence: seq, timeMicroseconds: now, body: body), dir: dir)
            return .durable(seq)
        case .failure(let error): throw CLIError(error.description)
        }
    }

    /// A resident's sensor removed or changed with no node running: its bond key goes now, as
    /// the node would have deleted it (a sensor enrolled again pairs afresh).
    private static func forgetKeysOfSensorsGone(state: Projections, after event: Event, dir: String) {
        switch event.body {
        case .residentUpdated, .residentRemoved: break
        default: return
        }
        var after = state
        after.apply(event)
        let enrolled = Set(after.sensors.sorted.map(\.address))
        do {
            let gone = try StoredSensorKeys.delete(notIn: enrolled, dataDirectory: dir)
            if !gone.isEmpty { FileOutput.standardOutput.write("deleted the bond key of \(gone.map(\.description).joined(separator: ", ")): it pairs afresh if enrolled again\n") }
        } catch {
            FileOutput.standardError.write("vigil: warning: cannot delete the old sensor's bond key from \(StoredSensorKeys.path(in: dir)) (\(error)): if the sensor is enrolled again before the box starts, delete its line there by hand, or it keeps its old bond\n")
        }
    }
}

/// Holds a completion's result across threads.
final class Completion: Sendable {
    private let lock = ConditionLock()
    private nonisolated(unsafe) var result: Result<UInt64, LogError>?
    func set(_ r: Result<UInt64, LogError>) { lock.withLock { result = r } }
    var value: Result<UInt64, LogError>? { lock.withLock { result } }
}
