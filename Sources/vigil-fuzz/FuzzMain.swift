import Foundation

/// The target `VIGIL_FUZZ_TARGET` names, run on one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    FuzzEntry.target(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

enum FuzzEntry {
    static let target: @Sendable ([UInt8]) -> Void = {
        let name = ProcessInfo.processInfo.environment["VIGIL_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTargets.all[name] else {
            FileHandle.standardError.write(Data("vigil-fuzz: VIGIL_FUZZ_TARGET must be one of \(FuzzTargets.all.keys.sorted().joined(separator: ", "))\n".utf8))
            exit(64)
        }
        return target
    }()
}

#if FUZZING
// Built by scripts/fuzz with -sanitize=fuzzer: libFuzzer's driver is the program. SwiftPM links
// an executable's entry as MODULE_main, so that is the name the driver is started under.
typealias ArgumentVector = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<ArgumentVector?>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> Int32) -> Int32

@_cdecl("vigil_fuzz_main")
func fuzzerMain(_ argc: Int32, _ argv: ArgumentVector?) -> Int32 {
    var count = argc
    var vector = argv
    return runFuzzerDriver(&count, &vector) { data, size in fuzzOneInput(data, size) }
}
#else
/// Without the fuzzer (an ordinary build): `vigil-fuzz TARGET PATH...` runs a target over files and
/// directories of inputs (a corpus, or a crash to reproduce).
@main
struct FuzzReplay {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTargets.all[name] else {
            print("usage: vigil-fuzz TARGET PATH...   (targets: \(FuzzTargets.all.keys.sorted().joined(separator: ", ")))")
            exit(64)
        }
        var inputs = 0
        for path in arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            let files = isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 } : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                target(Array(data))
                inputs += 1
            }
        }
        print("vigil-fuzz: \(name): \(inputs) inputs, none broke a promise")
    }
}
#endif
