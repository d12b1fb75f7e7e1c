import ArgumentParser
import Foundation
import VigilWarningFeeds

/// hub.yaml's `warnings:` section: the feeds the hub relays to its boxes, each as a box's
/// `warnings.feeds` entry (docs/warnings.md "The hub relays").
///
/// ```yaml
/// warnings:
///   feeds:
///     - url: https://alerts.example.gov/cap.atom
///       ca_file: feeds/ca.pem       # optional (relative paths are in the hub's data directory)
///       signers: feeds/signers.pem  # optional: the self-signed CA the feed signs under
///       signatures: required        # or optional (the default)
///       interval: 120s              # 5s to 24h; a number is seconds
/// ```
extension HubOptions {
    static func warningFeeds(_ value: Any, path: String) throws -> [WarningFeedSettings] {
        func fail(_ message: String) -> ValidationError { ValidationError("\(path): warnings.\(message)") }
        guard let section = value as? [String: Any] else { throw fail("must be a mapping with feeds") }
        for key in section.keys where key != "feeds" { throw fail("\(key) is not a hub setting (a box's languages and geocodes are its own)") }
        guard let list = section["feeds"] as? [[String: Any]] else { throw fail("feeds must be a list of mappings with a url each") }
        guard list.count <= 16 else { throw fail("feeds: at most 16") }
        return try list.map { item in
            for key in item.keys where !["url", "ca_file", "signers", "signatures", "interval"].contains(key) {
                throw fail("feeds: unknown key \(key)")
            }
            guard let url = item["url"] as? String else { throw fail("feeds: each feed has a url") }
            if let problem = WarningFeedSettings.problem(url: url) { throw fail("feeds.url: \(problem)") }
            var feed = WarningFeedSettings(url: url)
            if let v = item["ca_file"] {
                guard let file = v as? String, !file.isEmpty else { throw fail("feeds.ca_file must be a path") }
                feed.caFile = file
            }
            if let v = item["signers"] {
                guard let file = v as? String, !file.isEmpty else { throw fail("feeds.signers must be a path") }
                feed.signersFile = file
            }
            if let v = item["signatures"] {
                switch v as? String {
                case "optional": feed.signaturesRequired = false
                case "required": feed.signaturesRequired = true
                default: throw fail("feeds.signatures: required or optional")
                }
            }
            if feed.signaturesRequired && feed.signersFile == nil {
                throw fail("feeds.signatures: required needs signers (a PEM file of the feed's CA)")
            }
            if let v = item["interval"] {
                guard let seconds = Self.seconds(v), (5...86_400).contains(seconds) else {
                    throw fail("feeds.interval: 5s to 24h (public feeds ask for 120s or more)")
                }
                feed.intervalMicroseconds = UInt64(seconds) * 1_000_000
            }
            return feed
        }
    }

    /// 120, "120s", "2m" or "1h" as seconds.
    static func seconds(_ value: Any) -> Int? {
        if let n = value as? Int { return n }
        guard let text = value as? String, let unit = text.last, let n = Int(text.dropLast()) else { return nil }
        switch unit {
        case "s": return n
        case "m": return n.multipliedReportingOverflow(by: 60).overflow ? nil : n * 60
        case "h": return n.multipliedReportingOverflow(by: 3_600).overflow ? nil : n * 3_600
        default: return nil
        }
    }
}
