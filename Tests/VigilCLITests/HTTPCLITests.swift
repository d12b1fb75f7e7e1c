import Foundation
import Testing

/// `vigil http`: the admin password, tokens and the certificate's fingerprint, and what
/// `vigil status` says of the page (issue 13, item 3).
@Suite struct HTTPCLITests {
    @Test func thePasswordAndTokensAreSetOnTheBoxAndStatusSaysWhereThePageIs() throws {
        let dir = TemporaryDirectory()
        try CLI.run(["run", "--data", dir.path, "--duration", "1s"])

        let short = try CLI.run(["http", "passwd", "--data", dir.path], input: "short\n")
        #expect(short.status == 65 && short.stderr.contains("at least 10 characters"))
        #expect(try CLI.run(["http", "passwd", "--data", dir.path], input: "").status == 64)
        let set = try CLI.run(["http", "passwd", "--data", dir.path], input: "correct horse battery\n")
        #expect(set.status == 0)
        let hash = try String(contentsOfFile: dir.path + "/http/admin.hash", encoding: .utf8)
        #expect(hash.hasPrefix("scrypt$") && !hash.contains("correct horse"))
        let mode = try FileManager.default.attributesOfItem(atPath: dir.path + "/http/admin.hash")[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let token = try CLI.run(["http", "token", "add", "dispatch", "--data", dir.path])
        #expect(token.status == 0 && token.stdout.hasPrefix("vigil_"))
        #expect(try CLI.run(["http", "token", "add", "dispatch", "--data", dir.path]).status == 65, "names are unique")
        #expect(try CLI.run(["http", "token", "add", "not a name", "--data", dir.path]).status == 65)
        let list = try CLI.run(["http", "token", "list", "--data", dir.path])
        #expect(list.stdout.hasPrefix("dispatch\t") && !list.stdout.contains("vigil_"), "listed by name, never the token")
        #expect(try CLI.run(["http", "token", "revoke", "dispatch", "--data", dir.path]).status == 0)
        #expect(try CLI.run(["http", "token", "revoke", "dispatch", "--data", dir.path]).status == 65)

        // No certificate until the page is first served over TLS.
        #expect(try CLI.run(["http", "fingerprint", "--data", dir.path]).status == 69)
        let off = try CLI.run(["status", "--data", dir.path])
        #expect(off.stdout.contains("page: off"))
        let served = try CLI.run(["run", "--data", dir.path, "--duration", "2s", "--http", "127.0.0.1:0"])
        #expect(served.status == 0, "\(served.stderr)")
        let fingerprint = try CLI.run(["http", "fingerprint", "--data", dir.path])
        #expect(fingerprint.status == 0 && fingerprint.stdout.split(separator: ":").count == 32)
        let status = try CLI.run(["status", "--data", dir.path])
        #expect(status.stdout.contains("certificate SHA-256 " + fingerprint.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(try CLI.run(["run", "--data", dir.path, "--duration", "1s", "--http", "nowhere"]).status == 64)
    }
}
