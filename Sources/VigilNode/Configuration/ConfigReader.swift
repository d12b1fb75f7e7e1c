import Foundation
import Yams

/// A configuration problem, located in its file, for a message a volunteer can act on.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public let file: String
    public let line: Int?
    public let message: String
    /// The file is there and could not be read (EIO from a failing card, EACCES, EMFILE): not
    /// a mistake in it, so `vigil run` exits EX_IOERR (74), which its unit restarts, and not
    /// EX_CONFIG (78), which it does not.
    public let unreadable: Bool

    public init(file: String, line: Int?, message: String, unreadable: Bool = false) {
        self.file = file
        self.line = line
        self.message = message
        self.unreadable = unreadable
    }

    public var description: String {
        if let line { return "\(file):\(line): \(message)" }
        return "\(file): \(message)"
    }
}

/// Walks a YAML mapping with typed accessors; every error names the file and line, and keys
/// nobody asked for are reported (a typo must not silently fall back to a default).
struct ConfigReader {
    let file: String
    let node: Yams.Node
    let path: String
    private var seen: Set<String> = []

    init(file: String, node: Yams.Node, path: String = "") {
        self.file = file
        self.node = node
        self.path = path
    }

    static func parse(file: String, text: String) throws -> ConfigReader? {
        do {
            guard let root: Yams.Node = try Yams.compose(yaml: text) else { return nil }
            guard root.mapping != nil else {
                throw ConfigurationError(file: file, line: root.mark?.line, message: "expected a mapping of settings at the top level")
            }
            return ConfigReader(file: file, node: root)
        } catch let error as YamlError {
            throw ConfigurationError(file: file, line: Self.line(of: error), message: "not valid YAML: \(Self.problem(of: error))")
        }
    }

    private static func line(of error: YamlError) -> Int? {
        switch error {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): mark.line
        default: nil
        }
    }

    private static func problem(of error: YamlError) -> String {
        switch error {
        case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _): problem
        default: "\(error)"
        }
    }

    func error(_ message: String, at node: Yams.Node? = nil) -> ConfigurationError {
        ConfigurationError(file: file, line: (node ?? self.node).mark?.line, message: message)
    }

    private func name(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    private mutating func value(_ key: String) -> Yams.Node? {
        seen.insert(key)
        return node.mapping?[key]
    }

    mutating func string(_ key: String) throws -> String? {
        guard let v = value(key) else { return nil }
        guard let s = v.scalar?.string else { throw error("\(name(key)) must be a string", at: v) }
        return s
    }

    mutating func strings(_ key: String) throws -> [String]? {
        guard let v = value(key) else { return nil }
        guard let items = v.sequence else { throw error("\(name(key)) must be a list of strings", at: v) }
        return try items.map { item in
            guard let s = item.scalar?.string else { throw error("\(name(key)) must be a list of strings", at: item) }
            return s
        }
    }

    mutating func integer(_ key: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let v = value(key) else { return nil }
        // Decimal, or hexadecimal with 0x (UUIDs and ids read better in hex).
        let text = v.scalar?.string.replacingOccurrences(of: "_", with: "")
        let parsed = text.flatMap { t in t.lowercased().hasPrefix("0x") ? Int(t.dropFirst(2), radix: 16) : Int(t) }
        guard let n = parsed else {
            throw error("\(name(key)) must be a whole number", at: v)
        }
        guard range.contains(n) else { throw error("\(name(key)) must be between \(range.lowerBound) and \(range.upperBound), not \(n)", at: v) }
        return n
    }

    /// A number within `range` (decimals allowed).
    mutating func number(_ key: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let v = value(key) else { return nil }
        guard let s = v.scalar?.string, let d = Double(s), range.contains(d) else {
            throw error("\(name(key)) must be a number from \(range.lowerBound) to \(range.upperBound)", at: v)
        }
        return d
    }

    /// A list of numbers, each within `range`.
    mutating func numbers(_ key: String, in range: ClosedRange<Double>) throws -> [Double]? {
        guard let v = value(key) else { return nil }
        guard let items = v.sequence else { throw error("\(name(key)) must be a list of numbers", at: v) }
        return try items.map { item in
            guard let s = item.scalar?.string, let d = Double(s), range.contains(d) else {
                throw error("\(name(key)) must be a list of numbers from \(range.lowerBound) to \(range.upperBound)", at: item)
            }
            return d
        }
    }

    mutating func fraction(_ key: String) throws -> Double? {
        guard let v = value(key) else { return nil }
        guard let s = v.scalar?.string, let d = Double(s), d >= 0, d < 1 else {
            throw error("\(name(key)) must be a number from 0 up to 1", at: v)
        }
        return d
    }

    mutating func bool(_ key: String) throws -> Bool? {
        guard let v = value(key) else { return nil }
        switch v.scalar?.string.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: throw error("\(name(key)) must be true or false", at: v)
        }
    }

    /// Durations like "250ms", "2s", "5m", "1h", "1500us"; a bare number is seconds.
    mutating func duration(_ key: String) throws -> UInt64? {
        guard let v = value(key) else { return nil }
        guard let s = v.scalar?.string, let us = HumanDuration.parseMicroseconds(s) else {
            throw error("\(name(key)) must be a duration such as 250ms, 2s or 5m", at: v)
        }
        return us
    }

    /// Sizes like "64MiB", "8GiB", "512KiB"; a bare number is bytes.
    mutating func size(_ key: String, allowZero: Bool = false) throws -> Int? {
        guard let v = value(key) else { return nil }
        if allowZero, v.scalar?.string == "0" { return 0 }
        let units: [(String, Int)] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
        guard let s = v.scalar?.string else { throw error("\(name(key)) must be a size such as 64MiB", at: v) }
        for (unit, factor) in units where s.hasSuffix(unit) {
            if let n = Int(s.dropLast(unit.count).trimmingCharacters(in: .whitespaces)), n > 0 { return n * factor }
        }
        if let n = Int(s), n > 0 { return n }
        throw error("\(name(key)) must be a size such as 64MiB or 8GiB", at: v)
    }

    mutating func section(_ key: String) throws -> ConfigReader? {
        guard let v = value(key) else { return nil }
        guard v.mapping != nil else { throw error("\(name(key)) must be a mapping", at: v) }
        return ConfigReader(file: file, node: v, path: name(key))
    }

    /// A list of mappings (`calls.tree`), each read with its own reader.
    mutating func mappings(_ key: String) throws -> [ConfigReader]? {
        guard let v = value(key) else { return nil }
        guard let items = v.sequence else { throw error("\(name(key)) must be a list", at: v) }
        return try items.map { item in
            guard item.mapping != nil else { throw error("\(name(key)) must be a list of mappings", at: item) }
            return ConfigReader(file: file, node: item, path: name(key))
        }
    }

    /// Fails on keys that were never read: they are typos or settings from another version.
    func finish() throws {
        guard let mapping = node.mapping else { return }
        for (key, v) in mapping {
            let k = key.scalar?.string ?? "?"
            if !seen.contains(k) { throw error("unknown setting \(name(k))", at: key.mark == nil ? v : key) }
        }
    }
}

/// Human durations.
public enum HumanDuration {
    /// About 100 years: a longer duration is a typo, and would overflow time arithmetic.
    public static let maximumMicroseconds: Double = 3.2e15

    public static func parseMicroseconds(_ text: String) -> UInt64? {
        let s = text.trimmingCharacters(in: .whitespaces)
        guard let us = parse(s), us <= maximumMicroseconds else { return nil }
        return UInt64(us)
    }

    private static func parse(_ s: String) -> Double? {
        let units: [(String, Double)] = [("us", 1), ("ms", 1_000), ("s", 1_000_000), ("m", 60_000_000), ("h", 3_600_000_000)]
        for (unit, factor) in units where s.hasSuffix(unit) {
            let number = s.dropLast(unit.count)
            // "ms" also ends in "s" and "m"; make sure the rest is a plain number.
            if let value = Double(number), value >= 0, value.isFinite { return value * factor }
        }
        if let seconds = Double(s), seconds >= 0, seconds.isFinite { return seconds * 1_000_000 }
        return nil
    }

    public static func format(microseconds us: UInt64) -> String {
        if us % 3_600_000_000 == 0 && us > 0 { return "\(us / 3_600_000_000)h" }
        if us % 60_000_000 == 0 && us > 0 { return "\(us / 60_000_000)m" }
        if us % 1_000_000 == 0 { return "\(us / 1_000_000)s" }
        if us % 1_000 == 0 { return "\(us / 1_000)ms" }
        return "\(us)us"
    }
}
