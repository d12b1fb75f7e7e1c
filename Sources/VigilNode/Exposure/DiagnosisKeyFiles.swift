import Foundation
import VigilExposure

/// Reads key exports from the file system for the pure `DiagnosisKeyImport`, which checks bytes
/// and never touches files itself.
///
/// PATH is a directory holding `export.bin` and `export.sig`, or the path of a `.bin` file: a
/// `foo.bin` pairs with `foo.sig` beside it when there is one (several exports in one directory),
/// otherwise with the directory's `export.sig`. A file over `DiagnosisKeyImport.maximumFileBytes`
/// is refused before it is read into memory.
public enum DiagnosisKeyFiles {
    public static func load(path: String, verifier: ExportSignatureVerifier, allowUnsigned: Bool = false) throws(DiagnosisKeyImportError) -> ImportedDiagnosisKeys {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .unreadable(path: path, detail: "no such file or directory")
        }
        let (binPath, sigPath) = isDirectory.boolValue
            ? ((path as NSString).appendingPathComponent(DiagnosisKeyImport.binName), (path as NSString).appendingPathComponent(DiagnosisKeyImport.sigName))
            : (path, signaturePath(forBin: path))
        let bin = try read(binPath)
        let sig: [UInt8]? = FileManager.default.fileExists(atPath: sigPath) ? try read(sigPath) : nil
        return try DiagnosisKeyImport.parse(exportBin: bin, exportSig: sig, verifier: verifier, allowUnsigned: allowUnsigned,
                                            binPath: binPath, sigPath: sigPath)
    }

    /// foo.bin's signature: foo.sig when it exists, else export.sig in the same directory.
    static func signaturePath(forBin path: String) -> String {
        let paired = (path as NSString).deletingPathExtension + ".sig"
        return path.hasSuffix(".bin") && FileManager.default.fileExists(atPath: paired)
            ? paired : ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent(DiagnosisKeyImport.sigName)
    }

    private static func read(_ path: String) throws(DiagnosisKeyImportError) -> [UInt8] {
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int,
           let refusal = DiagnosisKeyImport.sizeRefusal(path: path, size: size) {
            throw refusal
        }
        do {
            return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw .unreadable(path: path, detail: error.localizedDescription)
        }
    }
}
