import VigilSystem

extension SplitMix64 {
    /// `count` seeded bytes: the fuzz and distribution tests are the same on every run.
    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }
}
