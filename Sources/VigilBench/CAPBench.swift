import Foundation
import VigilCAP

/// `cap_parse_us`: CPU time to read one CAP 1.2 document of the test corpus
/// (Tests/VigilCAPTests/Corpus: warnings, updates, a cancel, two languages, polygons, circles,
/// geocodes), libxml2 and the decoder together, on one core. Baseline in the same run: libxml2
/// parsing the same documents alone (`CAPReader.parseOnly`), so the ratio is what the bounds,
/// the tree and the strict decoding cost on top of the XML parser.
struct CAPBench {
    static let metric = "cap_parse_us"
    let plan: Plan
    let options: Options
    let reporter: Reporter

    static func corpus() throws -> [[UInt8]] {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/VigilCAPTests/Corpus")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".xml") }.sorted()
        guard !names.isEmpty else { throw BenchError("cap: no documents in \(directory.path)") }
        return try names.map { [UInt8](try Data(contentsOf: directory.appendingPathComponent($0))) }
    }

    func run() throws {
        let documents = try Self.corpus()
        let rounds = options.quick ? 200 : 2_000
        progress("\(Self.metric): \(rounds) rounds of \(documents.count) CAP documents")
        var values: [Double] = []
        var baselines: [Double] = []
        for run in 1...plan.runs {
            var infos = 0
            let start = threadCPUNanoseconds()
            for _ in 0 ..< rounds {
                for bytes in documents {
                    guard let alert = try? CAPReader.read(bytes) else { throw BenchError("cap: a corpus document was refused") }
                    infos &+= alert.infos.count
                }
            }
            let cpu = threadCPUNanoseconds() - start
            values.append(Double(cpu) / 1_000 / Double(rounds * documents.count))

            let baseStart = threadCPUNanoseconds()
            for _ in 0 ..< rounds {
                for bytes in documents where !CAPReader.parseOnly(bytes) { throw BenchError("cap: libxml2 refused a corpus document") }
            }
            let baseCPU = threadCPUNanoseconds() - baseStart
            baselines.append(Double(baseCPU) / 1_000 / Double(rounds * documents.count))
            progress("\(Self.metric) run \(run)/\(plan.runs): \(values.last ?? 0) µs/document; libxml2 alone \(baselines.last ?? 0) µs (\(infos & 0xFF))")
        }
        let bytes = documents.reduce(0) { $0 + $1.count }
        reporter.emit(MetricLine(
            metric: Self.metric, value: median(values) ?? 0, unit: "us/document", baseline: median(baselines),
            context: [
                ("baseline_is", .string("libxml2's xmlCtxtReadMemory and xmlFreeDoc alone over the same documents, µs per document")),
                ("definition", .string("thread CPU per CAP 1.2 document read by CAPReader (libxml2 tree, bounds, strict decode)")),
                ("documents", .int(documents.count)),
                ("mean_document_bytes", .int(bytes / documents.count)),
                ("runs", .int(values.count)),
                ("value_min", .optional(values.min())),
                ("value_max", .optional(values.max())),
            ]))
    }
}
