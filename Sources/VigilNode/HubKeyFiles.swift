import Crypto
import Foundation
import Logging
import VigilCore
import VigilEvents
import VigilExposure
import VigilHex
import VigilHubProtocol
import VigilLog

/// What the key-file worker needs of the node's state, as of one loop turn: the oldest offer
/// not yet settled, and the exposures already logged (so a file matched again, after a crash
/// between its exposures and its outcome, logs nothing twice).
struct KeyFileJob: Sendable {
    var offer: ExposureBook.KeyFileOffer?
    var known: [String: ExposureKeyMatching.Known]
    /// Worker appends the log refused so far (`HubUplink`).
    var refusals: UInt64
}

/// Matches the diagnosis-key files the hub's feed offers (README "Hub: diagnosis keys"), beside
/// the node's loop: fetches the file with the box's credential, checks it against the hash the
/// offer named and against the box's own `exposure.verification_keys`, rebuilds the contacts from
/// the log in bounded read transactions, matches on a thread of its own (deriving 144 identifiers
/// per key is seconds of CPU for a large file, never for the loop or Swift's shared pool), and
/// hands the loop the exposures found and the file's outcome to append, in one turn.
///
/// A file that cannot be trusted (another hash, no or a bad signature, no key configured) is
/// refused and the refusal logged: it is not fetched again. A hub that does not answer is retried
/// with back-off and the next hub of the network tried, as the uplink does.
final class KeyFileWorker: @unchecked Sendable {
    let node: Node
    let choice: HubChoice
    let logger: Logger
    let settings: ExposureContacts.Settings
    let toleranceMicroseconds: UInt64
    /// The keys files must be signed by, or why they could not be read (every file is then refused).
    let verifier: Result<ExportSignatureVerifier, NodeError>
    private let jobs: AsyncStream<KeyFileJob>
    private let offerJob: AsyncStream<KeyFileJob>.Continuation

    init(node: Node, choice: HubChoice, logger: Logger) {
        self.node = node
        self.choice = choice
        self.logger = logger
        settings = node.configuration.exposure.contacts
        toleranceMicroseconds = node.configuration.exposure.matchToleranceMicroseconds
        do {
            verifier = .success(ExportSignatureVerifier(keys: try ExposureKeyMatching.verificationKeys(node.configuration.exposure.verificationKeys)))
        } catch {
            verifier = .failure(error)
        }
        // Only the newest job matters: it names the oldest offer still open.
        (jobs, offerJob) = AsyncStream.makeStream(of: KeyFileJob.self, bufferingPolicy: .bufferingNewest(1))
    }

    func offer(_ job: KeyFileJob) { offerJob.yield(job) }

    func close() { offerJob.finish() }

    func run() async {
        // The offer handed to the loop last, until the loop has applied its outcome (or refused it).
        var submitted: (file: UInt64, refusals: UInt64)?
        for await job in jobs {
            guard let offer = job.offer else { continue }
            if let s = submitted, s.file == offer.fileID, s.refusals == job.refusals { continue }
            submitted = nil
            var retry = HubRetry()
            while !Task.isCancelled {
                do {
                    let bodies = try await settle(offer, known: job.known)
                    node.onLoop { node in node.uplink.append(forWorker: bodies) }
                    submitted = (offer.fileID, job.refusals)
                    break
                } catch {
                    guard await retry.wait(after: error, "hub: a key file cannot be matched yet; retrying", logger) else { return }
                }
            }
        }
    }

    /// The events that settle `offer`: the exposures found (if any), then the outcome.
    func settle(_ offer: ExposureBook.KeyFileOffer, known: [String: ExposureKeyMatching.Known]) async throws -> [EventBody] {
        var outcome = ExposureKeysMatched()
        outcome.fileID = offer.fileID
        outcome.sha256 = Data(Hex.decode(offer.sha256Hex) ?? [])
        outcome.name = offer.name
        func refused(_ reason: String) -> [EventBody] {
            logger.warning("hub: a key file was refused", metadata: ["file": "\(offer.fileID)", "name": "\(offer.name)", "reason": "\(reason)"])
            outcome.refused = reason
            return [.exposureKeysMatched(outcome)]
        }
        let verifier: ExportSignatureVerifier
        switch self.verifier {
        case .failure(let error): return refused("the verification keys cannot be read: \(error)")
        case .success(let v):
            guard !v.keys.isEmpty else {
                return refused("no exposure.verification_keys are configured: the box matches only files signed by a key it trusts")
            }
            verifier = v
        }
        guard let bin = try await fetch(offer.fileID, signature: false, limit: DiagnosisKeyImport.maximumFileBytes) else {
            return refused("the hub no longer holds this file")
        }
        let sha = Hex.encode(Array(SHA256.hash(data: bin)))
        guard sha == offer.sha256Hex else {
            return refused("export.bin is not the file the hub offered (SHA-256 \(sha.prefix(16))…, offered \(offer.sha256Hex.prefix(16))…)")
        }
        let sig = try await fetch(offer.fileID, signature: true, limit: 64 << 10)
        let imported: ImportedDiagnosisKeys
        do {
            imported = try DiagnosisKeyImport.parse(exportBin: bin, exportSig: sig, verifier: verifier,
                                                    binPath: "key file \(offer.fileID)", sigPath: "key file \(offer.fileID)")
        } catch {
            return refused("\(error)")
        }
        let source = "hub:" + offer.name
        let keys = imported.file.keys + imported.file.revisedKeys
        let (log, settings, tolerance) = (node.log, settings, toleranceMicroseconds)
        let found: ExposureKeyMatching.Outcome = try await Self.onOwnThread {
            let contacts = try ExposureKeyMatching.contacts(in: log, settings: settings)
            let matcher = try ExposureMatcher(contacts: contacts, toleranceMicroseconds: tolerance)
            return try ExposureKeyMatching.match([(source, keys)], matcher: matcher, contacts: contacts, known: known)
        }
        outcome.keys = UInt32(clamping: keys.count)
        outcome.matchedIdentifiers = UInt32(clamping: found.matchedIdentifiers)
        outcome.exposures = UInt32(clamping: found.exposures)
        outcome.highRisk = UInt32(clamping: found.highRisk)
        outcome.withdrawn = UInt32(clamping: found.withdrawn)
        if let info = imported.signedBy { outcome.signedBy = "\(info.keyID ?? "") \(info.keyVersion ?? "")".trimmingCharacters(in: .whitespaces) }
        logger.info("hub: key file matched", metadata: ["file": "\(offer.fileID)", "name": "\(offer.name)", "keys": "\(keys.count)",
                                                         "exposures": "\(found.exposures)", "high_risk": "\(found.highRisk)"])
        return found.records.map(EventBody.exposureDetected) + [.exposureKeysMatched(outcome)]
    }

    /// A part of the file from the hub in use; nil when the hub says it holds no such file. A hub
    /// that does not answer passes the turn to the next (`HubChoice`) and the error is retried.
    private func fetch(_ file: UInt64, signature: Bool, limit: Int) async throws -> [UInt8]? {
        let (index, hub) = choice.current()
        do {
            let bytes = try await hub.client.keyFilePart(node: node.nodeID, file: file, signature: signature, limit: limit)
            choice.answered(index)
            return bytes
        } catch {
            if case .refused(404, _) = error { return nil }
            if HubChoice.isNoAnswer(error) { _ = choice.didNotAnswer(index, error) }
            throw error
        }
    }

    /// Runs blocking work (log reads, matching) on a thread of its own.
    static func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }
}
