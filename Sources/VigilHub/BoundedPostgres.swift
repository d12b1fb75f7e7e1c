import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PostgresNIO
import Synchronization

/// What the hub's requests reach PostgreSQL through: each statement or transaction ends within
/// `seconds` or throws `DatabaseDidNotAnswer`, whatever the driver does.
///
/// Why: after PostgreSQL restarted under load, one upload's transaction once never answered
/// (CI, 2026-12-01: in flight for 60 s, it held the hub's graceful shutdown until the watchdog
/// ended the process). The box had given up long before (its read timeout is 30 s). A request
/// waiting on a database that may never answer holds a connection, a place under the
/// connection caps and, at shutdown, the whole process; so the wait is bounded here, in one
/// place, shorter than a box's read timeout, so the box hears 503 and retries.
///
/// The operation runs in a task of its own, which is cancelled at the deadline and then left to
/// end by itself: PostgresNIO gives up a lease wait when cancelled, but a statement already sent
/// ends only when its connection does, and awaiting it would be the very wait this bounds.
///
/// Contract: an operation that timed out may still complete afterwards. Every caller is either
/// idempotent (an upload is stored once by its hashes; a session, a token, a take are keyed) or
/// says "may or may not have been done" (`DatabaseDidNotAnswer`'s message): a coordinator's
/// alert raised again after a timeout that had committed is raised twice (the page shows both;
/// cancelling one is the remedy). Migrations and the feed listener use `client` directly: they
/// are not requests; the warnings relay's statements are bounded too (a lease that timed out and
/// committed costs the feed one interval).
/// Misuse: iterating a returned row sequence is outside the deadline (the first answer is in).
struct BoundedPostgres: Sendable {
    let client: PostgresClient
    let seconds: Double
    let logger: Logger

    func query(_ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line) async throws -> PostgresRowSequence {
        try await bounded("a statement", file: file, line: line) { _ in
            try await client.query(query, logger: logger, file: file, line: line)
        }
    }

    func withTransaction<Result: Sendable>(logger: Logger, file: String = #fileID, line: Int = #line,
                                           _ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await bounded("a transaction", file: file, line: line) { stage in
            try await client.withConnection { connection in
                stage.flag.store(true, ordering: .relaxed)
                return try await connection.withTransaction(logger: logger) { try await body($0) }
            }
        }
    }

    func withConnection<Result: Sendable>(file: String = #fileID, line: Int = #line,
                                          _ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await bounded("a connection's work", file: file, line: line) { stage in
            try await client.withConnection { connection in
                stage.flag.store(true, ordering: .relaxed)
                return try await body(connection)
            }
        }
    }

    /// Runs `operation` in a task of its own and answers with whichever comes first: its result
    /// or the deadline. `leased` is set once a connection is held, so the log can say whether
    /// the wait was for a connection or for an answer.
    private func bounded<Result: Sendable>(_ what: String, file: String, line: Int,
                                           _ operation: @escaping @Sendable (LeaseFlag) async throws -> Result) async throws -> Result {
        let race = FirstAnswer<Result>()
        let leased = LeaseFlag()
        let seconds = self.seconds
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
                race.install(continuation)
                let work = Task {
                    do { race.answer(.success(try await operation(leased))) } catch { race.answer(.failure(error)) }
                }
                let timer = Task {
                    try? await Task.sleep(for: .seconds(seconds))
                    if Task.isCancelled { return }
                    let held = leased.flag.load(ordering: .relaxed)
                    if race.answer(.failure(DatabaseDidNotAnswer(seconds: seconds))) {
                        work.cancel()
                        logger.error("hub: the database did not answer in time; the request is answered 503 and its work cancelled", metadata: [
                            "operation": "\(what)", "at": "\(file):\(line)", "seconds": "\(seconds)",
                            "waiting_for": "\(held ? "an answer on a held connection" : "a connection or an answer")",
                        ])
                    }
                }
                race.onAnswer { timer.cancel() }
                race.onCancel { work.cancel() }
            }
        } onCancel: {
            race.cancel()
        }
    }
}

/// A connection has been leased (set inside the operation's task, read by the timer's).
final class LeaseFlag: Sendable {
    let flag = Atomic<Bool>(false)
}

/// One continuation resumed exactly once, by the operation, the deadline or cancellation.
private final class FirstAnswer<Result: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result, any Error>?
        var early: Swift.Result<Result, any Error>?
        var answered = false
        var afterAnswer: [@Sendable () -> Void] = []
        var onCancel: [@Sendable () -> Void] = []
        var cancelled = false
    }
    private let state = Mutex(State())

    func install(_ continuation: CheckedContinuation<Result, any Error>) {
        let early = state.withLock { state -> Swift.Result<Result, any Error>? in
            if let early = state.early { state.early = nil; return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// True when this was the first answer (the one the caller gets).
    @discardableResult
    func answer(_ result: Swift.Result<Result, any Error>) -> Bool {
        let (continuation, hooks) = state.withLock { state -> (CheckedContinuation<Result, any Error>?, [@Sendable () -> Void]?) in
            guard !state.answered else { return (nil, nil) }
            state.answered = true
            let hooks = state.afterAnswer
            state.afterAnswer = []
            guard let continuation = state.continuation else {
                state.early = result
                return (nil, hooks)
            }
            state.continuation = nil
            return (continuation, hooks)
        }
        guard let hooks else { return false }
        continuation?.resume(with: result)
        for hook in hooks { hook() }
        return true
    }

    func onAnswer(_ hook: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.answered { return true }
            state.afterAnswer.append(hook)
            return false
        }
        if now { hook() }
    }

    /// `hook` runs on cancellation, or at once when that has happened already.
    func onCancel(_ hook: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.cancelled { return true }
            state.onCancel.append(hook)
            return false
        }
        if now { hook() }
    }

    func cancel() {
        let hooks = state.withLock { state -> [@Sendable () -> Void] in
            state.cancelled = true
            defer { state.onCancel = [] }
            return state.onCancel
        }
        answer(.failure(CancellationError()))
        for hook in hooks { hook() }
    }
}

/// PostgreSQL did not answer a request's statement in time: 503, try again.
public struct DatabaseDidNotAnswer: HTTPResponseError, CustomStringConvertible {
    public let seconds: Double
    public var status: HTTPResponse.Status { .serviceUnavailable }
    public var description: String { "the hub's database did not answer within \(Int(seconds)) s" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = SyncRoutes.refuse(.serviceUnavailable, "database_unavailable",
                                         "the hub's database did not answer within \(Int(seconds)) s; what was asked may or may not have been done: try again")
        response.headers[.retryAfter] = "5"
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
