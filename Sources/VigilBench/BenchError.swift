/// A benchmark that cannot produce a trustworthy number: printed to stderr, exit status 1.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
