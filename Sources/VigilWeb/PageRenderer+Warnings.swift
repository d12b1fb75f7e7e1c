import VigilNode

/// The page's public warnings (docs/warnings.md "On the box"): each warning in force here, loudest
/// first, with what to do, where, who issued it and until when. The texts come from a feed and
/// are hostile: already one printable line each (`CAPText.oneLine`), escaped here.
extension PageRenderer {
    static func warnings(_ s: NodeSnapshot) -> String {
        let warnings = s.publicWarnings ?? []
        var out = "<section id=\"warnings\"><h2>Public warnings (\(warnings.count))</h2>"
        guard !warnings.isEmpty else { return out + "<p class=\"quiet\">No public warning for this place.</p></section>" }
        out += "<ul class=\"warnings\">"
        for w in warnings {
            let sounding = w.level == "sounds"
            let label = w.status == "Actual" ? levelName(w.level) : w.status.uppercased() + ": not a real warning"
            out += "<li class=\"warning \(sounding ? "sounds" : w.level == "shown" ? "shown" : "listed")\" data-level=\"\(escape(w.level))\">"
            out += "<p><span class=\"badge\">\(escape(label))</span> <b>\(escape(w.headline ?? w.event))</b></p>"
            if let instruction = w.instruction { out += "<p class=\"instruction\"><b>What to do:</b> \(escape(instruction))</p>" }
            if let description = w.description { out += "<p>\(escape(description))</p>" }
            if !w.areas.isEmpty { out += "<p><b>Area:</b> \(escape(w.areas.joined(separator: "; ")))</p>" }
            out += "<p><small>\(escape(w.event)): \(escape(w.severity)), \(escape(w.urgency)), \(escape(w.certainty)). "
            out += "Issued by \(escape(w.issuer)) \(ago(UInt64(clamping: w.sentMicroseconds), s.timeMicroseconds)); "
            out += "ends \(ahead(UInt64(clamping: w.expiresMicroseconds), s.timeMicroseconds))"
            if let source = w.source { out += "; from \(escape(source))" }
            if let sequence = w.sequence { out += " (<a href=\"/?seq=\(sequence)\">event \(sequence)</a>)" }
            out += ".</small></p></li>"
        }
        return out + "</ul></section>"
    }

    static func levelName(_ level: String) -> String {
        switch level {
        case "sounds": "Sounding"
        case "shown": "Warning"
        default: "For information"
        }
    }
}
