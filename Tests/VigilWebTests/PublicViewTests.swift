import Foundation
import NIOCore
import Testing
import VigilCore
import VigilEvents
@testable import VigilNode
@testable import VigilWeb

/// One public view (`NodeSnapshot.forPublic`) for everything a viewer who is not signed in can
/// read: the page, its live stream and the API (issue 28, finding 3: the page and the stream
/// rendered the whole snapshot).
@Suite struct PublicViewTests {
    static let now: UInt64 = 1_800_000_000_000_000
    /// What a viewer must never read, each placed in the snapshot below.
    static let secrets = ["72 bpm", "C3:11:22:33:44:55", "40.41", "-3.70", "mqtt.example.org", "tls handshake failed",
                          "10.9.8.7", "Maria fell in room 12", "10.20.30.40", "+34600111222", "Luis", "EIO on mmcblk0",
                          "trapped on the roof", "D4:44:55:66:77:88", "Ana Okafor-Ruiz", "3B-east", "Europe/Madrid", "r-ana-7"]

    static func snapshot() -> NodeSnapshot {
        var s = NodeSnapshot(state: Projections(), decisions: [:], live: nil, timeMicroseconds: now)
        // A resident who is not answering, with where she sleeps: for staff only.
        s.residents = [.init(id: "r-ana-7", name: "Ana Okafor-Ruiz", room: "3B-east", mode: "time", step: "alarm", stepMicroseconds: now - 600_000_000, next: nil,
                             lastCheckInMicroseconds: nil, checkIns: 0, intervalMicroseconds: 3_600_000_000, timeZone: "Europe/Madrid", paused: false,
                             sensor: .init(device: "C3:11:22:33:44:55/random", linked: true, bonded: false, beatsPerMinute: 72,
                                           readingMicroseconds: now, contact: "contact", counted: true))]
        s.alerts = [.init(id: "00000000000000aa:1", kind: "sos", severity: "critical", category: "help", raisedHere: true, hops: 0,
                          raisedMicroseconds: now - 60_000_000, expiresMicroseconds: now + 3_600_000_000,
                          text: "Maria fell in room 12", latitude: 40.4168, longitude: -3.7038, acknowledged: nil)]
        s.roadHazards.hazards = [.init(kind: "pedestrian", source: "feed", latitude: 40.4169, longitude: -3.7039, headingDegrees: nil,
                                       speedMetersPerSecond: nil, lastMicroseconds: now, expiresMicroseconds: now + 60_000_000)]
        s.roadHazards.feed = HazardFeedStatus(connected: false, subscribed: false, broker: "madrid (mqtt.example.org:8883)", state: "retrying in 4 s",
                                              lastError: "tls handshake failed", vruActive: false, counters: HazardFeedCounters(), seen: [])
        s.hub = .init(hub: "https://10.9.8.7:8443", syncedThrough: 10, lastAcknowledgedMicroseconds: now, received: 2,
                      problem: "upload failing (3 tries): connect to 10.9.8.7:8443 refused")
        // Why the lights are on, as OutputPolicy says it: who took a call, where a path failed.
        s.outputs = [.init(line: "red", pattern: "blink 500/500 ms", reasons: [.init(text: "SOS 00000000000000aa:1 taken by Luis", sequences: [3])]),
                     .init(line: "amber", pattern: "on", reasons: [.init(text: "cannot call for help: +34600111222: exit status 1", sequences: [4])])]
        // A phone's call: what other phones wrote into it is for staff (issue 28).
        s.calls = [.init(code: "T1234", id: "phone:00000000000000ab", kind: "sos", summary: "SOS FROM A PHONE, UNVERIFIED \"trapped on the roof\"",
                         startedMicroseconds: now - 30_000_000, open: true, takenBy: nil, takenVia: nil, takenMicroseconds: nil, ended: nil,
                         tier: 1, pass: 1, told: 1, fromPhone: true, phoneMessages: 2,
                         phoneOthers: ["D4:44:55:66:77:88/random: trapped on the roof too"])]
        s.log.failure = "EIO on mmcblk0"
        s.log.check = "damaged at page 7: EIO on mmcblk0"
        s.callPaths = .init(problem: "the alarm centre has not acknowledged since 12:00 UTC: connect to 10.20.30.40:5000 refused",
                            alarmCentre: .init(lastGoodMicroseconds: nil, lastTestMicroseconds: now, lastTestPassed: false,
                                               failingSinceMicroseconds: now - 300_000_000, lastProblem: "connect to 10.20.30.40:5000 refused"),
                            messages: nil, logOpeningSeconds: nil)
        return s
    }

    @Test func theLiveStreamGivesViewersThePublicViewAndStaffTheWholeOne() {
        let message = LiveFeed.render(Self.snapshot())
        let viewing = String(buffer: message.bytes(acting: false))
        let acting = String(buffer: message.bytes(acting: true))
        for secret in Self.secrets { #expect(!viewing.contains(secret), "a viewer reads \(secret)") }
        #expect(viewing.contains("the alarm centre is failing"), "that the box cannot call for help is for everyone")
        #expect(viewing.contains("sos") || viewing.contains("SOS"), "and that an SOS is open")
        for secret in ["Maria fell in room 12", "10.20.30.40", "taken by Luis", "trapped on the roof too"] {
            #expect(acting.contains(secret), "staff read \(secret)")
        }
        #expect(viewing.contains("From a phone, unverified"), "that a phone's call is open is for everyone")
    }

    @Test func thePublicViewKeepsKindsAndCountsAndDropsWhoWhereAndWhy() {
        let shown = Self.snapshot().forPublic()
        #expect(shown.alerts.first?.kind == "sos" && shown.alerts.first?.text == "" && shown.alerts.first?.latitude == nil)
        #expect(shown.hub.hub == "a hub" && shown.hub.problem == "the hub cannot be reached" && shown.hub.syncedThrough == 10)
        #expect(shown.roadHazards.hazards.isEmpty && shown.roadHazards.feed?.broker == nil && shown.roadHazards.feed?.state == "retrying in 4 s")
        #expect(shown.callPaths?.problem == "the alarm centre is failing" && shown.callPaths?.alarmCentre?.failingSinceMicroseconds != nil)
        #expect(shown.outputs.map(\.pattern) == ["blink 500/500 ms", "on"] && shown.outputs.allSatisfy { $0.reasons.isEmpty },
                "the lights, not why")
        #expect(shown.log.failure != nil && shown.log.check == nil, "that the card failed, not its error")
        #expect(shown.residents.map { "\($0.id) \($0.step)" } == ["resident 1 alarm"], "that someone does not answer, not who or where")
        let json = String(decoding: (try? JSONEncoder().encode(shown)) ?? Data(), as: UTF8.self)
        for secret in Self.secrets { #expect(!json.contains(secret), "the public view holds \(secret)") }
    }

    @Test func thePageGivesAViewerWhoIsNotSignedInThePublicView() async throws {
        try await WebHarness.with("public-page", publicView: true) { (web: WebHarness) async throws in
            // An alert whose text names a person and a room, with its place.
            let request = AlertRequest(kind: "sos", lifetimeMicroseconds: 3_600_000_000, latitude: 40.4168, longitude: -3.7038,
                                       text: "Maria fell in room 12")
            let raised = await web.read { node -> Bool in
                guard case .event(let body, _) = node.control.interpreter.interpret(.raiseAlert(request)) else { return false }
                return node.append(body) != nil
            }
            #expect(raised == true)
            await web.settled()
            await web.advance(byMicroseconds: 300_000)
            let viewing = try await web.get("/").body
            #expect(viewing.contains("id=\"help\""))
            for secret in ["Maria fell in room 12", "40.41", "-3.70"] { #expect(!viewing.contains(secret), "a viewer reads \(secret)") }
            let (cookie, _) = try await web.signIn()
            #expect(try await web.get("/", cookie: cookie).body.contains("Maria fell in room 12"), "staff read it")
        }
    }
}
