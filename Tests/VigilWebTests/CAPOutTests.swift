import Foundation
import Testing
import VigilAccess
import VigilCAP
import VigilNode
import VigilTestSupport
@testable import VigilWeb

/// Issue 32, CAP out: the box serves its alerts as CAP 1.2 at /cap.atom to those who may read its
/// status, every document valid against the OASIS schema and free of what people wrote; the page
/// shows the public warnings in force.
@Suite struct CAPOutTests {
    @Test func theBoxsAlertsAreCAPThatValidatesNamesNobodyAndCancelsWhatEnded() async throws {
        try await WebHarness.with("cap-out") { (web: WebHarness) async throws in
            let token = try WebCredentials(dataDirectory: web.dir.path).addToken(name: "aggregator", nowMicroseconds: 1)
            let auth = [("authorization", "Bearer \(token)")]
            #expect(try await web.get("/cap.atom").status == .unauthorized, "not for anyone on the network")
            let sos = try await web.api(.POST, "/alerts", json: #"{"kind":"sos","lifetimeMicroseconds":1800000000,"text":"Bo Lind, room 12, +61400111222"}"#, token: token)
            let flood = try await web.api(.POST, "/alerts", json: #"{"kind":"flood","severity":"critical","lifetimeMicroseconds":3600000000,"latitude":-33.1234567,"longitude":151.7654321,"text":"water at Bo's door"}"#, token: token)
            #expect(sos.status == .ok && flood.status == .ok, "\(sos.body) \(flood.body)")
            let floodID = try #require(try JSONDecoder().decode(NodeReply.self, from: Data(flood.body.utf8)).alert)
            await web.advance(byMicroseconds: 300_000)

            let index = try await web.get("/cap.atom", headers: auth)
            #expect(index.status == .ok && index.headers.first(name: "content-type") == "application/atom+xml; charset=utf-8")
            guard case .index(let entries) = try CAPFeedReader.read(Array(index.body.utf8)) else { Issue.record("not an index"); return }
            #expect(entries.count == 2)
            var documents: [(name: String, bytes: [UInt8])] = []
            var alerts: [CAPAlert] = []
            for entry in entries {
                let reply = try await web.get("/" + entry.link, headers: auth)
                #expect(reply.status == .ok && reply.headers.first(name: "content-type") == "application/cap+xml; charset=utf-8", "\(entry.link)")
                documents.append((name: "\(documents.count).xml", bytes: Array(reply.body.utf8)))
                alerts.append(try CAPReader.read(Array(reply.body.utf8)))
                for personal in ["Bo", "room", "12,", "+614", "door", "-33.12", "151.76"] {
                    #expect(!reply.body.contains(personal), "\(personal) in \(reply.body)")
                }
            }
            let (output, paths) = try CAPSchema.validate(documents: documents)
            for path in paths { #expect(output.contains("\(path) validates"), "\(output)") }

            let help = try #require(alerts.first { $0.infos.first?.event == "Call for help" })
            #expect(help.infos[0].categories == [.rescue] && help.infos[0].urgency == .immediate && help.infos[0].certainty == .observed)
            #expect(help.infos[0].expires.map { $0.microseconds - help.sent.microseconds } == 1_800_000_000, "its lifetime")
            let water = try #require(alerts.first { $0.infos.first?.event == "Flood" })
            #expect(water.infos[0].severity == .extreme && water.infos[0].expires != nil)
            #expect(water.infos[0].areas[0].circles.isEmpty, "no site.location: described, not placed (never the alert's own point)")
            #expect(water.sender == help.sender && water.sender.hasPrefix("vigil-box-"))

            // Cancelled: a Cancel naming the alert takes its place.
            #expect(try await web.api(.POST, "/alerts/\(floodID)/cancel", token: token).status == .ok)
            await web.advance(byMicroseconds: 300_000)
            let after = try await web.get("/cap.atom", headers: auth)
            guard case .index(let later) = try CAPFeedReader.read(Array(after.body.utf8)) else { Issue.record("not an index"); return }
            #expect(later.count == 2)
            var cancels: [CAPAlert] = []
            for entry in later {
                let body = try await web.get("/" + entry.link, headers: auth).body
                let document = try CAPReader.read(Array(body.utf8))
                if document.messageType == .cancel { cancels.append(document) }
                for personal in ["Bo", "room", "+614", "door", "-33.12", "151.76"] { #expect(!body.contains(personal), "\(personal) in \(body)") }
            }
            #expect(cancels.count == 1 && cancels.first?.references == [water.key])

            // Polled again with nothing new: 304, no body.
            let etag = try #require(after.headers.first(name: "etag"))
            let same = try await web.get("/cap.atom", headers: auth + [("if-none-match", etag)])
            #expect(same.status == .notModified && same.body.isEmpty)
            #expect(try await web.get("/cap/vigil-nothing.xml", headers: auth).status == .notFound)
        }
    }

    @Test func aPublicViewServesCAPToAnyoneAndThePageShowsTheWarningsInForce() async throws {
        try await WebHarness.with("cap-public", publicView: true) { (web: WebHarness) async throws in
            let token = try WebCredentials(dataDirectory: web.dir.path).addToken(name: "staff", nowMicroseconds: 1)
            #expect(try await web.get("/cap.atom").status == .ok, "http.public_view: anyone may read it")
            for kind in ["sos", "fire"] {
                let raised = try await web.api(.POST, "/alerts", json: #"{"kind":"\#(kind)","lifetimeMicroseconds":3600000000,"text":"x"}"#, token: token)
                #expect(raised.status == .ok, "\(raised.body)")
            }
            await web.advance(byMicroseconds: 300_000)
            func events(_ body: String) throws -> [String] {
                guard case .index(let entries) = try CAPFeedReader.read(Array(body.utf8)) else { return [] }
                return entries.map(\.link)
            }
            let anyone = try events(try await web.get("/cap.atom").body)
            let staff = try events(try await web.get("/cap.atom", headers: [("authorization", "Bearer \(token)")]).body)
            #expect(anyone.count == 1 && staff.count == 2, "a call for help is for staff: \(anyone) \(staff)")
            #expect(try await web.get("/" + (staff.first { !anyone.contains($0) } ?? "")).status == .notFound, "nor its document")
            let status = try JSONDecoder().decode(NodeSnapshot.self, from: Data(try await web.api(.GET, "/status", token: token).body.utf8))
            let now = Int64(status.timeMicroseconds)
            let document = """
                <?xml version="1.0" encoding="UTF-8"?>
                <alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>EVAC-1</identifier><sender>sender@example.gov</sender>
                <sent>\(CAPTime(microseconds: now - 60_000_000, offsetMinutes: 660))</sent><status>Actual</status><msgType>Alert</msgType><scope>Public</scope>
                <info><category>Fire</category><event>Bushfire</event><urgency>Immediate</urgency><severity>Extreme</severity>
                <certainty>Observed</certainty><expires>\(CAPTime(microseconds: now + 3_600_000_000, offsetMinutes: 660))</expires>
                <senderName>State Fire Service</senderName><headline>Bushfire &lt;script&gt;alert(1)&lt;/script&gt; emergency</headline>
                <description>A fire is moving toward the town.</description><instruction>Shelter indoors now.</instruction></info></alert>
                """
            let command = #"{"command":"import-warning","arguments":{"document":"\#(Data(document.utf8).base64EncodedString())","source":"https://feed.internal.example/cap"}}"#
            let imported = try await web.api(.POST, "/commands", json: command, token: token)
            #expect(imported.status == .ok, "\(imported.body)")
            await web.advance(byMicroseconds: 300_000)

            let page = try await web.get("/")
            #expect(page.body.contains("<section id=\"warnings\"><h2>Public warnings (1)</h2>"))
            #expect(page.body.contains("Bushfire &lt;script&gt;alert(1)&lt;/script&gt; emergency"), "a feed's text is escaped")
            #expect(page.body.contains("Shelter indoors now.") && page.body.contains("State Fire Service") && page.body.contains("Sounding"))
            #expect(!page.body.contains("feed.internal.example"), "which feed is for staff")
            let (cookie, _) = try await web.signIn()
            #expect(try await web.get("/", cookie: cookie).body.contains("from https://feed.internal.example/cap"))
        }
    }
}
