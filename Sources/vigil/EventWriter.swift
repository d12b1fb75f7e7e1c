import Foundation
import VigilEvents
import VigilLog
import VigilNode
import VigilSystem

/// Appends events from the CLI. A running node owns its log, so the event goes through its
/// control socket and the reply comes once it is durable; with no node running, the CLI takes
/// the node's lock and appends itself. Either way, success means durable.
enum EventWriter {
    static func append(_ body: EventBody, dataDirectory dir: String) throws -> UInt64 {
        let (kind, payload) = EventCodec.encode(body)
        if FileSystem.exists(dir + "/control.sock"),
           let reply = try? ControlClient.send(.append(kind: kind, payload: payload), dataDirectory: dir, timeoutMilliseconds: 10_000) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any],
                  object["ok"] as? Bool == true, let seq = object["seq"] as? Int else {
                throw CLIError("the node refused: \(reply)")
            }
            return UInt64(seq)
        }
        guard FileSystem.exists(dir + "/data.mdb") else { throw CLIError("no event log in \(dir) (start a node with `vigil run --data \(dir)` first)") }
        do {
            return try FileSystem.withExclusiveLock(dir + "/node.lock") { try appendDirectly(kind: kind, payload: payload, dir: dir) }
        } catch let error as SystemError where error.errno == .wouldBlock {
            throw CLIError("a node holds \(dir) but does not answer on \(dir)/control.sock")
        }
    }

    private static func appendDirectly(kind: UInt32, payload: [UInt8], dir: String) throws -> UInt64 {
        let log: EventLog
        do { log = try EventLog.open(LogConfiguration(directory: dir)) } catch { throw CLIError(error.description) }
        let done = Completion()
        try log.append(LogRecord(kind: kind, timeMicroseconds: realtimeMicroseconds(), payload: payload), priority: .critical) {
            done.set($0)
        }
        log.close() // drains and syncs: the completion has run
        guard let result = done.value else { throw CLIError("the log did not acknowledge the event") }
        switch result {
        case .success(let seq): return seq
        case .failure(let error): throw CLIError(error.description)
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
