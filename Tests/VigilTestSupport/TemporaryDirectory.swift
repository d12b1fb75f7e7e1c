import Foundation

/// The tests' one temporary directory: created fresh and empty under /tmp by mkdtemp (unique,
/// mode 0700) and removed with its contents when the value goes away.
///
/// `label` (the test's name by default) only makes the path readable; a long label makes a long
/// path, which tests of path limits rely on. Should mkdtemp fail (a full /tmp), `path` is a unique
/// path that does not exist, so the test fails at its first use of it, saying where.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(_ label: String = #function) {
        let safe = label.filter { $0.isASCII && ($0.isLetter || $0.isNumber) }
        var template = Array("/tmp/vigil-tests-\(safe)-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return "" }
            _ = mkdtemp(base) // on failure the X's stay, naming a directory that is not there
            return String(cString: base)
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// `name` inside the directory.
    public func path(_ name: String) -> String { path + "/" + name }
}

/// Runs `body` with a fresh temporary directory, removed when `body` returns or throws.
public func withTemporaryDirectory<T>(_ label: String = #function,
                                      _ body: (String) async throws -> T) async throws -> T {
    let directory = TemporaryDirectory(label)
    defer { withExtendedLifetime(directory) {} }
    return try await body(directory.path)
}
