import ArgumentParser
import Crypto
import Foundation
import VigilCore
import VigilEvents
import VigilExposure
import VigilLog
import VigilNode
import VigilSystem

struct ExposureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exposure",
        abstract: "Exposure contacts (GAEN): import published diagnosis keys, list exposures, derive identifiers.",
        subcommands: [ExposureImport.self, ExposureList.self, ExposureContactsCommand.self, ExposureRPIs.self, ExposurePublish.self])
}

/// The contacts this box recorded, rebuilt from its log (since the last retention).
func loadContacts(_ dir: String, settings: ExposureContacts.Settings) throws -> ExposureContacts {
    do {
        return try ExposureKeyMatching.contacts(in: try openForReading(dir), settings: settings)
    } catch let error as CLIError {
        throw error
    } catch {
        throw CLIError("\(error)")
    }
}

struct ExposureImport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Match published diagnosis keys (export.bin + export.sig) against the identifiers this box heard.",
        discussion: """
        Each PATH is a directory holding export.bin and export.sig, an export.bin, or a directory of such \
        directories. Signatures are checked against the keys in `exposure.verification_keys` (or --key); \
        unsigned files are refused unless --allow-unsigned. Every exposure window found is appended as an \
        exposure-detected event (once: importing a file again adds nothing).
        """)

    @OptionGroup var options: DataOptions

    @Argument(help: "Export directories or export.bin files.")
    var paths: [String]

    @Option(name: .customLong("key"), help: "A public key (PEM) that signs the files; adds to exposure.verification_keys.")
    var keys: [String] = []

    @Flag(help: "Accept files without a valid signature (testing only).")
    var allowUnsigned = false

    @Flag(help: "Print the summary as JSON.")
    var json = false

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            let dir = configuration.dataDirectory
            let verificationKeys: [ExportVerificationKey]
            do {
                verificationKeys = try ExposureKeyMatching.verificationKeys(configuration.exposure.verificationKeys + keys)
            } catch {
                // 66: a key file is missing; 65: it is not a key.
                if case .unreadable? = error as? VerificationKeyError { throw CLIError("\(error)", code: 66) }
                throw CLIError("\(error)", code: 65)
            }
            guard !verificationKeys.isEmpty || allowUnsigned else {
                throw CLIError("no verification keys: set exposure.verification_keys (or --key), or pass --allow-unsigned", code: 64)
            }
            let verifier = ExportSignatureVerifier(keys: verificationKeys)
            let files = try exportFiles(paths)
            guard !files.isEmpty else { throw CLIError("no export files under \(paths.joined(separator: ", "))", code: 66) }

            let contacts = try loadContacts(dir, settings: configuration.exposure.contacts)
            let matcher: ExposureMatcher
            do {
                matcher = try ExposureMatcher(contacts: contacts, toleranceMicroseconds: configuration.exposure.matchToleranceMicroseconds)
            } catch {
                throw CLIError("\(error)")
            }
            // Every file first (verified), then the keys once each (`ExposureKeyMatching`).
            var progress = Progress(total: files.count)
            var summary = ImportSummary(identifiers: matcher.index.count)
            let started = monotonicNanoseconds()
            var imported: [(source: String, keys: [DiagnosisKey])] = []
            for file in files {
                do {
                    let loaded = try DiagnosisKeyFiles.load(path: file, verifier: verifier, allowUnsigned: allowUnsigned)
                    summary.files += 1
                    summary.keys += loaded.file.keys.count + loaded.file.revisedKeys.count
                    summary.skippedKeys += loaded.file.skipped.count
                    imported.append((file, loaded.file.keys + loaded.file.revisedKeys))
                } catch {
                    summary.refused.append("\(error)")
                    FileOutput.standardError.write((progress.terminal ? "\n" : "") + "refused: \(error)\n")
                }
                progress.step(file)
            }
            progress.finish()
            let outcome: ExposureKeyMatching.Outcome
            do {
                outcome = try ExposureKeyMatching.match(imported, matcher: matcher, contacts: contacts,
                                                        known: ExposureKeyMatching.known(try currentState(dir).exposures))
            } catch let error as CLIError {
                throw error
            } catch {
                throw CLIError("\(error)")
            }
            for record in outcome.records {
                try CommandSender.send(.recordExposure(ExposureRecord(record)), dataDirectory: dir)
            }
            summary.matchedIdentifiers = outcome.matchedIdentifiers
            summary.exposures = outcome.exposures
            summary.highRisk = outcome.highRisk
            summary.alreadyKnown = outcome.alreadyKnown
            summary.withdrawn = outcome.withdrawn
            summary.seconds = Double(monotonicNanoseconds() - started) / 1e9
            summary.revoked = Int(matcher.revokedSkipped)
            summary.outsideTolerance = Int(matcher.outsideTolerance)
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                FileOutput.standardOutput.write(String(decoding: try encoder.encode(summary), as: UTF8.self) + "\n")
            } else {
                FileOutput.standardOutput.write(summary.text)
            }
            if !summary.refused.isEmpty {
                throw CLIError("\(summary.refused.count) of \(files.count) files refused (see above)", code: 65)
            }
        }
    }

    /// PATHs expanded: a directory with export.bin is one file; any other directory is searched
    /// (one level) for such directories and .bin files.
    private func exportFiles(_ paths: [String]) throws -> [String] {
        var files: [String] = []
        for path in paths {
            guard FileSystem.exists(path) else { throw CLIError("\(path): no such file or directory", code: 66) }
            if !FileSystem.isDirectory(path) || FileSystem.exists(path + "/" + DiagnosisKeyImport.binName) {
                files.append(path)
                continue
            }
            let entries = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
            for entry in entries {
                let full = path + "/" + entry
                if FileSystem.exists(full + "/" + DiagnosisKeyImport.binName) || entry.hasSuffix(".bin") { files.append(full) }
            }
        }
        return files
    }
}

struct ImportSummary: Encodable {
    var identifiers: Int
    var files = 0
    var keys = 0
    var skippedKeys = 0
    var revoked = 0
    var matchedIdentifiers = 0
    var outsideTolerance = 0
    var exposures = 0
    var highRisk = 0
    var alreadyKnown = 0
    var withdrawn = 0
    var refused: [String] = []
    var seconds = 0.0

    var text: String {
        var out = "\(files) files, \(keys) keys (\(skippedKeys) malformed skipped, \(revoked) revoked) against \(identifiers) identifiers heard"
        out += String(format: " in %.2f s\n", seconds)
        out += "\(matchedIdentifiers) identifiers matched (\(outsideTolerance) more outside the ±2 h tolerance)"
        out += " → \(exposures) new exposure windows, \(highRisk) high risk\(alreadyKnown > 0 ? " (\(alreadyKnown) already recorded)" : "")\n"
        if withdrawn > 0 { out += "\(withdrawn) revoked keys withdrew their earlier exposures\n" }
        if !refused.isEmpty { out += "\(refused.count) files refused\n" }
        return out
    }
}

/// A progress bar on a terminal, a line per file otherwise.
struct Progress {
    let total: Int
    var done = 0
    let terminal = isatty(2) != 0

    mutating func step(_ file: String) {
        done += 1
        if terminal {
            let width = 30
            let filled = total == 0 ? width : done * width / total
            FileOutput.standardError.write("\r[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
                                            + "] \(done)/\(total) files")
        } else {
            FileOutput.standardError.write("import: \(done)/\(total) \(file)\n")
        }
    }

    func finish() { if terminal { FileOutput.standardError.write("\n") } }
}

struct ExposureList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The exposures found so far (within retention).")

    @OptionGroup var options: DataOptions

    @Flag(help: "JSON Lines output.")
    var json = false

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            let book = try currentState(configuration.dataDirectory).exposures
            let entries = book.entries.values.sorted { ($0.firstSeenMicroseconds, $0.sequence) < ($1.firstSeenMicroseconds, $1.sequence) }
            var out = ""
            for e in entries {
                if json {
                    let data = try JSONEncoder().encode(e)
                    out += String(decoding: data, as: UTF8.self) + "\n"
                } else {
                    out += "\(EventFormatting.time(e.firstSeenMicroseconds)) – \(EventFormatting.time(e.lastSeenMicroseconds))  "
                    out += String(format: "%.1f weighted min", e.weightedMinutes) + (e.highRisk ? "  HIGH RISK" : "")
                    out += "  \(e.identifierHex.prefix(8))…  from \(e.source)\n"
                }
            }
            if !json && entries.isEmpty { out = "no exposures found\n" }
            FileOutput.standardOutput.write(out)
        }
    }
}

struct ExposureContactsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "contacts", abstract: "What this box recorded for matching: identifiers heard and their exposure windows.")

    @OptionGroup var options: DataOptions

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            let contacts = try loadContacts(configuration.dataDirectory, settings: configuration.exposure.contacts)
            var byKind: [ExposureContacts.IdentifierKind: (tracks: Int, windows: Int)] = [:]
            for track in contacts.tracks.values {
                let windows = ExposureContacts.windows(track.instances, txPower: nil, settings: contacts.settings).count
                byKind[track.kind, default: (0, 0)].tracks += 1
                byKind[track.kind, default: (0, 0)].windows += windows
            }
            var out = "\(contacts.scanHitsSeen) scan hits read\n"
            for (kind, name) in [(ExposureContacts.IdentifierKind.gaen, "exposure-notification identifiers"),
                                 (.vigilPeer, "Vigil boxes (presence ids)"), (.tag, "configured tags")] {
                let c = byKind[kind] ?? (0, 0)
                out += "\(name): \(c.tracks), in \(c.windows) exposure windows\n"
            }
            FileOutput.standardOutput.write(out)
        }
    }
}

struct ExposureRPIs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rpis",
        abstract: "Print the Rolling Proximity Identifiers of a Temporary Exposure Key (hex, one per line), to check against phones.")

    @Option(help: "The Temporary Exposure Key, 32 hex digits.")
    var tek: String

    @Option(help: "The key's rolling start interval number (10-minute intervals since the epoch).")
    var interval: UInt32

    @Option(help: "How many identifiers (the key's rolling period, 1-144).")
    var count: UInt32 = 144

    func run() async throws {
        try await reportingErrors {
            guard let data = Bytes16(hex: tek) else { throw CLIError("--tek must be 32 hex digits", code: 64) }
            guard (1...Exposure.intervalsPerDay).contains(count) else { throw CLIError("--count must be 1 to 144", code: 64) }
            do {
                let key = try TemporaryExposureKey(keyData: data, rollingStartIntervalNumber: interval, rollingPeriod: count)
                let ids = try RollingProximityIdentifierDeriver().identifiers(of: key)
                FileOutput.standardOutput.write(ids.map(\.hex).joined(separator: "\n") + "\n")
            } catch {
                throw CLIError("\(error)", code: 64)
            }
        }
    }
}

struct ExposurePublish: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Write this box's own Temporary Exposure Keys (the last 14 days) as export.bin (+ export.sig), when the shelter is declared exposed.",
        discussion: "Only the box's own keys leave it; the identifiers it heard never do. The publication is logged.")

    @OptionGroup var options: DataOptions

    @Option(help: "Directory to write export.bin (and export.sig) into; created if needed.")
    var out: String

    @Option(help: "A P-256 private key (PEM) to sign with; without it the file is unsigned.")
    var signingKey: String?

    @Option(help: "verification_key_id to put in the signature (the health authority's scheme).")
    var keyID: String = "vigil"

    @Option(help: "verification_key_version to put in the signature.")
    var keyVersion: String = "v1"

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            let dir = configuration.dataDirectory
            let store = try ExposureKeyStore(directory: dir)
            let now = Exposure.interval(unixSeconds: realtimeMicroseconds() / 1_000_000)
            let days = UInt32(configuration.exposure.contacts.retentionMicroseconds / 86_400_000_000)
            let oldest = now > days * Exposure.intervalsPerDay ? now - days * Exposure.intervalsPerDay : 0
            // Today's key is still in use: GAEN publishes a key once its day is over.
            let keys = store.keys.filter { $0.rollingStartIntervalNumber >= oldest && $0.rollingStartIntervalNumber + $0.rollingPeriod <= now }
            guard !keys.isEmpty else {
                throw CLIError("no finished exposure keys to publish (the box advertises them only with exposure.advertise: true)", code: 66)
            }
            var signer: ExportSigner?
            if let signingKey {
                guard let pem = try? String(contentsOfFile: signingKey, encoding: .utf8),
                      let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
                    throw CLIError("\(signingKey) is not a P-256 private key (PEM)", code: 65)
                }
                signer = ExportSigner(privateKey: key, keyID: keyID, keyVersion: keyVersion)
            }
            let writer = DiagnosisKeyFileWriter(startTimestamp: UInt64(keys[0].rollingStartIntervalNumber) * Exposure.intervalSeconds,
                                                endTimestamp: UInt64(now) * Exposure.intervalSeconds,
                                                signatureInfos: signer.map { [$0.info] } ?? [])
            do {
                let bin = try writer.exportBin(keys: keys.map { DiagnosisKey(key: $0, reportType: .selfReport) })
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                try Data(bin).write(to: URL(fileURLWithPath: out + "/" + DiagnosisKeyImport.binName))
                if let signer {
                    try Data(try signer.signatureFile(for: bin)).write(to: URL(fileURLWithPath: out + "/" + DiagnosisKeyImport.sigName))
                }
            } catch {
                throw CLIError("cannot write the export: \(error)")
            }
            try CommandSender.send(.recordKeysPublished(KeysPublishedRecord(
                keys: UInt32(keys.count), firstInterval: keys.map(\.rollingStartIntervalNumber).min() ?? 0,
                lastInterval: keys.map(\.rollingStartIntervalNumber).max() ?? 0, path: out)), dataDirectory: dir)
            FileOutput.standardOutput.write("published \(keys.count) keys to \(out)\(signer == nil ? " (unsigned)" : "")\n")
        }
    }
}
