import Crypto
import Foundation
import Logging
import VigilCore
import VigilEvents
import VigilExposure
import VigilHex
import VigilHubProtocol
import VigilLog
import VigilSystem

/// What the key-file worker needs of the node's state, as of one loop turn: the oldest offer
/// not yet settled, and the exposures already logged (so a file matched again, after a crash
/// between its exposures and its outcome, logs nothing twice).
struct KeyFileJob: Sendable {
    var offer: ExposureBook.KeyFileOffer?
    var known: [String: ExposureKeyMatching.Known]
    /// The key-file worker's appends the log refused so far (`HubUplink`).
    var refusals: UInt64
}

/// Matches the diagnosis-key files the hub's feed offers (docs/hub.md "Diagnosis keys"), beside
/// the node's loop: fetches the file with the box's credential, checks it against the hash the
/// offer named and against the box's own `exposure.verification_keys`, rebuilds the contacts from
/// the log in bounded read transactions, and matches, all of that on a thread of its own
/// (hashing and matching a large file is seconds of CPU on a Pi: never the loop's, never Swift's
/// shared pool). It hands the loop the exposures found and the file's outcome to append, in one
/// turn, and waits until they apply (or the log refuses them) before it takes the next offer.
///
/// - A file that cannot be trusted (another hash, no or a bad signature, too large) or that is
///   older than the contact retention (nothing it could match is kept) is refused, and the
///   refusal logged: it is not fetched again.
/// - Without verification keys the offers wait: the operator who configures keys and restarts
///   has them matched then.
/// - A hub that does not answer, or is busy, is retried with back-off (the next entry point
///   first when one does not answer), without limit: the file is fine, the network is not.
/// - A failure of the box's own (its log unreadable, the matcher) is retried a few times, then
///   the file is refused with the error, so one file cannot hold up every later one.
final class KeyFileWorker: Sendable {
    let sink: HubSink
    let nodeID: UInt64
    let clock: any WallClock
    /// The log the contacts are rebuilt from, in read transactions of the worker's own.
    let log: EventLog
    let choice: HubChoice
    let logger: Logger
    let problems: HubProblems
    let generation: UInt64
    let settings: ExposureContacts.Settings
    let toleranceMicroseconds: UInt64
    /// The keys files must be signed by, or why they could not be read.
    let verifier: Result<ExportSignatureVerifier, VerificationKeyError>
    private let jobs: AsyncStream<KeyFileJob>
    private let offerJob: AsyncStream<KeyFileJob>.Continuation
    /// Tries of one file that failed for a reason of the box's own, before it is refused.
    static let localAttempts = 5

    init(sink: HubSink, nodeID: UInt64, clock: any WallClock, log: EventLog, exposure: ExposureSettings, choice: HubChoice,
         problems: HubProblems, logger: Logger) {
        self.sink = sink
        self.nodeID = nodeID
        self.clock = clock
        self.log = log
        self.choice = choice
        self.problems = problems
        self.generation = sink.generation
        self.logger = logger
        settings = exposure.contacts
        toleranceMicroseconds = exposure.matchToleranceMicroseconds
        do {
            verifier = .success(ExportSignatureVerifier(keys: try ExposureKeyMatching.verificationKeys(exposure.verificationKeys)))
        } catch {
            verifier = .failure(error)
        }
        // Only the newest job matters: it names the oldest offer still open.
        (jobs, offerJob) = AsyncStream.makeStream(of: KeyFileJob.self, bufferingPolicy: .bufferingNewest(1))
    }

    func offer(_ job: KeyFileJob) { offerJob.yield(job) }

    func close() { offerJob.finish() }

    func run() async {
        // The offer handed to the loop last, and the refusal count just after it was appended:
        // until the loop applies its outcome the same offer comes back, and is not matched again
        // unless the log refused one of the appends since.
        var submitted: (sha: String, fileID: UInt64, refusals: UInt64)?
        var retry = HubRetry(.keyFiles, problems: problems)
        var waitingForKeys = false
        for await job in jobs {
            guard let offer = job.offer else { continue }
            // (The same file offered again under a new id is a new offer: the outcome handed over
            // was for the old id, and leaves this one waiting.)
            if let s = submitted, s.sha == offer.sha256Hex, s.fileID == offer.fileID {
                if s.refusals == job.refusals { continue }
                // The log refused the outcome or an exposure before it: back off, then again.
                submitted = nil
                guard await retry.wait(after: HubAppendRefused(), "hub: the log refused a key file's events; retrying", logger) else { return }
            }
            guard case .success(let verifier) = self.verifier, !verifier.keys.isEmpty else {
                if !waitingForKeys {
                    waitingForKeys = true
                    let why = if case .failure(let error) = self.verifier { "\(error)" } else { "no exposure.verification_keys are configured" }
                    logger.warning("hub: key files wait until the box has a key to check them with", metadata: ["reason": "\(why)"])
                }
                continue
            }
            var localFailures = 0
            while !Task.isCancelled {
                let bodies: [EventBody]
                do {
                    bodies = try await settle(offer, known: job.known, verifier: verifier)
                } catch {
                    // The hub is sending its four files at once: not a failure, come back as it
                    // asks (Retry-After: 5), spread out so the boxes do not all come back together.
                    if case .refused(503, let r)? = error as? HubClient.Failure, r.error == "busy" {
                        do { try await Task.sleep(for: .milliseconds(5_000 + Int.random(in: 0..<5_000))) } catch { return }
                        continue
                    }
                    if Self.isLocal(error) {
                        localFailures += 1
                        if localFailures >= Self.localAttempts {
                            bodies = [.exposureKeysMatched(refusal(of: offer, "\(error) (\(localFailures) tries)"))]
                        } else {
                            guard await retry.wait(after: error, "hub: a key file cannot be matched yet; retrying", logger) else { return }
                            continue
                        }
                    } else {
                        guard await retry.wait(after: error, "hub: a key file cannot be fetched yet; retrying", logger) else { return }
                        continue
                    }
                }
                guard !Task.isCancelled else { return }
                let (accepted, refusals) = await sink.appendKeyFileEvents(bodies)
                guard accepted else {
                    guard await retry.wait(after: HubAppendRefused(), "hub: the log refused a key file's events; retrying", logger) else { return }
                    continue
                }
                retry.succeeded()
                submitted = (offer.sha256Hex, offer.fileID, refusals)
                break
            }
        }
    }

    /// Errors of the box's own (not the hub's, not the network's): counted toward a refusal.
    static func isLocal(_ error: any Error) -> Bool {
        !(error is HubClient.Failure)
    }

    private func refusal(of offer: ExposureBook.KeyFileOffer, _ reason: String) -> ExposureKeysMatched {
        logger.warning("hub: a key file was refused", metadata: ["file": "\(offer.fileID)", "name": "\(offer.name)", "reason": "\(reason)"])
        var outcome = ExposureKeysMatched()
        outcome.fileID = offer.fileID
        outcome.sha256 = Data(Hex.decode(offer.sha256Hex) ?? [])
        outcome.name = offer.name
        outcome.refused = reason
        return outcome
    }

    /// The events that settle `offer`: the exposures found (if any), then the outcome.
    func settle(_ offer: ExposureBook.KeyFileOffer, known: [String: ExposureKeyMatching.Known],
                verifier: ExportSignatureVerifier) async throws -> [EventBody] {
        let refused = { (reason: String) -> [EventBody] in [.exposureKeysMatched(self.refusal(of: offer, reason))] }
        let retention = settings.retentionMicroseconds
        let now = clock.nowMicroseconds()
        if now > offer.offeredMicroseconds, now - offer.offeredMicroseconds > retention {
            return refused("offered more than the contact retention ago (\(retention / 86_400_000_000) days): nothing it could match is kept")
        }
        guard offer.bytes <= UInt64(DiagnosisKeyImport.maximumFileBytes) else {
            return refused("\(offer.bytes) bytes, more than an export file can be (\(DiagnosisKeyImport.maximumFileBytes >> 20) MiB)")
        }
        let bin: [UInt8]
        let sig: [UInt8]?
        do {
            guard let b = try await fetch(offer.fileID, signature: false, limit: DiagnosisKeyImport.maximumFileBytes) else {
                return refused("the hub no longer holds this file")
            }
            bin = b
            sig = try await fetch(offer.fileID, signature: true, limit: 64 << 10)
        } catch {
            guard case .tooLarge = error else { throw error }
            return refused("\(error)")
        }
        let source = "hub:" + offer.name
        let (log, settings, tolerance, expected) = (log, settings, toleranceMicroseconds, offer.sha256Hex)
        let checked: Result<(ExposureKeyMatching.Outcome, ImportedDiagnosisKeys), KeyFileUntrusted> = try await Self.onOwnThread {
            let sha = Hex.encode(Array(SHA256.hash(data: bin)))
            guard sha == expected else {
                return .failure(KeyFileUntrusted("export.bin is not the file the hub offered (SHA-256 \(sha.prefix(16))…, offered \(expected.prefix(16))…)"))
            }
            let imported: ImportedDiagnosisKeys
            do {
                imported = try DiagnosisKeyImport.parse(exportBin: bin, exportSig: sig, verifier: verifier,
                                                        binPath: "export.bin", sigPath: "export.sig")
            } catch {
                return .failure(KeyFileUntrusted("\(error)"))
            }
            let contacts = try ExposureKeyMatching.contacts(in: log, settings: settings)
            let matcher = try ExposureMatcher(contacts: contacts, toleranceMicroseconds: tolerance)
            let found = try ExposureKeyMatching.match([(source, imported.file.keys + imported.file.revisedKeys)], matcher: matcher,
                                                      contacts: contacts, known: known)
            return .success((found, imported))
        }
        let (found, imported): (ExposureKeyMatching.Outcome, ImportedDiagnosisKeys)
        switch checked {
        case .failure(let untrusted): return refused(untrusted.reason)
        case .success(let result): (found, imported) = result
        }
        var outcome = ExposureKeysMatched()
        outcome.fileID = offer.fileID
        outcome.sha256 = Data(Hex.decode(offer.sha256Hex) ?? [])
        outcome.name = offer.name
        outcome.keys = UInt32(clamping: imported.file.keys.count + imported.file.revisedKeys.count)
        outcome.matchedIdentifiers = UInt32(clamping: found.matchedIdentifiers)
        outcome.exposures = UInt32(clamping: found.exposures)
        outcome.highRisk = UInt32(clamping: found.highRisk)
        outcome.withdrawn = UInt32(clamping: found.withdrawn)
        if let info = imported.signedBy { outcome.signedBy = "\(info.keyID ?? "") \(info.keyVersion ?? "")".trimmingCharacters(in: .whitespaces) }
        logger.info("hub: key file matched", metadata: ["file": "\(offer.fileID)", "name": "\(offer.name)", "keys": "\(outcome.keys)",
                                                         "exposures": "\(found.exposures)", "high_risk": "\(found.highRisk)"])
        return found.records.map(EventBody.exposureDetected) + [.exposureKeysMatched(outcome)]
    }

    /// A part of the file from the hub in use; nil when the hub says it holds no such file. A hub
    /// that does not answer passes the turn to the next (`HubChoice`); a busy one is asked again
    /// later, and so is any other refusal (a proxy, an older hub): the file itself is not judged.
    private func fetch(_ file: UInt64, signature: Bool, limit: Int) async throws(HubClient.Failure) -> [UInt8]? {
        let (index, hub) = choice.current()
        do {
            let bytes = try await hub.client.keyFilePart(node: nodeID, file: file, signature: signature, limit: limit)
            choice.answered(index)
            return bytes
        } catch {
            if case .refused(404, let r) = error, r.error == "unknown_file" { return nil }
            if case .refused(503, let r) = error, r.error == "busy" { throw error }
            if HubChoice.isNoAnswer(error) { _ = choice.didNotAnswer(index, error) }
            throw error
        }
    }

    /// Runs blocking work (hashing, log reads, matching) on a thread of its own.
    static func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }
}

/// Why a file cannot be trusted (its hash, its signature, its structure): it is refused.
struct KeyFileUntrusted: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
