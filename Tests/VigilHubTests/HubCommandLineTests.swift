import Foundation
import Testing
import VigilTestSupport

/// Secrets never on `vigil-hub`'s command line (issue 28, finding 8): every user of the machine
/// reads every process's arguments (`ps`, /proc/PID/cmdline).
@Suite struct HubCommandLineTests {
    @Test func aDatabaseURLWithItsPasswordOnTheCommandLineIsRefusedBeforeAnythingConnects() async {
        let directory = TemporaryDirectory()
        let r = await offPool {
            runProcess(HubHarness.binary, ["enroll", "x", "--data", directory.path, "--database-url", "postgres://vigil:s3cret@127.0.0.1:9/vigil"])
        }
        #expect(r.status != 0)
        #expect(r.output.contains("--database-url carries a password"), "\(r.output)")
        #expect(r.output.contains("--database-url-file"), "it says what to do instead: \(r.output)")
    }

    @Test func aDatabaseURLFileThatIsEmptyIsAClearError() async throws {
        let directory = TemporaryDirectory()
        let file = directory.path("db-url")
        try "\n".write(toFile: file, atomically: true, encoding: .utf8)
        let r = await offPool { runProcess(HubHarness.binary, ["enroll", "x", "--data", directory.path, "--database-url-file", file]) }
        #expect(r.status != 0)
        #expect(r.output.contains("the database URL"), "\(r.output)")
    }
}
