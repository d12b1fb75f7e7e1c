/// Median of a non-empty sample (mean of the two middle values for even counts); nil when empty.
func median(_ values: [Double]) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/// Nearest-rank percentile (p in 0...100) of an ascending sample; nil when empty.
func percentile(_ sorted: [UInt64], _ p: Double) -> UInt64? {
    guard !sorted.isEmpty else { return nil }
    let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
    return sorted[min(sorted.count, max(1, rank)) - 1]
}

func milliseconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e6 }

/// Events per second, or 0 for an empty interval.
func perSecond(_ count: Int, nanoseconds: UInt64) -> Double {
    nanoseconds == 0 ? 0 : Double(count) * 1e9 / Double(nanoseconds)
}
