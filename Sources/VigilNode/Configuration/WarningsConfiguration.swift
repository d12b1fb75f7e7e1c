import Foundation
import VigilCAP
import VigilWarningFeeds

/// The `warnings:` section: how public warnings (CAP 1.2) are judged here (docs/warnings.md).
/// The site's point is `site.location`.
///
/// ```yaml
/// warnings:
///   languages: [es, en]             # the infos shown: the first of these a warning has
///   geocodes: ["SAME=006037"]       # codes of this place: an area with one of them applies
///   feeds:
///     - url: https://alerts.example.gov/cap.atom
///       ca_file: feeds/ca.pem       # optional: trust only these certificates
///       signers: feeds/signers.pem  # the CA at the root of the feed's signing chain (self-signed)
///       signatures: required        # or optional (the default): see docs/warnings.md "Signatures"
///       interval: 120s
/// ```
extension NodeConfiguration {
    static func readWarnings(_ warnings: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if let list = try warnings.mappings("feeds") {
            guard list.count <= 16 else { throw warnings.error("warnings.feeds: at most 16") }
            var feeds: [WarningFeedSettings] = []
            for var item in list {
                guard let url = try item.string("url") else { throw item.error("warnings.feeds: each feed has a url") }
                if let problem = WarningFeedSettings.problem(url: url) { throw item.error("warnings.feeds.url: \(problem)") }
                var feed = WarningFeedSettings(url: url)
                if let v = try item.string("ca_file") { feed.caFile = v }
                if let v = try item.string("signers") { feed.signersFile = v }
                if let v = try item.string("signatures") {
                    switch v {
                    case "optional": feed.signaturesRequired = false
                    case "required": feed.signaturesRequired = true
                    default: throw item.error("warnings.feeds.signatures: required or optional")
                    }
                }
                if feed.signaturesRequired && feed.signersFile == nil {
                    throw item.error("warnings.feeds.signatures: required needs signers (a PEM file of the certificates the feed signs with, or their CA)")
                }
                if let v = try item.duration("interval") {
                    guard (5_000_000...86_400_000_000).contains(v) else { throw item.error("warnings.feeds.interval: 5s to 24h (public feeds ask for 120s or more)") }
                    feed.intervalMicroseconds = v
                }
                try item.finish()
                feeds.append(feed)
            }
            config.warningFeeds = feeds
        }
        if let v = try warnings.strings("languages") {
            guard v.count <= 8, v.allSatisfy(Self.isLanguageTag) else {
                throw warnings.error("warnings.languages: at most 8 language tags such as es or en-AU")
            }
            config.projections.warnings.languages = v
        }
        if let v = try warnings.strings("geocodes") {
            var codes: [CAPValue] = []
            for text in v {
                let parts = text.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, parts[0].utf8.count <= 64, parts[1].utf8.count <= 64 else {
                    throw warnings.error("warnings.geocodes: \"\(text)\" is not NAME=VALUE (such as SAME=006037 or EMMA_ID=ES611)")
                }
                codes.append(CAPValue(name: parts[0], value: parts[1]))
            }
            guard codes.count <= 32 else { throw warnings.error("warnings.geocodes: at most 32") }
            config.projections.warnings.geocodes = codes
        }
        try warnings.finish()
    }

    /// RFC 5646's shape, loosely: letters and digits in groups of 1-8 joined by hyphens.
    static func isLanguageTag(_ tag: String) -> Bool {
        let groups = tag.split(separator: "-", omittingEmptySubsequences: false)
        return !groups.isEmpty && groups.count <= 4 && groups.allSatisfy { g in
            (1...8).contains(g.count) && g.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
        }
    }
}
