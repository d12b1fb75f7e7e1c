import Testing
import VigilEvents

@Suite("Event model helpers")
struct EventModelTests {
    @Test func kindNamesAreStableAndParseBack() {
        let names = EventKind.known.map(\.name)
        #expect(names == ["scan-hit", "alert-received", "alert-raised", "alert-cancelled", "check-in",
                          "button-input", "node-started", "node-stopped", "radio-state-changed",
                          "resident-enrolled", "resident-updated", "resident-removed", "deadline-reached",
                          "alarm-acknowledged", "outbox-attempt", "exposure-detected", "contact-retention",
                          "exposure-keys-published", "alert-acknowledged", "alert-expired", "alert-reaffirmed",
                          "downtime-detected", "hub-acknowledged", "hub-epoch-started", "hub-received", "occupancy-sampled",
                          "exposure-keys-offered", "exposure-keys-matched", "hub-feed-rewound", "log-salvaged", "scan-sightings",
                          "scan-batch", "link-changed", "chat-message", "chat-opened", "hazard-reported", "hazard-deadline",
                          "alert-taken", "call-deadline", "sms-received", "phone-call-decided", "box-key-revoked", "warning-received", "warning-deadline",
                          "warning-heard"])
        for kind in EventKind.known { #expect(EventKind(name: kind.name) == kind) }
        #expect(EventKind(name: "unspecified") == nil)
        #expect(EventKind(name: "kind-200") == nil)
        #expect(EventKind.UNRECOGNIZED(200).name == "kind-200")
    }

    @Test func onlyScanHitsAndBatchesAreSheddable() {
        for body in Fixtures.fullyPopulated {
            #expect(body.isSheddable == (body.kind == .scanHit || body.kind == .scanBatch), "\(body.kind.name)")
        }
    }

    @Test func addressesFormatAsSixUpperCaseHexPairs() {
        #expect(formatAddress(0xD4_3A_2C_91_7E_05) == "D4:3A:2C:91:7E:05")
        #expect(formatAddress(0) == "00:00:00:00:00:00")
        #expect(formatAddress(0x0001_0203_0405) == "00:01:02:03:04:05")
        // Bits above 48 are not part of an address.
        #expect(formatAddress(0xFFFF_0000_0000_0001) == "00:00:00:00:00:01")
    }

    @Test func alertIDTextIsHexOriginAndDecimalCounter() {
        #expect(AlertID(origin: 0xB1A5, counter: 12).text == "b1a5:12")
        #expect(AlertID(origin: 0, counter: 0).text == "0:0")
    }

    @Test func scanHitDerivedTimesAndMean() {
        let hit = Fixtures.typicalScanHit
        #expect(hit.meanRSSI == -64.75)
        #expect(hit.firstSeenMicroseconds(eventTime: 10_000_000) == 8_500_000)
        #expect(hit.lastSeenMicroseconds(eventTime: 10_000_000) == 9_880_000)
        #expect(ScanHit().meanRSSI == 0)
    }
}
