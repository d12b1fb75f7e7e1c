import Foundation
import VigilAccess
import VigilNode

/// The box's page as HTML, rendered on the server from a `NodeSnapshot`: it works without
/// JavaScript (every action is a form), and the small script (`/static/page.js`) only swaps in
/// the sections the live stream sends, rendered by these same functions.
///
/// Two audiences: a viewer (read-only, only where `http.public_view` allows) and staff signed in
/// (forms to act). Forms carry the session's CSRF token; sections sent over the stream leave it
/// empty and the script fills it from the page's `<meta name="csrf">`.
enum PageRenderer {
    /// The page's sections, in order: each is an element whose id the stream names.
    static let sections = ["help", "warnings", "hazards", "lights", "residents", "chats", "exposures", "system"]

    struct Viewer {
        /// Signed-in staff may act.
        var acting: Bool
        /// The session's CSRF token ("" in sections sent over the stream).
        var csrf: String
    }

    static func page(_ s: NodeSnapshot, viewer: Viewer, notice: String? = nil, liveSince: UInt64? = nil) -> String {
        let title = s.past == nil ? "Vigil \(s.nodeID)" : "Vigil \(s.nodeID), as it was"
        var out = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="csrf" content="\(escape(viewer.csrf))">
        <title>\(escape(title))</title>
        <link rel="stylesheet" href="/static/page.css">
        \(s.past == nil ? "<script src=\"/static/page.js\" defer></script>" : "")
        </head><body>
        <header><h1>Vigil <span class="node">\(escape(s.nodeID))</span></h1>
        """
        if let past = s.past {
            let through = past.hasPrefix("right after event") ? "" : " through event \(s.sequence)"
            out += "<p class=\"past\" role=\"status\">Showing the box \(escape(past)), rebuilt from its log\(through). <a href=\"/\">Back to now</a></p>"
        } else {
            out += "<p class=\"live\" id=\"live\" data-sequence=\"\(s.sequence)\">Live: event \(s.sequence), \(clock(s.timeMicroseconds))</p>"
        }
        out += """
        <form class="travel" method="get" action="/"><label>See the box as it was at <input name="at" placeholder="90m ago or 2026-11-24T18:30:00Z" size="28"></label> <button>Show</button></form>
        """
        if viewer.acting {
            out += "<form class=\"signout\" method=\"post\" action=\"/logout\">\(csrfField(viewer))<button>Sign out</button></form>"
        } else {
            out += "<p class=\"signin\"><a href=\"/login\">Sign in to act</a></p>"
        }
        out += "</header>\n"
        if let notice { out += "<p class=\"notice\" id=\"notice\" role=\"status\">\(escape(notice))</p>\n" }
        out += "<main>\n"
        let acting = Viewer(acting: viewer.acting && s.past == nil, csrf: viewer.csrf)
        for name in sections { out += section(name, s, viewer: acting) + "\n" }
        if acting.acting { out += actions(acting) }
        out += "</main></body></html>\n"
        return out
    }

    static func section(_ name: String, _ s: NodeSnapshot, viewer: Viewer) -> String {
        switch name {
        case "lights": lights(s)
        case "help": help(s, viewer: viewer)
        case "warnings": warnings(s)
        case "hazards": hazards(s, viewer: viewer)
        case "residents": residents(s, viewer: viewer)
        case "chats": chats(s, viewer: viewer)
        case "exposures": exposures(s)
        default: system(s)
        }
    }

    // MARK: Sections

    static func lights(_ s: NodeSnapshot) -> String {
        var out = "<section id=\"lights\"><h2>Lights and buzzer</h2><ul class=\"lines\">"
        for o in s.outputs {
            let on = o.pattern != "off"
            out += "<li class=\"line \(escape(o.line))\(on ? " on" : "")\"><span class=\"lamp\" aria-hidden=\"true\"></span>"
            out += "<b>\(escape(o.line))</b> \(escape(o.pattern))"
            if !o.reasons.isEmpty {
                out += "<ul class=\"why\">"
                for r in o.reasons {
                    let events = r.sequences.prefix(5).map { "<a href=\"/?seq=\($0)\">\($0)</a>" }.joined(separator: ", ")
                    out += "<li>because \(escape(r.text))\(events.isEmpty ? "" : " <small>(events \(events))</small>")</li>"
                }
                out += "</ul>"
            }
            out += "</li>"
        }
        return out + "</ul></section>"
    }

    static func help(_ s: NodeSnapshot, viewer: Viewer) -> String {
        let calls = s.alerts.filter { $0.category == "help" }
        let tree = (s.calls ?? []).filter(\.open)
        var out = "<section id=\"help\"><h2>Calls for help (\(max(calls.count, tree.count)))</h2>"
        if calls.isEmpty && tree.isEmpty { return out + "<p class=\"quiet\">No call for help.</p>" + texts(s, viewer: viewer) + "</section>" }
        if !tree.isEmpty {
            out += "<ul class=\"calls\">"
            for c in tree { out += call(c, s, viewer: viewer) }
            out += "</ul>"
        }
        if !calls.isEmpty {
            out += "<ul class=\"alerts\">"
            for a in calls { out += alert(a, s, viewer: viewer) }
            out += "</ul>"
        }
        return out + texts(s, viewer: viewer) + "</section>"
    }

    /// The latest SMS and what the box made of them (staff only: the public view has none).
    static func texts(_ s: NodeSnapshot, viewer: Viewer) -> String {
        guard viewer.acting, let texts = s.texts, !texts.isEmpty else { return "" }
        var out = "<details class=\"texts\"><summary>Texts received (\(texts.count))</summary><ul>"
        for t in texts {
            out += "<li><b>\(escape(t.sender))</b> <q>\(escape(t.text))</q> <small>\(escape(t.outcome)), \(ago(t.receivedMicroseconds, s.timeMicroseconds))</small></li>"
        }
        return out + "</ul></details>"
    }

    /// A call walking the call tree: taken by whom, or how far the tree has gone; staff take it
    /// here, giving their name so everyone told learns who is on the way.
    static func call(_ c: NodeSnapshot.CallView, _ s: NodeSnapshot, viewer: Viewer) -> String {
        var out = "<li class=\"call\(c.takenBy == nil ? " unanswered" : " taken")\" data-call=\"\(escape(c.code))\" data-started=\"\(c.startedMicroseconds)\">"
        // Who needs help, where, and who is coming are for signed-in staff.
        let summary = viewer.acting && !c.summary.isEmpty ? c.summary : c.kind
        out += "<b>\(escape(c.code))</b> \(escape(summary)), \(ago(c.startedMicroseconds, s.timeMicroseconds))"
        if c.fromPhone == true {
            let more = (c.phoneMessages ?? 1) > 1 ? " (\(c.phoneMessages ?? 1) phones' messages)" : ""
            out += "<br><span class=\"waiting\">From a phone, unverified\(more): it is not on the air or at the hub until staff confirm it.</span>"
            if let alert = c.confirmedAlert { out += "<br><span class=\"ok\">Confirmed: alert \(escape(alert)) of the network.</span>" }
            if viewer.acting, let others = c.phoneOthers, !others.isEmpty {
                out += "<br><small>Also in it: " + others.map { "<q>\(escape($0))</q>" }.joined(separator: " ") + "</small>"
            }
            if viewer.acting, c.open {
                for (action, label) in [("confirm", "Confirm: raise it for every box"), ("dismiss", "Dismiss: not a call for help")] {
                    out += "<form method=\"post\" action=\"/act/\(action)\" class=\"inline\">\(csrfField(viewer))"
                    out += "<input type=\"hidden\" name=\"call\" value=\"\(escape(c.code))\">"
                    out += "<label>Your name <input name=\"by\" required maxlength=\"64\" size=\"12\"></label> <button>\(label)</button></form>"
                }
            }
        }
        if let by = c.takenBy {
            out += viewer.acting ? "<br><span class=\"ok\">Taken by \(escape(by))\(c.takenVia.map { " " + escape($0) } ?? "")"
                : "<br><span class=\"ok\">Taken: someone is on the way"
            if let t = c.takenMicroseconds { out += " after \(duration((t &- c.startedMicroseconds) / 1_000_000))" }
            out += ".</span>"
        } else {
            out += "<br><span class=\"waiting\">UNANSWERED: tier \(c.tier), pass \(c.pass); \(c.told) told.</span>"
            if viewer.acting {
                out += "<form method=\"post\" action=\"/act/take\" class=\"inline\">\(csrfField(viewer))"
                out += "<input type=\"hidden\" name=\"call\" value=\"\(escape(c.code))\">"
                out += "<label>Your name <input name=\"by\" required maxlength=\"64\" size=\"12\"></label> <button>I'm on my way</button></form>"
            }
        }
        return out + "</li>"
    }


    static func hazards(_ s: NodeSnapshot, viewer: Viewer) -> String {
        let hazards = s.alerts.filter { $0.category != "help" }
        let road = s.roadHazards
        var out = "<section id=\"hazards\"><h2>Hazards and notices (\(hazards.count + road.count))</h2>"
        if let warning = road.warning {
            out += "<p class=\"waiting\"><b>Warning:</b> \(escape(warning))</p>"
        }
        if road.count > 0 {
            out += "<p>\(road.count) road user\(road.count == 1 ? "" : "s"), work zone\(road.count == 1 ? "" : "s") or jam\(road.count == 1 ? "" : "s") nearby.</p>"
            if !road.hazards.isEmpty {
                out += "<ul class=\"road\">"
                for h in road.hazards {
                    out += "<li data-hazard-kind=\"\(escape(h.kind))\"><b>\(escape(h.kind))</b> at \(String(format: "%.5f, %.5f", h.latitude, h.longitude))"
                    if let heading = h.headingDegrees { out += ", heading \(Int(heading.rounded()))°" }
                    if let speed = h.speedMetersPerSecond { out += String(format: ", %.1f m/s", speed) }
                    out += " <small>(\(escape(h.source)), \(ago(h.lastMicroseconds, s.timeMicroseconds)))</small></li>"
                }
                out += "</ul>"
            }
        }
        if let feed = road.feed { out += feedLine(feed, s) }
        if hazards.isEmpty { return out + (road.count == 0 && road.warning == nil ? "<p class=\"quiet\">No active hazard or notice.</p>" : "") + "</section>" }
        out += "<ul class=\"alerts\">"
        for a in hazards { out += alert(a, s, viewer: viewer) }
        return out + "</ul></section>"
    }

    /// The regional feed as DriveAZ's debug screen shows it: connected or not, the broker, what
    /// came and went, what could not be decoded; the ids seen for signed-in viewers.
    static func feedLine(_ f: HazardFeedStatus, _ s: NodeSnapshot) -> String {
        let k = f.counters
        var out = "<p id=\"hazard-feed\" data-connected=\"\(f.connected)\"><small>Regional feed: \(escape(f.state))"
        if let broker = f.broker { out += " (\(escape(broker)))" }
        out += "; \(k.received) received (\(k.receivedPSM) PSM, \(k.receivedTIM) TIM), undecodable: \(k.undecodablePSM) PSM, \(k.undecodableTIM) TIM"
        out += "; \(k.sent) sent" + (f.vruActive ? ", announcing the people here to vehicles (VRU mode)" : "")
        if k.shed > 0 { out += "; \(k.shed) shed under load" }
        if let error = f.lastError { out += "<br>last error: \(escape(error))" }
        out += "</small></p>"
        if !f.seen.isEmpty {
            out += "<details><summary>Messages seen (\(f.seen.count))</summary><ul class=\"seen\">"
            for m in f.seen { out += "<li>\(escape(m.type)) \(escape(m.id)) <small>\(ago(m.timeMicroseconds, s.timeMicroseconds))</small></li>" }
            out += "</ul></details>"
        }
        return out
    }

    static func alert(_ a: NodeSnapshot.AlertView, _ s: NodeSnapshot, viewer: Viewer) -> String {
        var out = "<li class=\"alert \(escape(a.severity))\" data-alert=\"\(escape(a.id))\" data-raised=\"\(a.raisedMicroseconds)\"><b>\(escape(kindName(a.kind)))</b> "
        out += a.raisedHere ? "raised here" : "heard from another box (\(a.hops) hop\(a.hops == 1 ? "" : "s"))"
        out += ", \(ago(a.raisedMicroseconds, s.timeMicroseconds)); ends \(ahead(a.expiresMicroseconds, s.timeMicroseconds))"
        if !a.text.isEmpty { out += "<br><q>\(escape(a.text))</q>" }
        if let lat = a.latitude, let lon = a.longitude { out += "<br><small>at \(String(format: "%.5f, %.5f", lat, lon))</small>" }
        switch a.acknowledged {
        case "here": out += "<br><span class=\"ok\">Help is coming: acknowledged here.</span>"
        case "elsewhere": out += "<br><span class=\"ok\">Help is coming: another box acknowledged.</span>"
        default:
            if !a.raisedHere && a.category == "help" { out += "<br><span class=\"waiting\">Nobody has answered yet.</span>" }
        }
        out += " <small class=\"id\">\(escape(a.id))</small>"
        if viewer.acting {
            if !a.raisedHere && a.acknowledged == nil {
                out += form("/act/acknowledge", viewer, hidden: ["alert": a.id], button: "Acknowledge: help is coming")
            }
            if a.raisedHere {
                out += form("/act/cancel", viewer, hidden: ["alert": a.id], button: "Cancel this alert", style: "secondary")
            }
        }
        return out + "</li>"
    }

    static func residents(_ s: NodeSnapshot, viewer: Viewer) -> String {
        var out = "<section id=\"residents\"><h2>Residents (\(s.residents.count))</h2>"
        if s.residents.isEmpty { return out + "<p class=\"quiet\">No resident is enrolled.</p></section>" }
        out += "<table><thead><tr><th>Resident</th><th>Step</th><th>Next</th><th>Last check-in</th>\(viewer.acting ? "<th></th>" : "")</tr></thead><tbody>"
        for r in s.residents.sorted(by: { ($0.step == "none" ? 1 : 0, $0.id) < ($1.step == "none" ? 1 : 0, $1.id) }) {
            let name = r.name.isEmpty ? r.id : r.name
            out += "<tr class=\"step-\(escape(r.step))\" data-resident=\"\(escape(r.id))\"><td><b>\(escape(name))</b>"
            if !r.room.isEmpty { out += "<br><small>room \(escape(r.room))</small>" }
            out += "</td><td>\(escape(stepName(r.step)))"
            if r.stepMicroseconds > 0 { out += "<br><small>since \(ago(r.stepMicroseconds, s.timeMicroseconds))</small>" }
            out += "</td><td>"
            if r.paused { out += "paused" } else if let n = r.next {
                out += "\(escape(stepName(n.step))) \(ahead(n.dueMicroseconds, s.timeMicroseconds))"
            } else { out += r.mode == "off" ? "checks off" : "—" }
            out += "</td><td>\(r.lastCheckInMicroseconds.map { ago($0, s.timeMicroseconds) } ?? "never")"
            if let sensor = r.sensor {
                out += "<br><small>heart-rate sensor \(sensor.linked ? (sensor.bonded ? "linked, bonded" : "linked, <strong>unbonded</strong>") : "not linked")"
                if let bpm = sensor.beatsPerMinute, let at = sensor.readingMicroseconds {
                    out += ": \(Int(bpm)) bpm (\(escape(sensor.contact ?? ""))\(sensor.counted == false ? ", not counted" : "")) \(ago(at, s.timeMicroseconds))"
                }
                out += "</small>"
            }
            out += "</td>"
            if viewer.acting {
                out += "<td>" + form("/act/check-in", viewer, hidden: ["resident": r.id], button: "Check in")
                out += " <a href=\"/residents/\(urlEscape(r.id))\">Edit</a></td>"
            }
            out += "</tr>"
        }
        return out + "</tbody></table></section>"
    }

    /// Chats with phones and boxes. Viewers see only how many there are: who wrote what is for
    /// staff. Every line a peer wrote says it is unauthenticated (anyone in radio range can write
    /// anything, under any name).
    static func chats(_ s: NodeSnapshot, viewer: Viewer) -> String {
        let c = s.chats
        var out = "<section id=\"chats\"><h2>Chats (\(c.devices))</h2>"
        if c.devices == 0 { return out + "<p class=\"quiet\">No chat with a phone or another box.</p></section>" }
        out += "<p>\(c.devices) device\(c.devices == 1 ? "" : "s"), \(c.connected) connected now, \(c.unread) with unread messages.</p>"
        guard viewer.acting else { return out + "<p class=\"quiet\">Sign in to read them.</p></section>" }
        out += "<p class=\"warn\">What phones and other boxes write is not authenticated: anyone nearby can write anything.</p><ul class=\"chats\">"
        for v in c.conversations {
            out += "<li data-device=\"\(escape(v.device))\"><b>\(escape(v.device))</b> \(v.connected ? "connected" : "not connected")"
            if !v.unread.isEmpty {
                out += " <span class=\"badge\" title=\"unread messages\">\(escape(v.unread))</span> "
                out += form("/act/chat-open", viewer, hidden: ["device": v.device], button: "Mark read", style: "secondary")
            }
            out += "<ol class=\"lines\">"
            for m in v.messages {
                let who = m.outgoing ? "this box" : "them (unauthenticated)"
                let category = m.category.isEmpty ? "" : " [\(escape(m.category))]"
                let undelivered = m.outgoing && !m.delivered ? " <small>(not delivered)</small>" : ""
                out += "<li class=\"\(m.outgoing ? "out" : "in")\">\(clock(m.timeMicroseconds)) \(who)\(category): \(escape(m.text))\(undelivered)</li>"
            }
            out += "</ol>"
            if v.connected {
                out += "<form method=\"post\" action=\"/act/chat-send\" class=\"inline\">\(csrfField(viewer))"
                out += "<input type=\"hidden\" name=\"device\" value=\"\(escape(v.device))\">"
                out += "<label>Message <input name=\"text\" required maxlength=\"1024\"></label> <button>Send</button></form>"
            }
            out += "</li>"
        }
        if c.devices > c.conversations.count { out += "<li class=\"quiet\">\(c.devices - c.conversations.count) older: <code>vigil chat list</code></li>" }
        return out + "</ul></section>"
    }

    static func exposures(_ s: NodeSnapshot) -> String {
        let x = s.exposures
        var out = "<section id=\"exposures\"><h2>Exposure warnings</h2>"
        if x.highRisk > 0 {
            out += "<p class=\"warn\">\(x.highRisk) high-risk exposure\(x.highRisk == 1 ? "" : "s") found; the latest contact was \(x.recentHighRiskMicroseconds.first.map { ago($0, s.timeMicroseconds) } ?? "?").</p>"
        } else {
            out += "<p class=\"quiet\">No high-risk exposure found (\(x.found) exposure window\(x.found == 1 ? "" : "s") in all).</p>"
        }
        out += "<p><small>Key files: \(x.keyFilesMatched) matched, \(x.keyFilesRefused) refused, \(x.keyFilesWaiting) waiting.</small></p>"
        return out + "</section>"
    }

    /// Whether the box can call for help: amber's reason in words, then each path's state.
    static func callPaths(_ p: NodeSnapshot.CallPathsView, now: UInt64) -> String {
        var out = "<dt>Calling for help</dt><dd>"
        if let problem = p.problem {
            out += "<span class=\"warn\">Cannot call for help: \(escape(problem))</span>"
        } else {
            out += "no path is known to fail"
        }
        func path(_ name: String, _ path: NodeSnapshot.CallPathsView.Path) -> String {
            var line = "<br>\(name): "
            if let since = path.failingSinceMicroseconds {
                line += "<span class=\"warn\">failing since \(ago(since, now))</span>"
            } else if let good = path.lastGoodMicroseconds {
                line += "worked \(ago(good, now))"
            } else {
                line += "not tried yet"
            }
            if let t = path.lastTestMicroseconds { line += "; last test \(ago(t, now)), \(path.lastTestPassed == true ? "passed" : "failed")" }
            if path.failingSinceMicroseconds != nil, let why = path.lastProblem { line += " (\(escape(why)))" }
            return line
        }
        if let arc = p.alarmCentre { out += path("alarm centre", arc) }
        if let messages = p.messages { out += path("test messages", messages) }
        if let seconds = p.logOpeningSeconds {
            out += "<br>starting: the log has been checked for \(Int(seconds)) s after an unclean stop; the button and calls for help work meanwhile"
        }
        return out + "</dd>"
    }

    static func system(_ s: NodeSnapshot) -> String {
        var out = "<section id=\"system\"><h2>Box</h2><dl>"
        let r = s.radio
        out += "<dt>Radio</dt><dd>\(escape(r.state))\(r.adapter.isEmpty ? "" : " (\(escape(r.adapter)))"), \(r.devices) device\(r.devices == 1 ? "" : "s") nearby"
        if let accepted = r.framesAccepted { out += "; \(accepted) alert frames heard, \(r.framesForged ?? 0) forged" }
        if let e = r.hciErrors, e > 0 { out += "; \(e) controller errors" }
        out += r.onAir.isEmpty ? "" : "<br><small>on the air: \(escape(r.onAir.joined(separator: "; ")))</small>"
        out += "</dd>"
        let h = s.hub
        out += "<dt>Hub</dt><dd>"
        if h.hub.isEmpty { out += "not synced (no hub has acknowledged anything)" } else {
            out += "synced through event \(h.syncedThrough)"
            out += h.lastAcknowledgedMicroseconds > 0 ? ", last \(ago(h.lastAcknowledgedMicroseconds, s.timeMicroseconds))" : ""
            out += "; \(h.received) items taken from its feed"
        }
        if let p = h.problem { out += "<br><span class=\"warn\">Problem: \(escape(p))</span>" }
        out += "</dd>"
        let l = s.log
        out += "<dt>Log</dt><dd>\(l.events) events"
        if let used = l.usedBytes { out += ", \(bytes(UInt64(used))) used" }
        if let c = l.check { out += "; last check: \(escape(c))" }
        if l.undecodable > 0 { out += "; \(l.undecodable) unreadable" }
        if l.salvages > 0 { out += "; salvaged \(l.salvages) time\(l.salvages == 1 ? "" : "s")" }
        if let f = l.failure { out += "<br><span class=\"warn\">The card stopped taking writes (\(escape(f))): the box runs from memory. Replace the card.</span>" }
        if l.diskFull { out += "<br><span class=\"warn\">The card is full: scan data is not kept; alerts and check-ins are.</span>" }
        out += "</dd>"
        if let paths = s.callPaths { out += callPaths(paths, now: s.timeMicroseconds) }
        let m = s.messages
        out += "<dt>Messages</dt><dd>\(m.pending) waiting, \(m.delivered) delivered"
        if m.unreachable > 0 { out += "<br><span class=\"warn\">\(m.unreachable) cannot reach anyone.</span>" }
        out += "</dd>"
        if let up = l.uptimeSeconds { out += "<dt>Running</dt><dd>for \(duration(UInt64(up)))</dd>" }
        return out + "</dl></section>"
    }

    /// Staff's actions that name no resident or alert.
    static func actions(_ viewer: Viewer) -> String {
        var out = "<section id=\"actions\"><h2>Act</h2>"
        out += form("/act/silence", viewer, hidden: [:], button: "Silence the alarm")
        out += """
        <form method="post" action="/act/raise" class="raise">\(csrfField(viewer))
        <h3>Raise an alert</h3>
        <label>Kind <select name="kind">\(alertKinds.map { "<option value=\"\($0.slug)\">\($0.name)</option>" }.joined())</select></label>
        <label>For <select name="hours"><option value="1">1 hour</option><option value="4">4 hours</option><option value="12">12 hours</option><option value="24">24 hours</option></select></label>
        <label>Note <input name="text" maxlength="200"></label>
        <button>Raise</button></form>
        <form method="post" action="/act/enrol" class="enrol">\(csrfField(viewer))
        <h3>Enrol a resident</h3>
        <label>Id <input name="id" required maxlength="64" pattern="[A-Za-z0-9._-]+"></label>
        <label>Name <input name="name" maxlength="100"></label>
        <label>Room <input name="room" maxlength="32"></label>
        <label>Check-in every <select name="interval">\(intervals.map { "<option value=\"\($0.value)\"\($0.value == "8h" ? " selected" : "")>\($0.name)</option>" }.joined())</select></label>
        <button>Enrol</button></form>
        """
        return out + "</section>\n"
    }

    static func residentForm(_ r: NodeSnapshot.ResidentView, viewer: Viewer) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Edit \(escape(r.id))</title><link rel="stylesheet" href="/static/page.css"></head><body><main>
        <h1>\(escape(r.name.isEmpty ? r.id : r.name))</h1>
        <form method="post" action="/act/edit" class="enrol">\(csrfField(viewer))<input type="hidden" name="id" value="\(escape(r.id))">
        <label>Name <input name="name" maxlength="100" value="\(escape(r.name))"></label>
        <label>Room <input name="room" maxlength="32" value="\(escape(r.room))"></label>
        <label>Check-ins <select name="mode">\(["time", "pulse", "off"].map { "<option\($0 == r.mode ? " selected" : "")>\($0)</option>" }.joined())</select></label>
        <label>Check-in every <select name="interval">\(intervalOptions(current: r.intervalMicroseconds))</select></label>
        <button>Save</button> <a href="/">Back</a></form>
        <form method="post" action="/act/remove">\(csrfField(viewer))<input type="hidden" name="id" value="\(escape(r.id))"><button class="secondary">Remove this resident</button></form>
        </main></body></html>
        """
    }

    static func signIn(message: String? = nil, status: String? = nil) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Sign in: Vigil</title><link rel="stylesheet" href="/static/page.css"></head><body><main class="narrow">
        <h1>Vigil</h1>
        \(message.map { "<p class=\"warn\" id=\"sign-in-error\" role=\"alert\">\(escape($0))</p>" } ?? "")
        \(status.map { "<p>\(escape($0))</p>" } ?? "")
        <form method="post" action="/login" id="sign-in"><label>Admin password <input type="password" name="password" autocomplete="current-password" required autofocus></label>
        <button>Sign in</button></form>
        <p><small>The password is set on the box with <code>vigil http passwd</code>.</small></p>
        </main></body></html>
        """
    }

    static func message(_ title: String, _ text: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title))</title><link rel="stylesheet" href="/static/page.css"></head><body><main class="narrow">
        <h1>\(escape(title))</h1><p>\(escape(text))</p><p><a href="/">Back to the page</a></p></main></body></html>
        """
    }
}
