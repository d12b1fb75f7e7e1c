import Hummingbird
import Synchronization
import VigilSystem

/// The requests the hub is answering now (method, path, since when), so a shutdown that does not
/// finish can say which request holds the HTTPS server (`ShutdownWatchdog`). Paths only: no
/// query strings, no headers.
final class InFlightRequests: Sendable {
    private struct Entry { var method: String; var path: String; var startedNanoseconds: UInt64 }
    private let entries = Mutex<(next: UInt64, open: [UInt64: Entry])>((0, [:]))

    func begin(method: String, path: String) -> UInt64 {
        entries.withLock { state in
            state.next &+= 1
            state.open[state.next] = Entry(method: method, path: String(path.prefix(120)), startedNanoseconds: monotonicNanoseconds())
            return state.next
        }
    }

    func end(_ id: UInt64) { _ = entries.withLock { $0.open.removeValue(forKey: id) } }

    /// "POST /sync/upload for 41 s", oldest first, at most `limit`.
    func describe(limit: Int = 8) -> String {
        let now = monotonicNanoseconds()
        let open = entries.withLock { Array($0.open.values) }.sorted { $0.startedNanoseconds < $1.startedNanoseconds }
        guard !open.isEmpty else { return "none" }
        return open.prefix(limit).map { "\($0.method) \($0.path) for \((now &- $0.startedNanoseconds) / 1_000_000_000) s" }
            .joined(separator: "; ") + (open.count > limit ? "; and \(open.count - limit) more" : "")
    }
}

/// Records each request in `InFlightRequests` while it is answered: until the handler returns,
/// or, for a streamed body (no length), until the body is written or dropped unwritten (a client
/// gone before the head was written never runs the body: the entry goes with the closure).
struct InFlightMiddleware<Context: RequestContext>: RouterMiddleware {
    let requests: InFlightRequests

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let entry = InFlightEntry(requests, id: requests.begin(method: request.method.rawValue, path: request.uri.path))
        var response = try await next(request, context)
        // A body of known length is written at once: only a stream stays in flight.
        guard response.body.contentLength == nil else { return response }
        let body = response.body
        response.body = ResponseBody { writer in
            // Held by the closure: released once the body is written, or with the closure.
            defer { _ = entry }
            try await body.write(writer)
        }
        return response
    }
}

/// One request's place in `InFlightRequests`, given back when the last reference goes.
final class InFlightEntry: Sendable {
    private let requests: InFlightRequests
    private let id: UInt64

    init(_ requests: InFlightRequests, id: UInt64) {
        self.requests = requests
        self.id = id
    }

    deinit { requests.end(id) }
}
