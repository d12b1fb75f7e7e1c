import Foundation
import VigilCore
import VigilEvents
import VigilExposure
import VigilHex
import VigilLog

/// Matching diagnosis keys against the contacts this box recorded: one rule for the keys an
/// operator imports (`vigil exposure import`) and for the key files the hub offers (the node's
/// `KeyFileWorker`), so both record the same exposures and neither records one twice.
public enum ExposureKeyMatching {
    /// The contacts this box recorded, rebuilt from its log (what retention left): the raw scan
    /// hits and the compactions' sightings. Two passes: the first finds the compacted spans (a
    /// compaction whose purge was cut short leaves raw hits its sightings already hold), the
    /// second folds. Reads in bounded read transactions, so it may run beside the node's writer.
    public static func contacts(in log: EventLog, settings: ExposureContacts.Settings) throws(LogError) -> ExposureContacts {
        var contacts = ExposureContacts(settings: settings)
        let sightingsKind = UInt32(EventKind.scanSightings.rawValue)
        try LogPaging.forEach(log) { result in
            // Only the kind is looked at: the pass costs a cursor walk, not a decode per record.
            guard case .success(let view) = result, view.kind == sightingsKind,
                  case .event(let e) = Replay.input(result), case .scanSightings(let s) = e.body else { return }
            contacts.noteCompaction(s)
        }
        try LogPaging.forEach(log) { result in
            if case .event(let e) = Replay.input(result) { contacts.apply(e) }
        }
        return contacts
    }

    /// An exposure already in the log, as far as matching needs it: the same window with the same
    /// score is not recorded again.
    public struct Known: Sendable, Equatable {
        public var highRisk: Bool
        public var weightedMinutesMilli: Int
        public var diagnosisKeyHex: String?
    }

    /// The exposures the book holds, by `ExposureBook.key`.
    public static func known(_ book: ExposureBook) -> [String: Known] {
        book.entries.mapValues {
            Known(highRisk: $0.highRisk, weightedMinutesMilli: Int(($0.weightedMinutes * 1_000).rounded()), diagnosisKeyHex: $0.diagnosisKeyHex)
        }
    }

    /// What a match found: the events to log, in order, and the counts people are shown.
    public struct Outcome: Sendable {
        /// Withdrawals (revoked keys) first, then the new exposure windows.
        public var records: [ExposureDetected] = []
        /// Distinct keys considered (a key in several files counts once).
        public var keys = 0
        public var matchedIdentifiers = 0
        public var exposures = 0
        public var highRisk = 0
        public var alreadyKnown = 0
        public var withdrawn = 0
    }

    /// Matches the keys of `files` (in the order given: the same key in a daily and an hourly
    /// batch, or revised later, counts as it was last seen) and returns what to log. A revoked key
    /// withdraws the exposures it produced before; a window in `known` with the same score is
    /// left out, so matching the same file again logs nothing.
    public static func match(_ files: [(source: String, keys: [DiagnosisKey])], matcher: ExposureMatcher, contacts: ExposureContacts,
                             known: [String: Known]) throws(ExposureCryptoError) -> Outcome {
        var latest: [TemporaryExposureKey: (key: DiagnosisKey, source: String)] = [:]
        for file in files {
            for k in file.keys { latest[k.key] = (k, file.source) }
        }
        var known = known
        var outcome = Outcome()
        outcome.keys = latest.count
        for (k, source) in latest.values.sorted(by: { $0.key.key.keyData < $1.key.key.keyData }) where k.isRevoked {
            let hex = k.key.keyData.hex
            guard known.values.contains(where: { $0.diagnosisKeyHex == hex }) else { continue }
            var withdrawal = ExposureDetected()
            withdrawal.withdrawn = true
            withdrawal.diagnosisKey = Data(k.key.keyData.bytes)
            withdrawal.source = source
            outcome.records.append(withdrawal)
            known = known.filter { $0.value.diagnosisKeyHex != hex }
            outcome.withdrawn += 1
        }
        let bySource = Dictionary(grouping: latest.values, by: \.source)
        for source in bySource.keys.sorted() {
            let matches = try matcher.match(bySource[source, default: []].map(\.key))
            outcome.matchedIdentifiers += matches.count
            for x in ExposureMatcher.detections(matches, contacts: contacts, source: source) {
                let key = ExposureBook.key(identifier: x.identifier, firstSeen: x.firstSeenUs)
                if let existing = known[key], existing.highRisk == x.highRisk, existing.weightedMinutesMilli == Int(x.weightedMinutesMilli) {
                    outcome.alreadyKnown += 1
                    continue
                }
                outcome.records.append(x)
                known[key] = Known(highRisk: x.highRisk, weightedMinutesMilli: Int(x.weightedMinutesMilli), diagnosisKeyHex: Hex.encode(x.diagnosisKey))
                outcome.exposures += 1
                if x.highRisk { outcome.highRisk += 1 }
            }
        }
        return outcome
    }

    /// The verification keys of `exposure.verification_keys` (PEM files), read and parsed.
    public static func verificationKeys(_ paths: [String]) throws(VerificationKeyError) -> [ExportVerificationKey] {
        var keys: [ExportVerificationKey] = []
        for path in paths {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw .unreadable(path: path) }
            do {
                keys.append(try ExportVerificationKey(pem: text))
            } catch {
                throw .invalid(path: path, detail: "\(error)")
            }
        }
        return keys
    }
}

/// A verification key that cannot be used.
public enum VerificationKeyError: Error, Sendable, CustomStringConvertible {
    case unreadable(path: String)
    case invalid(path: String, detail: String)

    public var description: String {
        switch self {
        case .unreadable(let path): "cannot read the verification key \(path)"
        case .invalid(let path, let detail): "\(path): \(detail)"
        }
    }
}
