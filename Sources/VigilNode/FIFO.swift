/// A first-in first-out queue with O(1) push and pop, for events awaiting durability.
struct FIFO<Element> {
    private var storage: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count - head }
    var first: Element? { isEmpty ? nil : storage[head] }

    mutating func append(_ element: Element) { storage.append(element) }

    /// The queued elements, oldest first.
    var elements: ArraySlice<Element> { storage[head...] }

    mutating func removeFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = storage[head]
        head += 1
        // Reclaim the consumed prefix once it dominates, keeping pops amortised O(1).
        if head > 1_024 && head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }
}
