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

/// Checks a key export as servers publish it, unzipped: the bytes of `export.bin` and of its
/// `export.sig`. Pure: reading the files (a directory, the .bin/.sig pairing, the size cap) is
/// the caller's (VigilNode's `DiagnosisKeyFiles`), so this module never touches the file system.
///
/// The signature is checked before the keys are returned; without export.sig the import fails
/// with `.unsigned` unless `allowUnsigned` (an explicit operator choice). A zip archive is
/// recognised and refused with a clear message: GAEN servers deflate their archives, and no
/// inflate implementation is among this package's dependencies.
public enum DiagnosisKeyImport {
    public static let binName = "export.bin"
    public static let sigName = "export.sig"

    /// Export files are a few MB (GAEN servers split batches at ~750k keys ≈ 22 MB); a reader
    /// refuses a larger file before reading it into memory.
    public static let maximumFileBytes = 64 << 20

    /// The refusal of a file of `size` bytes, or nil when it is within `maximumFileBytes`.
    public static func sizeRefusal(path: String, size: Int) -> DiagnosisKeyImportError? {
        guard size > maximumFileBytes else { return nil }
        return .unreadable(path: path, detail: "\(size) bytes, more than an export file can be (\(maximumFileBytes >> 20) MiB)")
    }

    /// The checks on the bytes of an export (`exportSig` nil: no signature file); the paths only
    /// name the files in errors.
    public static func parse(exportBin: [UInt8], exportSig: [UInt8]?, verifier: ExportSignatureVerifier, allowUnsigned: Bool = false,
                             binPath: String = binName, sigPath: String = sigName) throws(DiagnosisKeyImportError) -> ImportedDiagnosisKeys {
        if exportBin.starts(with: [0x50, 0x4B, 0x03, 0x04]) { throw .zipArchive(path: binPath) }
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
}
