import Foundation
import Testing

/// The durability promise, tested the hard way: a writer process is SIGKILLed while appending,
/// and every sequence it had printed as acknowledged must be in the log when it is reopened.
@Suite(.serialized) struct CrashTests {
    @Test(arguments: ["deferred-meta", "full"])
    func everyAcknowledgedAppendSurvivesSIGKILL(sync: String) throws {
        let dir = TemporaryDirectory()
        var acknowledged: [UInt64] = []
        // Three kills at different points, appending again to the same log after each.
        for round in 0..<3 {
            let (writer, out) = try CLI.start(["debug", "append-stress", "--data", dir.path, "--sync", sync])
            let reader = out.fileHandleForReading
            var buffer = Data()
            let target = 3_000 * (round + 1)
            var seen = 0
            while seen < target {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                seen = buffer.reduce(0) { $1 == 0x0A ? $0 + 1 : $0 }
            }
            kill(writer.processIdentifier, SIGKILL)
            buffer.append(reader.readDataToEndOfFile()) // lines printed before the kill landed
            writer.waitUntilExit()
            #expect(writer.terminationReason == .uncaughtSignal)
            let text = String(decoding: buffer, as: UTF8.self)
            // Only whole lines count: a line cut by the kill was never fully acknowledged.
            let complete = text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n") ?? text.startIndex)])
            acknowledged += complete.split(separator: "\n").compactMap { UInt64($0) }
        }
        #expect(acknowledged.count >= 18_000)

        let tail = try CLI.run(["log", "tail", "--data", dir.path, "-n", "100000000", "--json", "--kind", "check-in"])
        #expect(tail.status == 0, "\(tail.stderr)")
        #expect(!tail.stderr.contains("unreadable"), "no torn record after a kill")
        var stored = Set<UInt64>()
        for line in tail.lines {
            if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let seq = object["seq"] as? Int {
                stored.insert(UInt64(seq))
            }
        }
        let lost = acknowledged.filter { !stored.contains($0) }
        #expect(lost.isEmpty, "acknowledged but missing after SIGKILL: \(lost.prefix(10))")
    }
}
