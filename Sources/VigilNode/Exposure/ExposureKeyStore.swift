import Foundation
import VigilExposure
import VigilSystem

/// The box's own Temporary Exposure Keys, one per day, in `DATA/exposure-keys` (mode 0600): kept
/// out of the log, which may be uploaded to a hub, and deleted after the retention period. They
/// leave the box only when the operator publishes them (`vigil exposure publish`).
///
/// Format: a line per key, "KEY-HEX ROLLING-START" (rolling period 144).
public struct ExposureKeyStore {
    public let path: String
    public private(set) var keys: [TemporaryExposureKey] = []

    public init(directory: String) throws {
        path = directory + "/exposure-keys"
        guard FileSystem.exists(path) else { return }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw NodeError.unsupported("cannot read \(path)")
        }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let data = Bytes16(hex: String(parts[0])), let start = UInt32(parts[1]),
                  let key = try? TemporaryExposureKey(keyData: data, rollingStartIntervalNumber: start) else {
                throw NodeError.unsupported("\(path) has a line that is not a key: move the file away to start again")
            }
            keys.append(key)
        }
    }

    /// The key for the day holding `interval`, made (random) and stored if there is none yet;
    /// keys older than `retentionDays` are dropped in the same write.
    public mutating func key(forInterval interval: UInt32, retentionDays: UInt32) throws -> TemporaryExposureKey {
        let dayStart = interval - interval % Exposure.intervalsPerDay
        if let key = keys.first(where: { $0.rollingStartIntervalNumber == dayStart }) { return key }
        var rng = SystemRandomNumberGenerator()
        let key = TemporaryExposureKey.generate(forDayContaining: interval, using: &rng)
        let oldest = dayStart > retentionDays * Exposure.intervalsPerDay ? dayStart - retentionDays * Exposure.intervalsPerDay : 0
        keys = keys.filter { $0.rollingStartIntervalNumber >= oldest } + [key]
        try save()
        return key
    }

    /// Replaces the file durably (never half a file): a key lost to a power cut after it was
    /// advertised could never be published.
    private func save() throws {
        let text = keys.map { "\($0.keyData.hex) \($0.rollingStartIntervalNumber)\n" }.joined()
        do {
            try FileSystem.replaceDurably(path, contents: Array(text.utf8))
        } catch {
            throw NodeError.system(error)
        }
    }
}
