import Foundation

/// Why a key export could not be imported: reading it, parsing it, or its signature.
public enum DiagnosisKeyImportError: Error, Equatable, Sendable, CustomStringConvertible {
    case unreadable(path: String, detail: String)
    /// A GAEN export.zip: not read directly (see `DiagnosisKeyImport`); unzip it first.
    case zipArchive(path: String)
    case file(path: String, DiagnosisKeyFileError)
    case signature(path: String, ExportSignatureError)

    public var description: String {
        switch self {
        case let .unreadable(path, detail): return "\(path): cannot read: \(detail)"
        case let .zipArchive(path):
            return "\(path): a zip archive; unzip it and import the directory holding export.bin and export.sig"
        case let .file(path, error): return "\(path): \(error)"
        case let .signature(path, error): return "\(path): \(error)"
        }
    }
}

/// A parsed export and how it was authenticated.
public struct ImportedDiagnosisKeys: Sendable {
    public let file: DiagnosisKeyFile
    /// The signature that verified; nil when imported unsigned (explicitly allowed).
    public let signedBy: ExportSignatureInfo?
}

/// Reads a key export as servers publish it, unzipped: a directory holding `export.bin` and
/// `export.sig`, or the path of an `export.bin` with its `export.sig` beside it.
///
/// The signature is checked before the keys are returned; without export.sig the import fails
/// with `.unsigned` unless `allowUnsigned` (an explicit operator choice). A zip archive is
/// recognised and refused with a clear message: GAEN servers deflate their archives, and no
/// inflate implementation is among this package's dependencies.
public enum DiagnosisKeyImport {
    public static let binName = "export.bin"
    public static let sigName = "export.sig"

    public static func load(path: String, verifier: ExportSignatureVerifier, allowUnsigned: Bool = false) throws(DiagnosisKeyImportError) -> ImportedDiagnosisKeys {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .unreadable(path: path, detail: "no such file or directory")
        }
        let binPath: String
        let sigPath: String
        if isDirectory.boolValue {
            binPath = (path as NSString).appendingPathComponent(binName)
            sigPath = (path as NSString).appendingPathComponent(sigName)
        } else {
            binPath = path
            // foo.bin pairs with foo.sig when there is one (several exports in one directory);
            // otherwise with the directory's export.sig.
            let paired = (path as NSString).deletingPathExtension + ".sig"
            sigPath = path.hasSuffix(".bin") && FileManager.default.fileExists(atPath: paired)
                ? paired : ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent(sigName)
        }
        let bin = try read(binPath)
        if bin.starts(with: [0x50, 0x4B, 0x03, 0x04]) { throw .zipArchive(path: binPath) }
        let sig: [UInt8]? = FileManager.default.fileExists(atPath: sigPath) ? try read(sigPath) : nil
        return try parse(exportBin: bin, exportSig: sig, verifier: verifier, allowUnsigned: allowUnsigned, binPath: binPath, sigPath: sigPath)
    }

    /// The same checks on bytes already in memory (`exportSig` nil: no signature file).
    public static func parse(exportBin: [UInt8], exportSig: [UInt8]?, verifier: ExportSignatureVerifier, allowUnsigned: Bool = false,
                             binPath: String = binName, sigPath: String = sigName) throws(DiagnosisKeyImportError) -> ImportedDiagnosisKeys {
        // Structure first: "truncated" or "not an export file" says more than a failed signature.
        let file: DiagnosisKeyFile
        do {
            file = try DiagnosisKeyFile(exportBin: exportBin)
        } catch {
            throw .file(path: binPath, error)
        }
        // Allowed unsigned with no key to check against: a present export.sig is not proof of
        // anything, so it is treated like an absent one rather than failing the import.
        guard let exportSig, !(allowUnsigned && verifier.keys.isEmpty) else {
            guard allowUnsigned else { throw .signature(path: sigPath, .unsigned) }
            return ImportedDiagnosisKeys(file: file, signedBy: nil)
        }
        do {
            let info = try verifier.verify(exportBin: exportBin, exportSig: exportSig)
            return ImportedDiagnosisKeys(file: file, signedBy: info)
        } catch {
            throw .signature(path: sigPath, error)
        }
    }

    /// Export files are a few MB (GAEN servers split batches at ~750k keys ≈ 22 MB); a larger
    /// file is refused before it is read into memory.
    public static let maximumFileBytes = 64 << 20

    private static func read(_ path: String) throws(DiagnosisKeyImportError) -> [UInt8] {
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size > maximumFileBytes {
            throw .unreadable(path: path, detail: "\(size) bytes, more than an export file can be (\(maximumFileBytes >> 20) MiB)")
        }
        do {
            return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw .unreadable(path: path, detail: error.localizedDescription)
        }
    }
}
