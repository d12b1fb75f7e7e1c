import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing
import VigilCore
import VigilEvents
@testable import VigilNode
@testable import VigilWeb

/// The box's page (issue 13, items 1 and 3): who may see it, who may act, and how.
@Suite(.serialized) struct PageAccessTests {
    @Test func thePageNeedsASignInUnlessTheOperatorAllowsAPublicView() async throws {
        try await WebHarness.with("page-closed") { (closed: WebHarness) async throws in
            let anonymous = try await closed.get("/")
            #expect(anonymous.status == .seeOther && anonymous.headers.first(name: "location") == "/login")
            #expect(try await closed.get("/events").status == .unauthorized)
            #expect(try await closed.api(.GET, "/status").status == .unauthorized)
        }

        try await WebHarness.with("page-open", publicView: true) { (open: WebHarness) async throws in
            let page = try await open.get("/")
            #expect(page.status == .ok)
            #expect(page.body.contains("id=\"residents\"") && page.body.contains("id=\"lights\""))
            #expect(!page.body.contains("action=\"/act/"), "a viewer gets no forms")
            #expect(page.headers.first(name: "content-security-policy")?.contains("script-src 'self'") == true)
            #expect(try await open.api(.GET, "/status").status == .ok, "the status is readable too")
            // The past is for staff: a public view shows now only.
            #expect(try await open.get("/?seq=1").status == .seeOther)
            #expect(try await open.api(.GET, "/status?seq=1").status == .unauthorized)
            let status = try await open.api(.GET, "/status")
            #expect(!status.body.contains("contacts") && !status.body.contains("\"tag\""), "no contact data in the snapshot")
            // Viewing never means acting.
            #expect(try await open.post("/act/silence", form: "csrf=").status == .unauthorized)
            #expect(try await open.api(.POST, "/alarms/silence").status == .unauthorized)
        }
    }

    @Test func staffSignInWithTheAdminPasswordAndEveryActionNeedsTheSessionsCSRFToken() async throws {
        try await WebHarness.with("page-act") { (web: WebHarness) async throws in
            #expect(try await web.post("/login", form: "password=wrong+password").status == .unauthorized)
            // A sign-in form posted from another site is refused (login CSRF).
            let elsewhere = try await web.post("/login", form: "password=correct+horse+battery", origin: "https://evil.example")
            #expect(elsewhere.status == .forbidden && elsewhere.cookie == nil)

            let (cookie, csrf) = try await web.signIn()
            #expect(cookie.hasPrefix("vigil_session="))
            // Without the token, or with another, nothing is done.
            for form in ["id=room-12&name=Ana", "csrf=forged&id=room-12&name=Ana"] {
                #expect(try await web.post("/act/enrol", form: form, cookie: cookie).status == .forbidden)
        }
        #expect(await web.read { $0.projections.escalations.residents["room-12"] } == nil)

        let enrol = try await web.post("/act/enrol", form: "csrf=\(csrf)&id=room-12&name=Ana+%26+%3CRuiz%3E&room=12&interval=8h", cookie: cookie)
        #expect(enrol.status == .seeOther && enrol.headers.first(name: "location") == "/?done=enrol")
        let enrolled = await web.read { $0.projections.escalations.residents["room-12"] }
        #expect(enrolled?.name == "Ana & <Ruiz>" && enrolled?.room == "12" && enrolled?.intervalMicroseconds == 28_800_000_000)

        // The node judges the page's commands as it judges the CLI's.
        let again = try await web.post("/act/enrol", form: "csrf=\(csrf)&id=room-12", cookie: cookie)
        #expect(again.status == .conflict)
        let unknown = try await web.post("/act/remove", form: "csrf=\(csrf)&id=nobody", cookie: cookie)
        #expect(unknown.status == .conflict && unknown.body.contains("no resident nobody"), "\(unknown.body)")

        let checkIn = try await web.post("/act/check-in", form: "csrf=\(csrf)&resident=room-12", cookie: cookie)
        #expect(checkIn.status == .seeOther)
        #expect(await web.read { $0.projections.checkIns.residents["room-12"]?.total } == 1)

        // The page shows what it knows, escaped, with the forms staff need.
        await web.advance(byMicroseconds: 300_000)
        let page = try await web.get("/?done=check-in", cookie: cookie)
        #expect(page.body.contains("Ana &amp; &lt;Ruiz&gt;") && !page.body.contains("<Ruiz>"))
        #expect(page.body.contains("Checked in"), "the notice after an action")
        #expect(page.body.contains("action=\"/act/check-in\"") && page.body.contains("action=\"/act/silence\""))
        let edit = try await web.get("/residents/room-12", cookie: cookie)
        #expect(edit.status == .ok && edit.body.contains("value=\"room-12\""))

        // Signing out ends the session; the old cookie acts no more.
        #expect(try await web.post("/logout", form: "csrf=\(csrf)", cookie: cookie).status == .seeOther)
        #expect(try await web.get("/", cookie: cookie).status == .seeOther)
        #expect(try await web.post("/act/silence", form: "csrf=\(csrf)", cookie: cookie).status == .unauthorized)
        }
    }

    @Test func failedSignInsFromOneDeviceAreSlowedDownAndANewPasswordEndsSessions() async throws {
        try await WebHarness.with("page-limits") { (web: WebHarness) async throws in
            let (cookie, _) = try await web.signIn()
            for _ in 0..<WebSessions.allowedFailures {
                #expect(try await web.post("/login", form: "password=guess+guess+guess").status == .unauthorized)
        }
        let limited = try await web.post("/login", form: "password=correct+horse+battery")
        #expect(limited.status == .tooManyRequests && limited.cookie == nil, "even the right password waits")
        #expect(limited.headers.first(name: "retry-after").flatMap(Int.init).map { $0 > 0 && $0 <= 900 } == true)
        web.seconds.advance(WebSessions.failureWindowSeconds)
        _ = try await web.signIn()

        // `vigil http passwd` while staff are signed in: their sessions end at once.
        #expect(try await web.get("/", cookie: cookie).status == .ok)
        try WebCredentials(dataDirectory: web.dir.path).setPassword("a new password, long")
        #expect(try await web.get("/", cookie: cookie).status == .seeOther)
        _ = try await web.signIn("a new password, long")

        // A session lasts a shift from its last use, not forever.
        let (late, _) = try await web.signIn("a new password, long")
        web.seconds.advance(WebSessions.lifetimeSeconds)
        #expect(try await web.get("/", cookie: late).status == .seeOther)
        }
    }

    @Test func chatsShowStaffWhoWroteWhatMarkedUnauthenticatedAndViewersOnlyHowMany() async throws {
        try await WebHarness.with("page-chats", publicView: true) { (web: WebHarness) async throws in
            // A phone wrote to the box (as GATTLinks logs it): markup and a terminal escape in it.
            var message = ChatMessage()
            message.peer = 0xC0_FF_EE_00_11_22
            message.peerType = .addressRandom
            message.channel = .chat
            message.text = "<b>help</b> at gate 3\u{1B}[2J"
            let written = message
            let sequence = await web.read { $0.append(.chatMessage(written)) }
            #expect(sequence != nil)
            await web.settled()
            await web.advance(byMicroseconds: 300_000)

            // Viewers: how many chats, never who or what.
            let viewing = try await web.get("/")
            #expect(viewing.body.contains("id=\"chats\"") && viewing.body.contains("1 device, 0 connected now, 1 with unread messages"))
            #expect(!viewing.body.contains("C0:FF:EE") && !viewing.body.contains("gate 3"), "a viewer sees no chat")
            let publicStatus = try JSONDecoder().decode(NodeSnapshot.self, from: Data(try await web.api(.GET, "/status").body.utf8))
            #expect(publicStatus.chats.devices == 1 && publicStatus.chats.conversations.isEmpty, "nor does the public API")

            // Staff: the device, its unread badge, the text escaped and marked unauthenticated.
            let (cookie, csrf) = try await web.signIn()
            let page = try await web.get("/", cookie: cookie).body
            #expect(page.contains("C0:FF:EE:00:11:22/random") && page.contains("<span class=\"badge\" title=\"unread messages\">1</span>"))
            #expect(page.contains("them (unauthenticated): &lt;b&gt;help&lt;/b&gt; at gate 3\u{FFFD}[2J"), "\(page)")
            #expect(!page.contains("<b>help</b>") && !page.contains("\u{1B}"))
            #expect(!page.contains("action=\"/act/chat-send\""), "no send form for a device not linked now")
            let staffStatus = try JSONDecoder().decode(NodeSnapshot.self, from: Data(try await web.api(.GET, "/status", cookie: cookie).body.utf8))
            #expect(staffStatus.chats.conversations.first?.messages.first?.text == "<b>help</b> at gate 3\u{FFFD}[2J")
            let token = try WebCredentials(dataDirectory: web.dir.path).addToken(name: "dispatch", nowMicroseconds: 1)
            let scripted = try JSONDecoder().decode(NodeSnapshot.self, from: Data(try await web.api(.GET, "/status", token: token).body.utf8))
            #expect(scripted.chats.conversations.map(\.device) == ["C0:FF:EE:00:11:22/random"], "a token reads the chats too")

            // Marking it read is the CLI's `vigil chat open`, judged by the node alike.
            let read = try await web.post("/act/chat-open", form: "csrf=\(csrf)&device=C0%3AFF%3AEE%3A00%3A11%3A22%2Frandom", cookie: cookie)
            #expect(read.status == .seeOther, "\(read.body)")
            #expect(await web.read { $0.projections.conversations.byPeer[0xC0_FF_EE_00_11_22]?.unread } == 0)
            // Sending needs a link: without a radio that serves GATT the node says why.
            let send = try await web.post("/act/chat-send", form: "csrf=\(csrf)&device=C0%3AFF%3AEE%3A00%3A11%3A22%2Frandom&text=on+our+way", cookie: cookie)
            #expect(send.status != .seeOther && send.body.contains("Nothing done"), "\(send.body)")
            #expect(try await web.post("/act/chat-send", form: "csrf=\(csrf)&device=C0%3AFF%3AEE%3A00%3A11%3A22", cookie: cookie).status == .badRequest)
        }
    }

    @Test func scriptsUseBearerTokensAndTheAPIAnswersAsTheControlSocketDoes() async throws {
        try await WebHarness.with("page-api") { (web: WebHarness) async throws in
            let credentials = WebCredentials(dataDirectory: web.dir.path)
            let token = try credentials.addToken(name: "dispatch", nowMicroseconds: 1)
            let stored = try String(contentsOfFile: web.dir.path + "/http/tokens.json", encoding: .utf8)
            #expect(token.hasPrefix("vigil_") && !stored.contains(token), "the token is kept only as its hash")

            #expect(try await web.api(.POST, "/residents", json: #"{"id":"r1"}"#).status == .unauthorized)
            #expect(try await web.api(.POST, "/residents", json: #"{"id":"r1"}"#, token: "vigil_not-a-token").status == .unauthorized)
            let enrol = try await web.api(.POST, "/residents", json: #"{"id":"r1","name":"Bo","intervalMicroseconds":3600000000}"#, token: token)
            #expect(enrol.status == .ok)
            let reply = try JSONDecoder().decode(NodeReply.self, from: Data(enrol.body.utf8))
            #expect(reply.ok && reply.sequence != nil, "answered once durable, with the event's sequence")

            #expect(try await web.api(.DELETE, "/residents/nobody", token: token).status == .conflict)
            let badID = try await web.api(.POST, "/residents/not%20an%20id/check-in", token: token)
            #expect(badID.status == .unprocessableEntity, "\(badID.body)")
            #expect(try await web.api(.POST, "/residents", json: #"{"name":"no id"}"#, token: token).status == .badRequest)
            #expect(try await web.api(.POST, "/commands", json: #"{"command":"launch"}"#, token: token).status == .badRequest)
            let raised = try await web.api(.POST, "/alerts", json: #"{"kind":"flood","lifetimeMicroseconds":3600000000,"text":"river"}"#, token: token)
            #expect(raised.status == .ok, "\(raised.body)")
            let alert = try JSONDecoder().decode(NodeReply.self, from: Data(raised.body.utf8)).alert
            #expect(alert != nil, "the alert's id comes back")
            let generic = try await web.api(.POST, "/commands", json: #"{"command":"check-in","arguments":{"resident":"r1"}}"#, token: token)
            #expect(generic.status == .ok)

            await web.advance(byMicroseconds: 300_000)
            let status = try await web.api(.GET, "/status", token: token)
            let snapshot = try JSONDecoder().decode(NodeSnapshot.self, from: Data(status.body.utf8))
            #expect(snapshot.residents.map(\.id) == ["r1"] && snapshot.residents[0].checkIns == 1)
            #expect(snapshot.outputs.map(\.line) == ["red", "amber", "green", "blue", "buzzer"])

            // A browser's session acts through the API only with its CSRF token.
            let (cookie, csrf) = try await web.signIn()
            #expect(try await web.api(.POST, "/alarms/silence", cookie: cookie).status == .forbidden)
            #expect(try await web.api(.POST, "/alarms/silence", cookie: cookie, csrf: csrf).status == .ok)

            // A revoked token is refused at once, without a restart.
            #expect(try credentials.revokeToken(name: "dispatch"))
            #expect(try await web.api(.GET, "/status", token: token).status == .unauthorized)
            #expect(try await web.api(.GET, "/openapi.yaml").body.contains("openapi: 3.0.3"))
        }
    }

    @Test func thePageIsServedOverTLSWithTheCertificateWhoseFingerprintStatusPrints() async throws {
        try await WebHarness.with("page-tls", tls: true) { (web: WebHarness) async throws in
            let fingerprint = try #require(web.fingerprint)
            let identity = try #require(WebCredentials(dataDirectory: web.dir.path).identity)
            #expect(identity.fingerprint == fingerprint)
            #expect(WebCredentials.displayFingerprint(fingerprint).split(separator: ":").count == 32)
            let login = try await web.get("/login")
            #expect(login.status == .ok)
            let signedIn = try await web.post("/login", form: "password=correct+horse+battery")
            #expect(signedIn.headers.first(name: "set-cookie")?.contains("Secure") == true, "over TLS the cookie is Secure")

            // TLS 1.0 and 1.1 are refused (RFC 8996); 1.2 is enough.
            for (version, accepted) in [(TLSVersion.tlsv1, false), (.tlsv11, false), (.tlsv12, true)] {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.certificateVerification = .none
                tls.minimumTLSVersion = .tlsv1
                tls.maximumTLSVersion = version
                let old = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
                // A refused handshake is retried by the client until its deadline: a short one.
                let answered = (try? await old.execute(HTTPClientRequest(url: web.base + "/login"), timeout: .seconds(accepted ? 30 : 3)).status) == .ok
                try await old.shutdown()
                #expect(answered == accepted, "TLS up to \(version)")
            }
        }
    }

    @Test func metricsAreServedInPrometheusFormatToWhoeverMayReadTheStatus() async throws {
        try await WebHarness.with("page-metrics") { (web: WebHarness) async throws in
            let token = try WebCredentials(dataDirectory: web.dir.path).addToken(name: "prometheus", nowMicroseconds: 1)
            #expect(try await web.get("/metrics").status == .unauthorized, "not for anyone on the network")
            #expect(try await web.api(.POST, "/residents", json: #"{"id":"r1"}"#, token: token).status == .ok)
            #expect(try await web.api(.POST, "/residents/r1/check-in", token: token).status == .ok)
            await web.advance(byMicroseconds: 1_100_000) // a sample of the node's counters
            let scrape = try await web.get("/metrics", headers: [("authorization", "Bearer \(token)")])
            #expect(scrape.status == .ok && scrape.headers.first(name: "content-type")?.hasPrefix("text/plain; version=0.0.4") == true)
            let lines = scrape.body.split(separator: "\n").map(String.init)
            func value(_ series: String) -> Double? {
                lines.first { $0.hasPrefix(series + " ") }.flatMap { Double($0.dropFirst(series.count + 1)) }
            }
            #expect(value(#"vigil_events_appended_total{kind="check-in"}"#) == 1)
            #expect(value(#"vigil_events_appended_total{kind="resident-enrolled"}"#) == 1)
            #expect((value("vigil_log_ack_latency_seconds_count") ?? 0) >= 3, "each durable event's ack is timed")
            #expect((value("vigil_log_commits_total") ?? 0) >= 1 && value("vigil_log_flushes_total") != nil)
            #expect(value("vigil_radio_up") == 1 && value(#"vigil_alert_frames_total{outcome="forged"}"#) == 0)
            #expect(value("vigil_outbox_backlog_messages") == 0 && value("vigil_hub_backlog_events") == 0, "no hub joined")
            let applied = Double(await web.read { $0.projections.appliedThrough })
            #expect(value("vigil_log_applied_sequence").map { $0 > 0 && $0 <= applied } == true, "sampled once a second")
        }
    }

    @Test func healthSaysTheLoopIsAliveAndReadinessThatTheLogTakesWrites() async throws {
        try await WebHarness.with("page-health") { (web: WebHarness) async throws in
            #expect(try await web.get("/healthz").status == .ok)
            #expect(try await web.get("/readyz").status == .ok)
            // No snapshot for longer than three heartbeats: the loop is taken for stuck.
            web.seconds.advance(20)
            #expect(try await web.get("/healthz").status == .serviceUnavailable)
            await web.advance(byMicroseconds: 5_100_000) // a heartbeat
            #expect(try await web.get("/healthz").status == .ok)
        }
    }
}
