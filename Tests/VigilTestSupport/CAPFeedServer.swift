import Foundation

/// `scripts/cap-feed-server`, a local HTTPS server of CAP 1.2 feeds, with a certificate of its
/// own for 127.0.0.1 (docs/warnings.md "Feeds"). It serves the `*.xml` files of `documents`
/// as they are at each request. Stop it before its directory goes.
public final class CAPFeedServer: @unchecked Sendable {
    let process = TestProcess()
    public let port: Int
    /// The certificate a box's feed trusts (`ca_file`).
    public let certificate: String
    /// The directory it serves.
    public let documents: String

    public init(directory: String) async throws {
        documents = directory + "/feed"
        try FileManager.default.createDirectory(atPath: documents, withIntermediateDirectories: true)
        certificate = directory + "/feed-cert.pem"
        let made = runProcess("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                   "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                                                   "-keyout", directory + "/feed-key.pem", "-out", certificate])
        guard made.status == 0 else { throw CAPFeedServerError(description: "openssl: \(made.output)") }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [testsFile("../scripts/cap-feed-server"), "--directory", documents, "--cert", certificate,
                             "--key", directory + "/feed-key.pem"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let line = await offPool { readFirstLine(out) }
        guard let p = listeningPort(in: line) else {
            process.terminate()
            throw CAPFeedServerError(description: "cap-feed-server did not start: \(line)")
        }
        port = p
    }

    public func url(_ path: String) -> String { "https://127.0.0.1:\(port)\(path)" }

    public func stop() {
        process.terminate()
        process.waitUntilExit()
    }

    /// For each path, how many 200 and 304 answers it gave ("200", "304"), and when it last
    /// finished writing a 200 ("last_200_ns", CLOCK_MONOTONIC nanoseconds).
    public func stats() async -> [String: [String: Int]] {
        let certificate = self.certificate, url = self.url("/stats")
        return await offPool {
            let got = runProcess("/usr/bin/curl", ["-sS", "--cacert", certificate, url])
            return (try? JSONDecoder().decode([String: [String: Int]].self, from: Data(got.output.utf8))) ?? [:]
        }
    }
}

public struct CAPFeedServerError: Error, CustomStringConvertible {
    public let description: String
}
