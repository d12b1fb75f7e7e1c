import Foundation
import VigilEvents
import VigilHubProtocol
import VigilAccess

/// The coordinators' pages as HTML, rendered on the server so they work without JavaScript. One
/// small script of the hub's own (`static/hub.js`, the only script the Content-Security-Policy
/// allows) keeps the overview live: the hub's feed says "changed" over Server-Sent Events and the
/// script swaps in the page's fresh `#live` part; without it, the page reloads every 15 seconds.
/// Every text from a box or a person goes through `escape`.
enum CoordinatorPage {
    static func escape(_ text: String) -> String { HTMLText.escape(text) }

    /// `liveRefreshSeconds`: the page is live (its script follows the hub's changes); without
    /// scripts it reloads this often.
    static func document(title: String, body: String, liveRefreshSeconds: Int? = nil) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        \(liveRefreshSeconds.map { "<noscript><meta http-equiv=\"refresh\" content=\"\($0)\"></noscript>" } ?? "")
        <title>\(escape(title))</title>
        <link rel="stylesheet" href="/static/hub.css">
        \(liveRefreshSeconds == nil ? "" : "<script src=\"/static/hub.js\" defer></script>")
        </head><body>
        \(body)
        </body></html>
        """
    }

    static func signIn(message: String? = nil) -> String {
        document(title: "Vigil hub: sign in", body: """
            <main class="narrow">
            <h1>Vigil hub</h1>
            <p>Coordinators sign in to see every box of the shelter network and to act.</p>
            \(message.map { "<p class=\"error\" id=\"sign-in-error\">\(escape($0))</p>" } ?? "")
            <form method="post" action="/login" id="sign-in">
            <label>Name <input name="name" autocomplete="username" required maxlength="64"></label>
            <label>Password <input name="password" type="password" autocomplete="current-password" required maxlength="256"></label>
            <button type="submit">Sign in</button>
            </form>
            </main>
            """)
    }

    static func message(_ title: String, _ text: String) -> String {
        document(title: title, body: "<main class=\"narrow\"><h1>\(escape(title))</h1><p>\(escape(text))</p><p><a href=\"/\">Back</a></p></main>")
    }

    // MARK: The overview

    static func overview(_ o: HubOverview, coordinator: String, csrf: String, notice: String?) -> String {
        let open = o.openAlerts
        let calls = open.filter(\.isCallForHelp)
        let people = o.boxes.compactMap(\.occupancy).reduce(0, +)
        let body = """
            <header>
            <h1>Vigil hub</h1>
            <form method="post" action="/logout" class="inline"><input type="hidden" name="csrf" value="\(escape(csrf))">
            <span>\(escape(coordinator))</span> <button type="submit">Sign out</button></form>
            </header>
            \(notice.map { "<p class=\"notice\" id=\"notice\">\(escape($0))</p>" } ?? "")
            <div id="live">
            <section class="summary">
            <div class="\(calls.isEmpty ? "ok" : "calling")" id="open-calls"><b>\(calls.count)</b> open call\(calls.count == 1 ? "" : "s") for help</div>
            <div id="box-count"><b>\(o.boxes.filter { !$0.revoked }.count)</b> boxes</div>
            <div id="people"><b>\(people)</b> people heard (estimate)</div>
            <div id="escalation-count"><b>\(o.escalations.count)</b> residents in an escalation</div>
            </section>
            <section><h2>Map</h2>\(map(o))</section>
            <section><h2>Calls for help and alerts</h2>\(alertTable(open, o, csrf: csrf, open: true))\(raiseForm(csrf: csrf))</section>
            <section><h2>Residents in an escalation</h2>\(escalations(o))</section>
            <section><h2>Boxes</h2>\(boxTable(o))</section>
            <section><h2>Diagnosis-key files</h2>\(keyFileTable(o))</section>
            <section><h2>Ended alerts</h2>\(alertTable(Array(o.alerts.filter { !$0.isOpen(at: o.nowMicroseconds) }.prefix(30)), o, csrf: csrf, open: false))</section>
            <footer>As of \(time(o.nowMicroseconds)). This page follows the network live (without scripts it reloads every 15 seconds).</footer>
            </div>
            """
        return document(title: calls.isEmpty ? "Vigil hub" : "(\(calls.count)) Vigil hub: call for help", body: body, liveRefreshSeconds: 15)
    }

    /// The overview's live script: on each "change" from `/events` (and when the stream opens or
    /// reopens, for what changed meanwhile) fetch the page and swap in its `#live` part and title.
    /// Never over a coordinator's work: not while a field in it has the focus or holds something
    /// typed or chosen, nor while a button is being pressed; then after. A fetch that fails is
    /// tried again later and later (0.5 s doubling to 15 s); a signed-out session (a redirect, a
    /// 401) reloads into the sign-in. Where the stream cannot work (no EventSource, or it gave
    /// up: a refusal, the hub gone), the page reloads every 15 s as it does without scripts.
    static let script = """
        "use strict";
        (function () {
          var live = document.getElementById("live");
          if (!live) return;
          function reloadLater() { setTimeout(function () { window.location.reload(); }, 15000 + Math.random() * 5000); }
          if (!window.EventSource || !window.fetch || !window.DOMParser) { reloadLater(); return; }
          var busy = false, again = false, pressing = false, delay = 500;
          function working() {
            var a = document.activeElement;
            if (pressing || (a && live.contains(a) && /^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(a.tagName))) return true;
            var fields = live.querySelectorAll("input, textarea, select");
            for (var i = 0; i < fields.length; i++) {
              var f = fields[i];
              if (f.type === "hidden" || f.type === "submit") continue;
              if (f.tagName === "SELECT") {
                for (var j = 0; j < f.options.length; j++) if (f.options[j].selected !== f.options[j].defaultSelected) return true;
              } else if (f.type === "checkbox" || f.type === "radio") {
                if (f.checked !== f.defaultChecked) return true;
              } else if (f.value !== f.defaultValue) return true;
            }
            return false;
          }
          function refresh() {
            if (busy || working()) { again = true; return; }
            busy = true;
            var failed = false;
            fetch("/", { credentials: "same-origin", cache: "no-store" }).then(function (r) {
              if (r.redirected || r.status === 401) { window.location.reload(); return null; }
              if (!r.ok) { failed = true; return null; }
              return r.text();
            }).then(function (html) {
              if (html === null) return;
              var doc = new DOMParser().parseFromString(html, "text/html");
              var fresh = doc.getElementById("live");
              if (fresh) { live.replaceWith(fresh); live = fresh; document.title = doc.title; delay = 500; }
            }).catch(function () { failed = true; }).finally(function () {
              busy = false;
              if (failed) { again = false; setTimeout(refresh, delay); delay = Math.min(delay * 2, 15000); }
              else if (again) { again = false; setTimeout(refresh, 0); }
            });
          }
          document.addEventListener("pointerdown", function () { pressing = true; });
          document.addEventListener("pointerup", function () { setTimeout(function () { pressing = false; if (again) { again = false; refresh(); } }, 300); });
          document.addEventListener("focusout", function () { setTimeout(function () { if (again) { again = false; refresh(); } }, 0); });
          var source = new EventSource("/events");
          source.addEventListener("change", refresh);
          source.addEventListener("open", refresh);
          source.addEventListener("error", function () { if (source.readyState === EventSource.CLOSED) reloadLater(); });
        })();
        """

    static func alertTable(_ alerts: [HubOverview.AlertRow], _ o: HubOverview, csrf: String, open: Bool) -> String {
        guard !alerts.isEmpty else { return "<p class=\"empty\" id=\"\(open ? "no-open-alerts" : "no-ended-alerts")\">None.</p>" }
        var rows = ""
        for a in alerts {
            let state: String
            if a.cancelled { state = "cancelled" } else if !a.isOpen(at: o.nowMicroseconds) { state = "expired" } else { state = "open" }
            var actions = ""
            if open {
                let coordinatorAcked = a.acknowledgedBy.contains { $0.hasPrefix("coordinator ") }
                if !a.fromCoordinator && !coordinatorAcked {
                    actions += form("/alerts/ack", csrf: csrf, id: a.id, label: "Acknowledge: help is coming", cls: "ack")
                }
                if a.fromCoordinator { actions += form("/alerts/cancel", csrf: csrf, id: a.id, label: "Cancel", cls: "cancel") }
            }
            rows += """
                <tr class="alert \(a.isCallForHelp ? "call" : "") \(state)" data-alert="\(escape(a.id.text))">
                \(td("What", escape(kindName(a.kind))))\(td("Raised by", escape(a.raisedBy)))\(td("Text", escape(a.text)))
                \(td("When", "\(time(a.raisedMicroseconds)) <small>\(ago(a.raisedMicroseconds, o.nowMicroseconds))</small>"))
                \(td("Until", a.expiresAtMicroseconds == 0 ? "never" : time(a.expiresAtMicroseconds)))
                \(td("Acknowledged by", a.acknowledgedBy.isEmpty ? "nobody yet" : escape(a.acknowledgedBy.joined(separator: ", ")), cls: "acks"))
                \(td("State", "\(state) \(actions)"))</tr>
                """
        }
        return """
            <table id="\(open ? "open-alerts" : "ended-alerts")"><thead><tr><th>What</th><th>Raised by</th><th>Text</th><th>When</th>
            <th>Until</th><th>Acknowledged by</th><th></th></tr></thead><tbody>\(rows)</tbody></table>
            """
    }

    /// A cell that carries its column's name, shown beside it on a narrow screen (where each row
    /// becomes a card). `html` is already escaped.
    static func td(_ label: String, _ html: String, cls: String? = nil) -> String {
        "<td data-label=\"\(label)\"\(cls.map { " class=\"\($0)\"" } ?? "")>\(html)</td>"
    }

    static func form(_ action: String, csrf: String, id: AlertID, label: String, cls: String) -> String {
        """
        <form method="post" action="\(action)" class="inline"><input type="hidden" name="csrf" value="\(escape(csrf))">\
        <input type="hidden" name="alert" value="\(escape(id.text))"><button type="submit" class="\(cls)">\(escape(label))</button></form>
        """
    }

    static func raiseForm(csrf: String) -> String {
        let kinds: [AlertKind] = [.evacuate, .fire, .flood, .medical, .areaHazard, .info]
        return """
            <form method="post" action="/alerts" id="raise-alert" class="raise">
            <input type="hidden" name="csrf" value="\(escape(csrf))">
            <h3>Raise an alert for every box</h3>
            <label>What <select name="kind">\(kinds.map { "<option value=\"\(kindSlug($0))\">\(kindName($0))</option>" }.joined())</select></label>
            <label>Text <input name="text" maxlength="200" required placeholder="Move to the upper floor"></label>
            <label>For <select name="hours"><option value="1">1 hour</option><option value="6">6 hours</option>
            <option value="24" selected>24 hours</option><option value="72">3 days</option></select></label>
            <button type="submit">Raise</button>
            </form>
            """
    }

    static func escalations(_ o: HubOverview) -> String {
        guard !o.escalations.isEmpty else { return "<p class=\"empty\" id=\"no-escalations\">None.</p>" }
        let rows = o.escalations.map { e in
            """
            <tr class="escalation step-\(e.step.rawValue)" data-resident="\(escape(e.resident))">\(td("Resident", escape(e.name.isEmpty ? e.resident : e.name)))
            \(td("Box", escape(e.box)))\(td("Room", escape(e.room)))\(td("Step", stepName(e.step)))
            \(td("Since", e.ladderStartMicroseconds == 0 ? "" : "\(time(e.ladderStartMicroseconds)) (\(ago(e.ladderStartMicroseconds, o.nowMicroseconds)))"))</tr>
            """
        }.joined()
        return "<table id=\"escalations\"><thead><tr><th>Resident</th><th>Box</th><th>Room</th><th>Step</th><th>Since</th></tr></thead><tbody>\(rows)</tbody></table>"
    }

    static func boxTable(_ o: HubOverview) -> String {
        guard !o.boxes.isEmpty else { return "<p class=\"empty\">No box has joined yet (vigil-hub enroll NAME).</p>" }
        let rows = o.boxes.map { b in
            """
            <tr class="box\(b.revoked ? " revoked" : "")\(b.openCalls > 0 ? " calling" : "")" data-box="\(escape(b.name))">
            \(td("Box", escape(b.name) + (b.revoked ? " (revoked)" : "")))\(td("Site", escape(b.site ?? "")))
            \(td("Last contact", b.lastContact.map { ago(micros($0), o.nowMicroseconds) } ?? "never"))
            \(td("Backlog", b.backlog.map { "\($0)" } ?? "?", cls: "backlog"))
            \(td("Occupancy", (b.occupancy.map { "\($0)" } ?? "?") + (b.occupancyMinuteMicroseconds.map { " <small>at \(clock($0)) UTC</small>" } ?? ""), cls: "occupancy"))
            \(td("Open calls", "\(b.openCalls)", cls: "calls"))
            \(td("Location", b.latitude.flatMap { lat in b.longitude.map { String(format: "%.4f, %.4f", lat, $0) } } ?? "not given"))</tr>
            """
        }.joined()
        return """
            <table id="boxes"><thead><tr><th>Box</th><th>Site</th><th>Last contact</th><th>Backlog</th><th>Occupancy</th>
            <th>Open calls</th><th>Location</th></tr></thead><tbody>\(rows)</tbody></table>
            """
    }

    /// The key files offered to every box, newest first: each box checks and matches them itself
    /// (what it found stays on the box).
    static func keyFileTable(_ o: HubOverview) -> String {
        guard !o.keyFiles.isEmpty else {
            return "<p class=\"empty\" id=\"key-files-empty\">No diagnosis-key file offered (vigil-hub keys add DIR).</p>"
        }
        let rows = o.keyFiles.map { f in
            """
            <tr class="key-file">\(td("File", escape(f.name)))\(td("Keys", "\(f.keys)"))\(td("Size", "\(f.bytes / 1_024) KiB"))
            \(td("Added", ago(micros(f.addedAt), o.nowMicroseconds)))\(td("SHA-256", "<code>\(escape(String(f.sha256Hex.prefix(16))))…</code>"))</tr>
            """
        }.joined()
        return """
            <table id="key-files"><thead><tr><th>File</th><th>Keys</th><th>Size</th><th>Added</th><th>SHA-256</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            <p class="note">Every box matches these against what it heard, with its own verification keys; exposures stay on the boxes.</p>
            """
    }

    // MARK: The map

    /// Boxes drawn at their positions with no tile server: an equirectangular projection around
    /// the boxes' middle latitude, scaled to fit, with a scale bar. A box with an open call for
    /// help is red; one not heard from for five minutes is grey.
    static func map(_ o: HubOverview, width: Double = 640, height: Double = 360) -> String {
        let placed = o.boxes.filter { !$0.revoked }.compactMap { b -> (HubOverview.Box, Double, Double)? in
            guard let lat = b.latitude, let lon = b.longitude else { return nil }
            return (b, lat, lon)
        }
        guard !placed.isEmpty else { return "<p class=\"empty\" id=\"map-empty\">No box has sent its location (site.location on the box).</p>" }
        let lats = placed.map(\.1), lons = placed.map(\.2)
        let midLat = ((lats.min() ?? 0) + (lats.max() ?? 0)) / 2
        let k = max(0.05, cos(midLat * .pi / 180))
        let spanX = max(((lons.max() ?? 0) - (lons.min() ?? 0)) * k, 0.01)
        let spanY = max((lats.max() ?? 0) - (lats.min() ?? 0), 0.01)
        let margin = 48.0
        let scale = min((width - 2 * margin) / spanX, (height - 2 * margin) / spanY)
        let cx = ((lons.min() ?? 0) + (lons.max() ?? 0)) / 2, cy = midLat
        func point(_ lat: Double, _ lon: Double) -> (Double, Double) {
            (width / 2 + (lon - cx) * k * scale, height / 2 - (lat - cy) * scale)
        }
        var svg = "<svg id=\"map\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"Boxes on a map\">"
        svg += "<rect class=\"sea\" x=\"0\" y=\"0\" width=\"\(Int(width))\" height=\"\(Int(height))\"/>"
        // A scale bar of a round number of kilometres, about a fifth of the width.
        let kmPerPixel = 111.32 / scale
        let target = kmPerPixel * width / 5
        let magnitude = pow(10, floor(log10(target)))
        let km = [1.0, 2, 5, 10].map { $0 * magnitude }.last { $0 <= target } ?? magnitude
        let bar = km / kmPerPixel
        svg += "<g class=\"scale\"><line x1=\"16\" y1=\"\(Int(height) - 16)\" x2=\"\(fmt(16 + bar))\" y2=\"\(Int(height) - 16)\"/>"
        svg += "<text x=\"16\" y=\"\(Int(height) - 22)\">\(km >= 1 ? "\(fmt(km)) km" : "\(fmt(km * 1000)) m")</text></g>"
        for (b, lat, lon) in placed {
            let (x, y) = point(lat, lon)
            let stale = b.lastContact.map { o.nowMicroseconds > micros($0) + 300_000_000 } ?? true
            let cls = b.openCalls > 0 ? "calling" : (stale ? "stale" : "ok")
            svg += "<g class=\"box-dot \(cls)\" data-box=\"\(escape(b.name))\">"
            svg += "<title>\(escape(b.name)): \(b.occupancy.map { "\($0) people heard" } ?? "occupancy unknown")\(b.openCalls > 0 ? ", \(b.openCalls) open call(s) for help" : "")</title>"
            svg += "<circle cx=\"\(fmt(x))\" cy=\"\(fmt(y))\" r=\"\(b.openCalls > 0 ? 12 : 8)\"/>"
            svg += "<text x=\"\(fmt(x + 14))\" y=\"\(fmt(y + 4))\">\(escape(b.name))\(b.occupancy.map { " (\($0))" } ?? "")</text></g>"
        }
        return svg + "</svg>"
    }

    static func fmt(_ v: Double) -> String { String(format: "%.1f", v) }

    // MARK: Words

    static func kindName(_ k: AlertKind) -> String {
        switch k {
        case .sos: "SOS"
        case .medical: "Medical"
        case .fire: "Fire"
        case .flood: "Flood"
        case .evacuate: "Evacuate"
        case .roadHazard: "Road hazard"
        case .areaHazard: "Area hazard"
        case .info: "Information"
        case .unspecified, .UNRECOGNIZED: "Alert"
        }
    }

    static func kindSlug(_ k: AlertKind) -> String {
        switch k {
        case .evacuate: "evacuate"
        case .fire: "fire"
        case .flood: "flood"
        case .medical: "medical"
        case .areaHazard: "area-hazard"
        default: "info"
        }
    }

    static func kind(slug: String) -> AlertKind? {
        [AlertKind.evacuate, .fire, .flood, .medical, .areaHazard, .info].first { kindSlug($0) == slug }
    }

    static func stepName(_ s: LadderStep) -> String {
        switch s {
        case .prompt: "asked \"are you OK?\""
        case .text: "no answer: resident and staff texted"
        case .alarm: "alarm sounding"
        case .notify: "emergency: contacts told"
        case .none, .UNRECOGNIZED: "-"
        }
    }

    static func micros(_ date: Date) -> UInt64 { UInt64(max(0, date.timeIntervalSince1970 * 1_000_000)) }

    static func time(_ us: UInt64) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_GB_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        return f.string(from: Date(timeIntervalSince1970: Double(us) / 1e6))
    }

    static func clock(_ us: UInt64) -> String {
        let minutes = (us / 60_000_000) % 1_440
        return String(format: "%02d:%02d", minutes / 60, minutes % 60)
    }

    static func ago(_ us: UInt64, _ now: UInt64) -> String {
        guard now >= us else { return "just now" }
        let s = (now - us) / 1_000_000
        switch s {
        case ..<60: return "\(s) s ago"
        case ..<3_600: return "\(s / 60) min ago"
        case ..<86_400: return "\(s / 3_600) h \(s % 3_600 / 60) min ago"
        default: return "\(s / 86_400) days ago"
        }
    }

    static let stylesheet = """
        body{font:16px/1.4 system-ui,sans-serif;margin:0;color:#111;background:#f6f6f4}
        header{display:flex;justify-content:space-between;align-items:center;padding:8px 16px;background:#1d3557;color:#fff}
        header h1{font-size:20px;margin:0}
        main.narrow{max-width:420px;margin:40px auto;padding:0 16px}
        section{padding:8px 16px}
        h2{font-size:18px;border-bottom:1px solid #ccc}
        label{display:block;margin:8px 0}
        input,select{font:inherit;padding:4px;max-width:100%}
        button{font:inherit;padding:6px 12px;border-radius:4px;border:1px solid #555;background:#fff;cursor:pointer}
        button.ack{background:#c1121f;color:#fff;border-color:#c1121f;font-weight:bold}
        form.inline{display:inline}
        form.raise{margin-top:12px;padding:8px;border:1px solid #ccc;background:#fff;max-width:420px}
        .summary{display:flex;flex-wrap:wrap;gap:12px}
        .summary div{background:#fff;border:1px solid #ccc;padding:8px 12px;border-radius:6px}
        .summary .calling{background:#c1121f;color:#fff}
        table{border-collapse:collapse;width:100%;background:#fff}
        th,td{text-align:left;padding:4px 6px;border-bottom:1px solid #ddd;vertical-align:top}
        tr.call.open{background:#ffe3e3}
        tr.calling td:first-child{font-weight:bold;color:#c1121f}
        .error{color:#c1121f;font-weight:bold}
        .notice{background:#e9f5e9;border:1px solid #7a7;padding:6px 16px;margin:8px 16px}
        #map{width:100%;max-width:640px;height:auto;border:1px solid #aaa}
        #map .sea{fill:#e8eef3}
        #map .box-dot circle{stroke:#fff;stroke-width:2}
        #map .ok circle{fill:#2a9d8f}
        #map .stale circle{fill:#999}
        #map .calling circle{fill:#c1121f}
        #map text{font-size:12px;fill:#111}
        #map .scale line{stroke:#111;stroke-width:2}
        footer{padding:16px;color:#555;font-size:13px}
        @media (max-width:700px){
        table,tbody,tr,td{display:block;width:auto}thead{display:none}
        tr{border-bottom:2px solid #ccc;padding:6px 0}td{border:none;padding:2px 6px}
        td::before{content:attr(data-label)": ";font-weight:bold;color:#555}
        }
        """
}
