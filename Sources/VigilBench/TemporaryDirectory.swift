import Foundation

/// Runs `body` with a fresh directory under /tmp and removes it afterwards, also on error.
func withTemporaryDirectory<T>(_ label: String, _ body: (String) throws -> T) throws -> T {
    var template = Array("/tmp/vigil-bench-\(label)-XXXXXX".utf8CString)
    let created = template.withUnsafeMutableBufferPointer { buffer -> String? in
        guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
        return String(cString: base)
    }
    guard let path = created else { throw BenchError("mkdtemp in /tmp failed: errno \(errno)") }
    defer {
        do { try FileManager.default.removeItem(atPath: path) } catch {
            progress("could not remove \(path): \(error)")
        }
    }
    return try body(path)
}
