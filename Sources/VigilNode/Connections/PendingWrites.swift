import VigilGATT

/// Messages peers wrote that are logged but not durable yet, by event sequence, with the Write
/// Request to answer once they are (a Write Command has none).
///
/// Bounded per link: while the card is slow (a long fsync, a card failing), a peer writing
/// commands as fast as its message rate allows would otherwise pile events up in memory for as
/// long as the stall lasts. At `limitPerLink` the link's next message is refused (the peer is
/// told "insufficient resources" if it asked for an answer) until some of its messages are
/// durable. That is the box's slowness, not the peer's fault: it is counted, never a strike.
struct PendingWrites {
    let limitPerLink: Int
    private var bySequence: [UInt64: (link: Int32, completion: WriteCompletion?)] = [:]
    private var countByLink: [Int32: Int] = [:]

    init(limitPerLink: Int) { self.limitPerLink = max(1, limitPerLink) }

    /// Whether `link` may have one more message in flight.
    func hasRoom(_ link: Int32) -> Bool { countByLink[link, default: 0] < limitPerLink }

    func count(_ link: Int32) -> Int { countByLink[link, default: 0] }

    /// Every link's messages in flight.
    var total: Int { bySequence.count }

    mutating func add(sequence: UInt64, link: Int32, completion: WriteCompletion?) {
        if let earlier = bySequence.updateValue((link, completion), forKey: sequence) { decrement(earlier.link) }
        countByLink[link, default: 0] += 1
    }

    /// The event with `sequence` is durable or was refused: what was waiting on it, if anything.
    mutating func settle(_ sequence: UInt64) -> (link: Int32, completion: WriteCompletion?)? {
        guard let write = bySequence.removeValue(forKey: sequence) else { return nil }
        decrement(write.link)
        return write
    }

    /// The link closed: nothing of it is answered any more (its events stay in the log).
    mutating func forget(link: Int32) {
        guard countByLink.removeValue(forKey: link) != nil else { return }
        bySequence = bySequence.filter { $0.value.link != link }
    }

    private mutating func decrement(_ link: Int32) {
        let left = countByLink[link, default: 0] - 1
        countByLink[link] = left > 0 ? left : nil
    }
}
