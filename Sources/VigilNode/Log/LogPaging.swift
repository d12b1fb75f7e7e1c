import VigilLog

/// Reading a stretch of the log beside a running node: in read transactions of a bounded number
/// of records, since a reader holds old pages from reuse for as long as its transaction is open
/// and the node's writer goes on meanwhile. The exposure matching and the compaction read this way.
enum LogPaging {
    static let recordsPerTransaction = 50_000

    /// Calls `body` with every record from `first` through `last` (nil: to the end), in sequence
    /// order.
    static func forEach(_ log: EventLog, from first: UInt64 = 0, through last: UInt64? = nil,
                        _ body: (Result<StoredRecordView, CorruptRecord>) -> Void) throws(LogError) {
        var next = first
        while true {
            let resume = next
            let (reached, count, past) = try log.read { txn in
                var reached = resume
                var count = 0
                var past = false
                try txn.forEach(from: resume) { result in
                    let sequence = switch result {
                    case .success(let view): view.sequence
                    case .failure(let corrupt): corrupt.sequence
                    }
                    if let last, sequence > last { past = true; return false }
                    reached = sequence
                    body(result)
                    count += 1
                    return count < recordsPerTransaction
                }
                return (reached, count, past)
            }
            guard !past, count == recordsPerTransaction, reached >= next, reached < (last ?? .max) else { return }
            next = reached + 1
        }
    }
}
