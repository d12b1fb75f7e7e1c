import AsyncHTTPClient
import Crypto
import Foundation
import Testing
import VigilCore
import VigilEvents
import VigilExposure
import VigilHub
import VigilHubProtocol
import VigilLog
import VigilTestSupport
@testable import VigilNode

/// Diagnosis-key files over the hub's feed (issue 11, item 4): a signed export added at the hub
/// reaches every box, which checks it against its own verification keys and matches it with no
/// manual import; exposures become live once, and a file a box cannot trust is refused there.
@Suite(.serialized) struct KeyFileTests {
    /// The day before the boxes' manual clock starts (2026-01-01T00:00Z), in GAEN intervals.
    static let dayStart = UInt32(1_767_225_600 / 600) - 144

    /// Scan hits of a phone with `tek`, heard every minute for 25 minutes from 10:00 UTC on
    /// `dayStart`, written to the log in `directory` before the node runs.
    static func writeContacts(_ directory: String, tek: TemporaryExposureKey) async throws {
        let log = try EventLog.open(LogConfiguration(directory: directory))
        let schedule = ExposureKeySchedule(tek)
        for m in 0..<25 {
            let seconds = UInt64(dayStart + 60) * 600 + UInt64(m) * 60
            let rpi = try schedule.identifier(forInterval: UInt32(seconds / 600))
            let aem = try schedule.encrypt(AssociatedMetadata(txPower: -12), for: rpi)
            var hit = ScanHit()
            hit.address = 0x40_00_00_00_00_00 | (seconds / 600)
            hit.count = 3
            hit.rssiMin = -55; hit.rssiMax = -51; hit.rssiSum = -159
            hit.firstOffsetUs = 2_000_000
            hit.advertisement.gaenRpi = Data(rpi.bytes)
            hit.advertisement.gaenAem = Data(aem.bytes)
            let (kind, payload) = EventCodec.encode(.scanHit(hit))
            _ = try await log.appendDurably(LogRecord(kind: kind, timeMicroseconds: seconds * 1_000_000, payload: payload), priority: .critical)
        }
        log.close()
    }

    /// A signed export of `keys` (and `revised`) in a new directory under `parent`.
    static func export(_ parent: String, _ name: String, signer: ExportSigner, keys: [DiagnosisKey],
                       revised: [DiagnosisKey] = []) throws -> String {
        let directory = parent + "/" + name
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bin = try DiagnosisKeyFileWriter(signatureInfos: [signer.info]).exportBin(keys: keys, revisedKeys: revised)
        try Data(bin).write(to: URL(fileURLWithPath: directory + "/export.bin"))
        try Data(try signer.signatureFile(for: bin)).write(to: URL(fileURLWithPath: directory + "/export.sig"))
        return directory
    }

    static func exposureEvents(_ node: Node) -> Int {
        var n = 0
        try? node.log.read { txn in
            try txn.forEach(from: 0) { result in
                if case .success(let v) = result, v.kind == UInt32(EventKind.exposureDetected.rawValue) { n += 1 }
                return true
            }
        }
        return n
    }

    @Test func aSignedKeyFileAddedAtTheHubIsMatchedByEveryBoxOnceAndOnlyTrustedKeysCount() async throws {
        let hub = HubHarness("hub-keys")
        try await hub.start()
        defer { Task { await hub.stop() } }
        let files = TemporaryDirectory("key-files")
        try FileManager.default.createDirectory(atPath: files.path, withIntermediateDirectories: true)

        // The health authority's key, which box A trusts; box B trusts another, box C none.
        let authority = ExportSigner(privateKey: P256.Signing.PrivateKey(), keyID: "310", keyVersion: "v1")
        let authorityPEM = files.path + "/authority.pem"
        try authority.privateKey.publicKey.pemRepresentation.write(toFile: authorityPEM, atomically: true, encoding: .utf8)
        let strangerPEM = files.path + "/stranger.pem"
        try P256.Signing.PrivateKey().publicKey.pemRepresentation.write(toFile: strangerPEM, atomically: true, encoding: .utf8)

        let sick = try TemporaryExposureKey(keyData: (0..<16).map { UInt8($0 * 5) }, rollingStartIntervalNumber: Self.dayStart)
        let a = Box("keys-a"), b = Box("keys-b"), c = Box("keys-c")
        a.verificationKeys = [authorityPEM]
        b.verificationKeys = [strangerPEM]
        for (box, name) in [(a, "shelter-a"), (b, "shelter-b"), (c, "shelter-c")] {
            try FileManager.default.createDirectory(atPath: box.directory.path, withIntermediateDirectories: true)
            try await Self.writeContacts(box.directory.path, tek: sick)
            try await box.join(hub, as: name)
            try await box.start()
        }

        // The export: the sick key among 200 others, added at the hub with its CLI.
        let others = try (1...200).map { i in
            DiagnosisKey(key: try TemporaryExposureKey(keyData: (0..<16).map { UInt8(truncatingIfNeeded: $0 * 11 + i * 7) },
                                                       rollingStartIntervalNumber: Self.dayStart))
        }
        let daily = try Self.export(files.path, "daily", signer: authority,
                                    keys: others + [DiagnosisKey(key: sick, transmissionRiskLevel: 5, reportType: .confirmedTest)])
        let added = await offPool { runProcess(HubHarness.binary, ["keys", "add", daily, "--data", hub.hubData, "--name", "2026-01-01 daily"]) }
        #expect(added.status == 0 && added.output.contains("201 keys, offered to every box"), "\(added.output)")
        let again = await offPool { runProcess(HubHarness.binary, ["keys", "add", daily, "--data", hub.hubData]) }
        #expect(again.status == 0 && again.output.contains("already held"), "the same file is held once: \(again.output)")

        // A: matched with no import, one high-risk exposure, live in its state.
        try await a.until("box A matched the file") { $0.projections.exposures.keyFilesMatched == 1 }
        let stateA = try #require(await a.read { n in
            (n.projections.exposures.entries.values.map { ($0.highRisk, $0.source) }, n.projections.exposures.lastKeyFile) })
        #expect(stateA.0.count == 1 && stateA.0.first?.0 == true && stateA.0.first?.1 == "hub:2026-01-01 daily", "\(stateA.0)")
        #expect(stateA.1?.keys == 201 && stateA.1?.exposures == 1 && stateA.1?.refused == "", "\(String(describing: stateA.1))")
        // B: signed by a key it does not trust: refused, nothing found.
        try await b.until("box B refused the file") { $0.projections.exposures.keyFilesRefused == 1 }
        let refusedB = try #require(await b.read { ($0.projections.exposures.lastKeyFile?.refused ?? "", $0.projections.exposures.entries.count) })
        #expect(refusedB.0.contains("signature") && refusedB.1 == 0, "\(refusedB)")
        // C: no key configured: the file waits (`vigil status` says why), and is matched once
        // the operator configures the key and restarts.
        try await c.until("box C holds the offer") { $0.projections.exposures.keyFileOffers.count == 1 }
        let status = await offPool { runProcess(HubHarness.vigilBinary, ["status", "--data", c.directory.path]) }
        #expect(status.output.contains("key files from the hub: 0 matched, 0 refused, 1 waiting")
                && status.output.contains("no exposure.verification_keys are configured"), "\(status.output)")
        try await c.stop()
        c.verificationKeys = [authorityPEM]
        try await c.start()
        try await c.until("box C matched the file once it had the key") { $0.projections.exposures.keyFilesMatched == 1 }
        #expect(await c.read { $0.projections.exposures.highRisk.count } == 1)

        // A restart re-reads the feed from its cursor and replays the log: nothing is matched
        // or logged again.
        try await a.stop()
        try await a.start()
        try await a.waitUntilSynced()
        let afterRestart = try #require(await a.read { (Self.exposureEvents($0), $0.projections.exposures.keyFilesMatched,
                                                      $0.projections.exposures.keyFileOffers.count) })
        #expect(afterRestart == (1, 1, 0), "\(afterRestart)")

        // The authority revokes the key: the revision withdraws the exposure at A.
        let revocation = try Self.export(files.path, "revocation", signer: authority, keys: [],
                                         revised: [DiagnosisKey(key: sick, reportType: .revoked)])
        let revoked = await offPool { runProcess(HubHarness.binary, ["keys", "add", revocation, "--data", hub.hubData]) }
        #expect(revoked.status == 0, "\(revoked.output)")
        try await a.until("box A took the revocation") { $0.projections.exposures.keyFilesMatched == 2 }
        let withdrawn = try #require(await a.read { ($0.projections.exposures.entries.count, $0.projections.exposures.lastKeyFile?.name) })
        #expect(withdrawn.0 == 0 && withdrawn.1 == "revocation", "\(withdrawn)")

        // The hub's list shows both files.
        let list = await offPool { runProcess(HubHarness.binary, ["keys", "list", "--data", hub.hubData]) }
        #expect(list.output.contains("2026-01-01 daily") && list.output.contains("revocation"), "\(list.output)")

        for box in [a, b, c] { try await box.stop() }
    }

    @Test func theHubRefusesAnUnsignedFileAndServesFilesOnlyToEnrolledBoxes() async throws {
        let hub = HubHarness("hub-keys-refusals")
        try await hub.start()
        defer { Task { await hub.stop() } }
        let files = TemporaryDirectory("key-files-refusals")
        try FileManager.default.createDirectory(atPath: files.path, withIntermediateDirectories: true)
        let signer = ExportSigner(privateKey: P256.Signing.PrivateKey(), keyID: "310", keyVersion: "v1")
        let key = try TemporaryExposureKey(keyData: (0..<16).map { UInt8($0) }, rollingStartIntervalNumber: Self.dayStart)
        let signed = try Self.export(files.path, "signed", signer: signer, keys: [DiagnosisKey(key: key)])

        // Unsigned, not an export at all, a signature file too large for a box to read:
        // refused at the hub, nothing offered.
        let unsigned = files.path + "/unsigned"
        try FileManager.default.createDirectory(atPath: unsigned, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: signed + "/export.bin", toPath: unsigned + "/export.bin")
        let noSig = await offPool { runProcess(HubHarness.binary, ["keys", "add", unsigned, "--data", hub.hubData]) }
        #expect(noSig.status != 0 && noSig.output.contains("no export.sig"), "\(noSig.output)")
        let garbage = files.path + "/garbage"
        try FileManager.default.createDirectory(atPath: garbage, withIntermediateDirectories: true)
        try Data("not an export".utf8).write(to: URL(fileURLWithPath: garbage + "/export.bin"))
        try FileManager.default.copyItem(atPath: signed + "/export.sig", toPath: garbage + "/export.sig")
        let notExport = await offPool { runProcess(HubHarness.binary, ["keys", "add", garbage, "--data", hub.hubData]) }
        #expect(notExport.status != 0 && notExport.output.contains("not a diagnosis-key export"), "\(notExport.output)")
        let bigSig = files.path + "/big-sig"
        try FileManager.default.createDirectory(atPath: bigSig, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: signed + "/export.bin", toPath: bigSig + "/export.bin")
        try Data(count: 65 << 10).write(to: URL(fileURLWithPath: bigSig + "/export.sig"))
        let tooBig = await offPool { runProcess(HubHarness.binary, ["keys", "add", bigSig, "--data", hub.hubData]) }
        #expect(tooBig.status != 0 && tooBig.output.contains("export.sig"), "\(tooBig.output)")
        #expect(try await hub.database { try await $0.keyFiles() }.isEmpty)

        let added = await offPool { runProcess(HubHarness.binary, ["keys", "add", signed, "--data", hub.hubData]) }
        #expect(added.status == 0, "\(added.output)")
        let id = try #require(try await hub.database { try await $0.keyFiles() }.first?.id)

        // Anonymous, another box's credential, an unknown file: refused.
        let box = Box("keys-refusals")
        try await box.join(hub, as: "shelter")
        let links = try HubLinks.load(dataDirectory: box.directory.path)
        let credential = try #require(links.hubs.first?.credential)
        let node = try NodeIdentity.load(dataDirectory: box.directory.path)
        let client = try hub.rawClient()
        func get(_ path: String, as node: UInt64, credential: String?) async throws -> (Int, [UInt8]) {
            var request = HTTPClientRequest(url: hub.url + "/api/v1/boxes/\(NodeIDText.format(node))/" + path)
            if let credential { request.headers.add(name: "Authorization", value: "Bearer \(NodeIDText.format(node)).\(credential)") }
            let response = try await client.execute(request, timeout: .seconds(10))
            return (Int(response.status.code), Array(try await response.body.collect(upTo: 1 << 20).readableBytesView))
        }
        #expect(try await get("key-files/\(id)/export.bin", as: node, credential: nil).0 == 401)
        #expect(try await get("key-files/\(id)/export.bin", as: node &+ 1, credential: credential).0 == 401)
        #expect(try await get("key-files/\(id + 1)/export.bin", as: node, credential: credential).0 == 404)
        #expect(try await get("key-files/0/export.bin", as: node, credential: credential).0 == 400)
        #expect(try await get("key-files/\(id)/export.zip", as: node, credential: credential).0 == 404)
        let bin = try await get("key-files/\(id)/export.bin", as: node, credential: credential)
        let binOnDisk = Array(try Data(contentsOf: URL(fileURLWithPath: signed + "/export.bin")))
        #expect(bin.0 == 200 && bin.1 == binOnDisk)
        let sig = try await get("key-files/\(id)/export.sig", as: node, credential: credential)
        let sigOnDisk = Array(try Data(contentsOf: URL(fileURLWithPath: signed + "/export.sig")))
        #expect(sig.0 == 200 && sig.1 == sigOnDisk)
        try await client.shutdown()
    }

    @Test func aBoxRefusesAFileThatIsNotTheOneOfferedOrIsGoneAndLogsWhy() async throws {
        let hub = HubHarness("hub-keys-tampered")
        try await hub.start()
        defer { Task { await hub.stop() } }
        let files = TemporaryDirectory("key-files-tampered")
        try FileManager.default.createDirectory(atPath: files.path, withIntermediateDirectories: true)
        let signer = ExportSigner(privateKey: P256.Signing.PrivateKey(), keyID: "310", keyVersion: "v1")
        let pem = files.path + "/authority.pem"
        try signer.privateKey.publicKey.pemRepresentation.write(toFile: pem, atomically: true, encoding: .utf8)
        let key = try TemporaryExposureKey(keyData: (0..<16).map { UInt8($0 + 9) }, rollingStartIntervalNumber: Self.dayStart)
        let box = Box("keys-tampered")
        box.verificationKeys = [pem]
        try await box.join(hub, as: "shelter")

        // Two files offered while the box is off; then the hub's copy of one is altered (a
        // broken disk, or someone with the database) and the other deleted.
        for name in ["first", "second"] {
            let export = try Self.export(files.path, name, signer: signer, keys: [DiagnosisKey(key: key, transmissionRiskLevel: name == "first" ? 1 : 2)])
            let added = await offPool { runProcess(HubHarness.binary, ["keys", "add", export, "--data", hub.hubData]) }
            #expect(added.status == 0, "\(added.output)")
        }
        try await hub.database { db in
            try await db.client.query("UPDATE key_files SET export_bin = export_bin || '\\x00'::bytea WHERE name = 'first'", logger: quietLogger)
            try await db.client.query("DELETE FROM key_files WHERE name = 'second'", logger: quietLogger)
        }
        try await box.start()
        try await box.until("both files refused") { $0.projections.exposures.keyFilesRefused == 2 }
        let reasons = await offPool { runProcess(HubHarness.vigilBinary, ["log", "tail", "--data", box.directory.path, "-n", "200"]) }
        #expect(reasons.output.contains("\"first\" refused: export.bin is not the file the hub offered"), "\(reasons.output)")
        #expect(reasons.output.contains("\"second\" refused: the hub no longer holds this file"), "\(reasons.output)")
        #expect(await box.read { $0.projections.exposures.entries.isEmpty } == true)
        try await box.stop()
    }
}
