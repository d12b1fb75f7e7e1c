import Foundation
import VigilCAP

/// One public warnings feed (`warnings.feeds`): a CAP 1.2 document, or an Atom or RSS index of
/// them, at an https address.
public struct WarningFeedSettings: Sendable, Equatable {
    public var url: String
    /// Certificates to trust instead of the system's (relative paths are in the data directory).
    public var caFile: String?
    /// Every `interval` (default 120 s: what public feeds ask); longer after failures.
    public var intervalMicroseconds: UInt64 = 120_000_000
    /// Certificates (PEM; relative paths are in the data directory) a signature on this feed's
    /// documents must chain to (docs/warnings.md "Signatures").
    public var signersFile: String?
    /// An unsigned document is refused (`signatures: required`); otherwise it is taken, marked
    /// unverified. A signature that does not verify is refused either way.
    public var signaturesRequired = false

    public init(url: String) { self.url = url }
}

extension WarningFeedSettings {
    /// Why `url` cannot be a feed's address, or nil when it can: https only (feeds are read
    /// over TLS), at most 2 KiB.
    public static func problem(url: String) -> String? {
        guard url.utf8.count <= 2_048, let parsed = URL(string: url), parsed.scheme?.lowercased() == "https", parsed.host != nil else {
            return "\"\(url.prefix(200))\" is not an https:// address (feeds are read over TLS only)"
        }
        return nil
    }

    /// The fetcher for this feed: its CA file and its signers file (read and checked by
    /// `CAPSignature.signers`), relative paths in `dataDirectory`. A box and the hub make theirs
    /// here, so both trust exactly the same things for the same settings.
    public func fetcher(dataDirectory: String) throws -> WarningFetcher {
        func path(_ file: String) -> String { file.hasPrefix("/") ? file : dataDirectory + "/" + file }
        let signers: [String] = try signersFile.map { file -> [String] in
            do {
                return try CAPSignature.signers(pem: try String(contentsOfFile: path(file), encoding: .utf8))
            } catch let problem as CAPSignature.SignersProblem {
                throw WarningFetcher.SignatureRefusal(description: "signers \(file): \(problem)")
            }
        } ?? []
        return try WarningFetcher(url: url, caFile: caFile.map(path), signers: signers, signaturesRequired: signaturesRequired)
    }
}
