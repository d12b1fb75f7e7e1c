import ArgumentParser
import Foundation
import VigilEvents
import VigilNode
import VigilRadio
import VigilSystem

struct RadioCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "radio",
        abstract: "The Bluetooth radio: adapters, captures, the shelter key.",
        subcommands: [RadioAdapters.self, RadioReplay.self, RadioKeygen.self])
}

struct RadioAdapters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "adapters", abstract: "List this machine's Bluetooth adapters.")

    func run() async throws {
        try await reportingErrors {
            let adapters: [HCIAdapterInfo]
            do {
                adapters = try listBluetoothAdapters()
            } catch let error as HCIError {
                throw CLIError("\(error)", code: error.noBluetooth ? 69 : 1)
            }
            var out = adapters.isEmpty ? "no Bluetooth adapters\n" : ""
            for a in adapters {
                out += "\(a.name)  \(a.addressText)  \(a.isUp ? "up" : "down")\n"
            }
            FileOutput.standardOutput.write(out)
        }
    }
}

struct RadioReplay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Feed a btsnoop capture through the radio's parsing path (HCI events, scan windows, alert frames).")

    @Argument(help: "The capture (a btsnoop file, e.g. written by `vigil run --capture`, btmon -w or Android).")
    var file: String

    @Option(help: "Scan window for folding reports into ScanHits (e.g. 2s; 0 = one per report).")
    var window: String = "2s"

    @Option(help: "Shelter key file, to verify alert frames in the capture.")
    var keyFile: String?

    @Flag(help: "Print every advertising report (time, address, RSSI, data).")
    var reports = false

    @Flag(help: "Print the summary as JSON.")
    var json = false

    func run() async throws {
        try await reportingErrors {
            guard let windowMicroseconds = HumanDuration.parseMicroseconds(window) else {
                throw CLIError("--window must be a duration such as 2s or 0", code: 64)
            }
            let reader: BTSnoopReader
            do {
                reader = try BTSnoopReader(path: file)
            } catch {
                throw CLIError("\(error)", code: 65)
            }
            var key: [UInt8]?
            if let keyFile {
                guard let text = try? String(contentsOfFile: keyFile, encoding: .utf8), let bytes = hexKey(text) else {
                    throw CLIError("\(keyFile): not a shelter key (64 hex digits)", code: 65)
                }
                key = bytes
            }
            let out = FileOutput.standardOutput
            var summary = try CaptureReplay.run(next: { try reader.next() }, windowMicroseconds: windowMicroseconds,
                                                shelterKey: key) { report in
                guard reports else { return }
                let data = Hex.encode(report.data)
                let rssi = report.rssi == AdvertisingReport.rssiUnavailable ? "n/a" : "\(report.rssi)"
                out.write("\(report.timeMicroseconds) \(formatAddress(report.address)) rssi \(rssi) \(data)\n")
            }
            summary.leftoverBytes = reader.leftoverBytes
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                out.write(String(decoding: try encoder.encode(summary), as: UTF8.self) + "\n")
                return
            }
            var text = "\(summary.records) records (\(summary.sent) sent, \(summary.events) events)"
            text += ", \(summary.reports) advertising reports (\(summary.legacyReports) legacy, \(summary.extendedReports) extended)"
            text += " from \(summary.advertisers) advertisers → \(summary.scanHits) scan hits\n"
            text += "malformed: \(summary.malformedPackets) packets, \(summary.malformedReports) reports, \(summary.malformedAdvertisingData) AD structures"
            text += summary.otherPackets > 0 ? "; \(summary.otherPackets) data packets skipped\n" : "\n"
            let a = summary.air
            text += "vigil frames: \(a.presence) presence, \(a.accepted + a.duplicates) alert, \(a.forged) forged, \(a.stale) stale, \(a.malformed) malformed, \(a.unverifiable) unverifiable (no key)\n"
            for frame in summary.alertFrames { text += "  \(frame)\n" }
            if summary.leftoverBytes > 0 {
                text += "the capture ends with \(summary.leftoverBytes) bytes of a cut record (ignored)\n"
            }
            out.write(text)
        }
    }
}

struct RadioKeygen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Make a new shelter key (copy the same file to every box of the shelter).")

    @Option(help: "Where to write it (mode 0600). Refuses to overwrite an existing key.")
    var out: String

    func run() async throws {
        try await reportingErrors {
            var bytes: [UInt8] = []
            for _ in 0..<4 { withUnsafeBytes(of: secureRandomUInt64()) { bytes += $0 } }
            let text = Hex.encode(bytes) + "\n"
            do throws(SystemError) {
                try FileSystem.createExclusive(out, contents: Array(text.utf8))
            } catch {
                throw CLIError(error.errno == .exists ? "\(out) exists; a shelter key is never overwritten" : "cannot write the key: \(error)",
                               code: 73)
            }
            FileOutput.standardOutput.write("wrote a new shelter key to \(out)\n")
        }
    }
}

/// 64 hex digits → 32 bytes.
func hexKey(_ text: String) -> [UInt8]? {
    guard let bytes = Hex.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count == 32 else { return nil }
    return bytes
}
