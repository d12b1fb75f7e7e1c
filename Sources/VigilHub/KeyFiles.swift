import Crypto
import Foundation
import Logging
import NIOCore
import PostgresNIO
import VigilEvents
import VigilExposure
import VigilHex

/// Diagnosis-key files for every box of the network (docs/hub.md "Diagnosis keys").
///
/// A health authority's signed export (export.bin + export.sig) is added at the hub once; its
/// offer goes on the feed, and every box fetches the file with its own credential, checks the
/// signature against its own verification keys and matches it. The hub checks only that the file
/// is an export and is signed at all: it is not trusted with the keys' authenticity (a box refuses
/// a file its configured keys did not sign), so a compromised hub cannot make exposures up.
public struct KeyFileSummary: Sendable, Equatable {
    public var id: UInt64
    public var name: String
    public var sha256Hex: String
    public var bytes: UInt64
    public var keys: UInt32
    public var addedAt: Date
}

/// What adding a file did.
public enum KeyFileAdded: Sendable, Equatable {
    case added(KeyFileSummary)
    /// The same export.bin was added before (by its SHA-256): nothing was offered again.
    case alreadyHeld(KeyFileSummary)
}

/// Why a key file was not added.
public enum KeyFileRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    case notAnExport(String)
    case unsigned
    case badSignatureFile(String)
    case badName

    public var description: String {
        switch self {
        case .notAnExport(let detail): "not a diagnosis-key export: \(detail)"
        case .unsigned: "no export.sig: boxes match only signed files, so an unsigned one is not offered"
        case .badSignatureFile(let detail): "export.sig: \(detail)"
        case .badName: "the name must be 1 to \(KeyFiles.maximumNameLength) printable characters"
        }
    }
}

public enum KeyFiles {
    public static let maximumNameLength = 120
    /// A signature file holds a few signatures of ~100 bytes: a box reads at most this much.
    public static let maximumSignatureBytes = 64 << 10

    /// Checks an export as the hub can: it parses as one, and it carries a signature file a box
    /// will read. Returns the number of keys (and revised keys) in it.
    public static func check(name: String, exportBin: [UInt8], exportSig: [UInt8]?) throws(KeyFileRefusal) -> UInt32 {
        guard !name.isEmpty, name.count <= maximumNameLength, name.utf8.count <= 4 * maximumNameLength,
              name.unicodeScalars.allSatisfy({ !($0.value < 0x20 || (0x7F...0x9F).contains($0.value)) }) else {
            throw .badName
        }
        guard let exportSig, !exportSig.isEmpty else { throw .unsigned }
        guard exportSig.count <= maximumSignatureBytes else {
            throw .badSignatureFile("\(exportSig.count) bytes, more than \(maximumSignatureBytes >> 10) KiB")
        }
        guard exportBin.count <= DiagnosisKeyImport.maximumFileBytes else {
            throw .notAnExport("\(exportBin.count) bytes, more than \(DiagnosisKeyImport.maximumFileBytes >> 20) MiB")
        }
        do {
            let file = try DiagnosisKeyFile(exportBin: exportBin)
            return UInt32(clamping: file.keys.count + file.revisedKeys.count)
        } catch {
            throw .notAnExport("\(error)")
        }
    }
}

extension HubDatabase {
    /// Stores the file and puts its offer on the feed, in one transaction: a file is held and
    /// offered, or neither. The same export.bin twice is held once. The file goes in before the
    /// feed's lock is taken, so calls for help going on the feed never wait behind megabytes.
    public func addKeyFile(name: String, exportBin: [UInt8], exportSig: [UInt8], keys: UInt32, nowMicroseconds: UInt64) async throws -> KeyFileAdded {
        let sha = Array(SHA256.hash(data: exportBin))
        return try await bounded.withTransaction(logger: logger) { connection -> KeyFileAdded in
            var id: Int64?
            for try await (newID) in try await connection.query("""
                INSERT INTO key_files (name, sha256, export_bin, export_sig, keys)
                VALUES (\(name), \(ByteBuffer(bytes: sha)), \(ByteBuffer(bytes: exportBin)), \(ByteBuffer(bytes: exportSig)), \(Int32(bitPattern: keys)))
                ON CONFLICT (sha256) DO NOTHING
                RETURNING id
                """, logger: logger).decode(Int64.self) { id = newID }
            guard let id else {
                guard let held = try await keyFileSummaries(connection.query("""
                    SELECT id, name, sha256, octet_length(export_bin), keys, added_at FROM key_files WHERE sha256 = \(ByteBuffer(bytes: sha))
                    """, logger: logger)).first else {
                    throw HubError.database("a key file with this SHA-256 is held and not found")
                }
                return .alreadyHeld(held)
            }
            var offer = ExposureKeysOffered()
            offer.fileID = UInt64(id)
            offer.sha256 = Data(sha)
            offer.bytes = UInt64(exportBin.count)
            offer.keys = keys
            offer.name = name
            let (kind, payload) = EventCodec.encode(.exposureKeysOffered(offer))
            try await appendToFeed([NewFeedItem(seq: 0, kind: kind, timeUs: nowMicroseconds, payload: payload)], origin: 0, epoch: 0,
                                   connection)
            return .added(KeyFileSummary(id: UInt64(id), name: name, sha256Hex: Hex.encode(sha), bytes: UInt64(exportBin.count),
                                         keys: keys, addedAt: Date()))
        }
    }

    /// The key files held, newest first (at most `limit`, 1 to 1,000).
    public func keyFiles(limit: Int = 100) async throws -> [KeyFileSummary] {
        let limit = Int64(min(max(limit, 1), 1_000))
        return try await bounded.withConnection { connection in
            try await keyFileSummaries(connection.query("""
                SELECT id, name, sha256, octet_length(export_bin), keys, added_at FROM key_files ORDER BY id DESC LIMIT \(limit)
                """, logger: logger))
        }
    }

    /// One part of a key file (`export.bin` or `export.sig`), nil when the hub does not hold it.
    public func keyFilePart(id: UInt64, signature: Bool) async throws -> ByteBuffer? {
        let query: PostgresQuery = signature
            ? "SELECT export_sig FROM key_files WHERE id = \(Int64(bitPattern: id))"
            : "SELECT export_bin FROM key_files WHERE id = \(Int64(bitPattern: id))"
        for try await (bytes) in try await bounded.query(query, logger: logger).decode(ByteBuffer.self) { return bytes }
        return nil
    }

    private func keyFileSummaries(_ rows: PostgresRowSequence) async throws -> [KeyFileSummary] {
        var files: [KeyFileSummary] = []
        for try await (id, name, sha, bytes, keys, added) in rows.decode((Int64, String, ByteBuffer, Int32, Int32, Date).self) {
            files.append(KeyFileSummary(id: UInt64(id), name: name, sha256Hex: Hex.encode(Array(sha.readableBytesView)),
                                        bytes: UInt64(bytes), keys: UInt32(bitPattern: keys), addedAt: added))
        }
        return files
    }
}
