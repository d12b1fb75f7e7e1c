import Foundation
import VigilAccess
import VigilNode

/// Small pieces every section uses: names of kinds and steps, forms with their CSRF field,
/// escaping, times, durations and sizes.
extension PageRenderer {
    static let alertKinds: [(slug: String, name: String)] = [
        ("sos", "SOS"), ("medical", "Medical"), ("fire", "Fire"), ("flood", "Flood"), ("evacuate", "Evacuate"),
        ("road-hazard", "Road hazard"), ("area-hazard", "Area hazard"), ("info", "Information"),
    ]
    static let intervals: [(name: String, value: String, micros: UInt64)] = [
        ("1 hour", "1h", 3_600_000_000), ("2 hours", "2h", 7_200_000_000), ("4 hours", "4h", 14_400_000_000),
        ("8 hours", "8h", 28_800_000_000), ("12 hours", "12h", 43_200_000_000), ("24 hours", "24h", 86_400_000_000),
    ]

    /// The interval choices, with the resident's own selected: added when it is none of them (set
    /// from the CLI, say), so saving the form never changes it unasked.
    static func intervalOptions(current: UInt64) -> String {
        var options = intervals
        if !options.contains(where: { $0.micros == current }), current > 0 {
            options.append((name: duration(current / 1_000_000), value: "\(current / 1_000_000)s", micros: current))
            options.sort { $0.micros < $1.micros }
        }
        return options.map { "<option value=\"\(escape($0.value))\"\($0.micros == current ? " selected" : "")>\(escape($0.name))</option>" }.joined()
    }

    static func kindName(_ slug: String) -> String { alertKinds.first { $0.slug == slug }?.name ?? slug }

    static func stepName(_ step: String) -> String {
        switch step {
        case "none": "fine"
        case "prompt": "asked if OK"
        case "text": "asked again (staff told)"
        case "alarm": "ALARM"
        case "notify": "emergency: contacts told"
        default: step
        }
    }

    static func form(_ action: String, _ viewer: Viewer, hidden: [String: String], button: String, style: String? = nil) -> String {
        var out = "<form method=\"post\" action=\"\(action)\" class=\"inline\">\(csrfField(viewer))"
        for (k, v) in hidden.sorted(by: { $0.key < $1.key }) { out += "<input type=\"hidden\" name=\"\(escape(k))\" value=\"\(escape(v))\">" }
        return out + "<button\(style.map { " class=\"\($0)\"" } ?? "")>\(escape(button))</button></form>"
    }

    static func csrfField(_ viewer: Viewer) -> String {
        "<input type=\"hidden\" name=\"csrf\" class=\"csrf\" value=\"\(escape(viewer.csrf))\">"
    }

    static func escape(_ text: String) -> String { HTMLText.escape(text) }

    static func urlEscape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
    }

    /// `<time>` with the UTC time; the script shows it in the viewer's own zone.
    static func clock(_ us: UInt64) -> String {
        let iso = isoTime(us)
        return "<time datetime=\"\(iso)\">\(iso.replacingOccurrences(of: "T", with: " "))</time>"
    }

    static func isoTime(_ us: UInt64) -> String {
        Date(timeIntervalSince1970: Double(us / 1_000_000)).formatted(.iso8601)
    }

    static func ago(_ us: UInt64, _ now: UInt64) -> String {
        now >= us ? "\(duration((now - us) / 1_000_000)) ago" : "in \(duration((us - now) / 1_000_000))"
    }

    static func ahead(_ us: UInt64, _ now: UInt64) -> String {
        us >= now ? "in \(duration((us - now) / 1_000_000))" : "\(duration((now - us) / 1_000_000)) ago"
    }

    static func duration(_ seconds: UInt64) -> String {
        switch seconds {
        case ..<60: "\(seconds) s"
        case ..<3_600: "\(seconds / 60) min"
        case ..<86_400: "\(seconds / 3_600) h \(seconds % 3_600 / 60) min"
        default: "\(seconds / 86_400) d \(seconds % 86_400 / 3_600) h"
        }
    }

    static func bytes(_ n: UInt64) -> String {
        n >= 1 << 30 ? String(format: "%.1f GiB", Double(n) / Double(1 << 30))
            : n >= 1 << 20 ? String(format: "%.1f MiB", Double(n) / Double(1 << 20)) : "\(n >> 10) KiB"
    }
}
