/// Exposure contacts the way Google/Apple Exposure Notification does them (docs/exposure.md
/// "Exposure contacts (GAEN)"): the GAEN key schedule, key export files, and matching. Pure: no clocks, no I/O
/// beyond reading the files it is handed.
public enum Exposure {
    /// 10-minute intervals since the Unix epoch (ENIntervalNumber).
    public static let intervalSeconds: UInt64 = 600
    /// Intervals in a day: a Temporary Exposure Key rolls every 144 intervals.
    public static let intervalsPerDay: UInt32 = 144

    public static func interval(unixSeconds: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: unixSeconds / intervalSeconds) }
}
