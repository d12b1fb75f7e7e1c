#if canImport(Glibc)
import Glibc
#endif
import VigilSystem

/// A value for one of a metric line's context keys.
enum JSONValue {
    case int(Int)
    case double(Double)
    case string(String)
    case bool(Bool)
    case null

    static func optional(_ value: Double?) -> JSONValue { value.map(JSONValue.double) ?? .null }

    var rendered: String {
        switch self {
        case .int(let v): String(v)
        case .double(let v): formatNumber(v)
        case .string(let s): quoteJSON(s)
        case .bool(let b): b ? "true" : "false"
        case .null: "null"
        }
    }
}

/// One JSON line on stdout: the fixed keys first, in a fixed order, then the context keys.
struct MetricLine {
    var metric: String
    var value: Double
    var unit: String
    var baseline: Double? = nil
    var context: [(String, JSONValue)] = []

    /// vigil / baseline, when there is a baseline.
    var ratio: Double? {
        guard let baseline, baseline > 0 else { return nil }
        return value / baseline
    }

    var json: String {
        var fields: [(String, JSONValue)] = [
            ("metric", .string(metric)),
            ("value", .double(value)),
            ("unit", .string(unit)),
            ("baseline", .optional(baseline)),
            ("ratio", .optional(ratio)),
        ]
        fields += context
        return "{" + fields.map { quoteJSON($0.0) + ": " + $0.1.rendered }.joined(separator: ", ") + "}"
    }
}

/// Writes metric lines to stdout, which carries nothing else.
struct Reporter {
    /// Metric names the caller asked for; nil means all.
    let selected: Set<String>?

    func wants(_ metric: String) -> Bool { selected?.contains(metric) ?? true }

    func emit(_ line: MetricLine) {
        guard wants(line.metric) else { return }
        writeAll(line.json + "\n", to: STDOUT_FILENO)
    }

    /// A line that belongs to another metric (a breakdown of it): printed when that one is.
    func emit(_ line: MetricLine, with parent: String) {
        guard wants(parent) || wants(line.metric) else { return }
        writeAll(line.json + "\n", to: STDOUT_FILENO)
    }
}

/// Diagnostics and progress go to stderr.
func progress(_ message: String) {
    writeAll("bench: " + message + "\n", to: STDERR_FILENO)
}

/// Unbuffered, so lines survive a crash and stdout and stderr never interleave mid-line.
/// VigilSystem's write loop; a line that cannot be written has nowhere to be reported.
func writeAll(_ text: String, to fd: Int32) {
    try? VigilSystem.writeAll(text, toDescriptor: fd)
}

/// Numbers as JSON: at most 4 decimals below 100, 1 decimal above; non-finite values become null.
func formatNumber(_ value: Double) -> String {
    guard value.isFinite else { return "null" }
    if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
    let decimals = abs(value) >= 100 ? 1 : 4
    let scale = decimals == 1 ? 10.0 : 10_000.0
    let rounded = (value * scale).rounded() / scale
    if rounded == rounded.rounded(), abs(rounded) < 1e15 { return String(Int64(rounded)) }
    return String(rounded)
}

func quoteJSON(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}
