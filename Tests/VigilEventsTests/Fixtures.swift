import Foundation
import SwiftProtobuf
import VigilEvents

/// Event bodies shared by the codec, golden-file and size tests.
enum Fixtures {
    static let nodeID: UInt64 = 0x0000_B1A5_0000_0001
    static let start: UInt64 = 1_767_225_600_000_000 // 2026-01-01T00:00:00Z in µs

    /// A ScanHit as the radio adapter writes one for a phone: random address, four reports
    /// between -60 and -70 dBm over 1.5 s, flags and one 16-bit service UUID.
    static var typicalScanHit: ScanHit {
        var hit = ScanHit()
        hit.address = 0xD4_3A_2C_91_7E_05
        hit.addressType = .addressRandom
        hit.count = 4
        hit.rssiMin = -70
        hit.rssiMax = -60
        hit.rssiSum = -70 + -66 + -63 + -60
        hit.firstOffsetUs = 1_500_000
        hit.lastOffsetUs = 120_000
        hit.advertisement.flags = 0x1A
        hit.advertisement.serviceUuids16 = [0xFE9F]
        return hit
    }

    /// One body per kind with every field set, optional ones included.
    static var fullyPopulated: [EventBody] {
        var hit = typicalScanHit
        hit.rssiUnavailable = 1
        hit.advertisement.gaenRpi = Data((0..<16).map { UInt8($0) })
        hit.advertisement.gaenAem = Data([1, 2, 3, 4])
        hit.advertisement.vigilPresence = Data((16..<32).map { UInt8($0) })
        hit.txPower = -12
        hit.advertisement.name = "Tag ü 42"
        hit.advertisement.serviceUuids16 = [0x180D, 0xFE9F, 0xFFFF]
        hit.advertisement.companyID = 0x004C + 1
        hit.advertisement.appearance = 0x0341
        hit.advertisement.connectable = true
        hit.advertisement.serviceDataUuids16 = [0xFEAA, 0x1809]

        var raised = Alert()
        raised.id = AlertID(origin: nodeID, counter: 7)
        raised.kind = .medical
        raised.severity = .critical
        raised.location.latitudeE7 = -338_688_970
        raised.location.longitudeE7 = 1_512_092_950
        raised.expiresAtUs = start + 3_600_000_000
        raised.hops = 0
        raised.heardFrom = 0
        raised.text = "Room 12: resident fell, conscious"

        var received = raised
        received.id = AlertID(origin: 0xFFFF_FFFF_FFFF_FFFF, counter: UInt32.max)
        received.kind = .flood
        received.severity = .warning
        received.hops = 3
        received.heardFrom = 0x0000_B1A5_0000_0009
        received.text = "Water rising on Bridge St\nAvoid the underpass"

        var cancelled = AlertCancelled()
        cancelled.id = AlertID(origin: nodeID, counter: 7)
        cancelled.by = nodeID
        cancelled.reason = "resolved by staff"

        var checkIn = CheckIn()
        checkIn.resident = "R-0042"
        checkIn.source = .checkInHeartRate
        checkIn.value = 72.5
        checkIn.heartRateFlags = 0b0000_0110 // contact supported and detected

        var button = ButtonInput()
        button.line = 17
        button.edge = .falling
        button.kernelTimestampNs = 987_654_321_012

        var started = NodeStarted()
        started.nodeID = nodeID
        started.version = "0.1.0"
        started.board = "rpi4"
        started.radio = "hci0"

        var stopped = NodeStopped()
        stopped.reason = "SIGTERM"

        var radio = RadioStateChanged()
        radio.state = .off
        radio.adapter = "hci0"
        radio.reason = "rfkill"

        return [
            .scanHit(hit), .alertReceived(received), .alertRaised(raised), .alertCancelled(cancelled),
            .checkIn(checkIn), .buttonInput(button), .nodeStarted(started), .nodeStopped(stopped),
            .radioStateChanged(radio),
        ] + schema2Bodies + schema4Bodies + schema5Bodies + schema6Bodies + schema7Bodies + schema8Bodies + schema9Bodies + schema10Bodies + schema11Bodies + schema12Bodies + schema13Bodies + schema15Bodies + schema16Bodies + schema17Bodies + schema19Bodies + schema20Bodies + schema21Bodies
    }

    /// The kind schema 8 added, every field set (from the v8 golden stream).
    static var schema8Bodies: [EventBody] {
        goldenEventsV8.suffix(1).map(\.body)
    }

    /// The kinds schema 9 added, every field set (from the v9 golden stream; its last event is the
    /// field schema 9 added to HubReceived).
    static var schema9Bodies: [EventBody] {
        goldenEventsV9.suffix(4).prefix(3).map(\.body)
    }

    /// The kind schema 10 added, every field set (from the v10 golden stream).
    static var schema10Bodies: [EventBody] {
        goldenEventsV10.suffix(1).map(\.body)
    }

    /// The kinds schema 7 added, every field set (from the v7 golden stream).
    static var schema7Bodies: [EventBody] {
        goldenEventsV7.suffix(3).map(\.body)
    }

    /// The v7 golden stream: all of v6 and the three kinds schema 7 added (the hub).
    static var goldenEventsV7: [(timeMicroseconds: UInt64, body: EventBody)] {
        var acknowledged = HubAcknowledged()
        acknowledged.hub = String(repeating: "ab", count: 32)
        acknowledged.epoch = 2
        acknowledged.throughSequence = 1_234_567
        acknowledged.accepted = 512
        var epoch = HubEpochStarted()
        epoch.hub = String(repeating: "cd", count: 32)
        epoch.epoch = 3
        epoch.firstSequence = 1_234_568
        epoch.reason = .hubAhead
        epoch.hubHeldThrough = 2_000_000
        var received = HubReceived()
        received.hub = String(repeating: "ef", count: 32)
        received.position = 77
        received.originNode = 0x0A11_CE01
        received.kind = UInt32(EventKind.alertRaised.rawValue)
        received.timeUs = 1_593_570_000_000_000
        received.payload = Data([0x0A, 0x02, 0x08, 0x01])
        let added: [EventBody] = [.hubAcknowledged(acknowledged), .hubEpochStarted(epoch), .hubReceived(received)]
        let previous = goldenEventsV6 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + added.enumerated().map { (base + UInt64($0.offset + 1) * 250_000, $0.element) }
    }

    /// The v8 golden stream: all of v7 and the kind schema 8 added (occupancy).
    static var goldenEventsV8: [(timeMicroseconds: UInt64, body: EventBody)] {
        var occupancy = OccupancySampled()
        occupancy.minuteStartUs = 1_593_570_060_000_000
        occupancy.advertisers = 1_873
        occupancy.tags = 41
        occupancy.radioOn = true
        let previous = goldenEventsV7 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 250_000, .occupancySampled(occupancy))]
    }

    /// The v9 golden stream: all of v8 and the kinds schema 9 added (diagnosis-key files from the hub,
    /// a feed given out again).
    static var goldenEventsV9: [(timeMicroseconds: UInt64, body: EventBody)] {
        var offered = ExposureKeysOffered()
        offered.fileID = 12
        offered.sha256 = Data((0..<32).map { UInt8($0 * 7 & 0xFF) })
        offered.bytes = 288_123
        offered.keys = 9_876
        offered.name = "2020-07-01 daily"
        var matched = ExposureKeysMatched()
        matched.fileID = 12
        matched.sha256 = offered.sha256
        matched.name = offered.name
        matched.keys = 9_876
        matched.matchedIdentifiers = 31
        matched.exposures = 3
        matched.highRisk = 1
        matched.withdrawn = 2
        matched.refused = "no exposure.verification_keys are configured"
        matched.signedBy = "310 v1"
        let base = goldenEventsV8.last?.timeMicroseconds ?? start
        var rewound = HubFeedRewound()
        rewound.hub = String(repeating: "12", count: 32)
        rewound.fromPosition = 912
        rewound.hubHead = 640
        rewound.cursorMissing = true
        var replayed = HubReceived()
        replayed.hub = String(repeating: "34", count: 32)
        replayed.position = 3
        replayed.originNode = 0x0A11_CE02
        replayed.kind = UInt32(EventKind.alertCancelled.rawValue)
        replayed.timeUs = 1_593_570_100_000_000
        replayed.payload = Data([0x0A, 0x02, 0x08, 0x02])
        replayed.replayed = true
        return goldenEventsV8 + [(base + 250_000, .exposureKeysOffered(offered)), (base + 500_000, .exposureKeysMatched(matched)),
                                 (base + 750_000, .hubFeedRewound(rewound)), (base + 1_000_000, .hubReceived(replayed))]
    }

    /// Schema 10: a log salvaged after a failing card, every field set.
    static var goldenEventsV10: [(timeMicroseconds: UInt64, body: EventBody)] {
        var salvaged = LogSalvaged()
        var first = LogSalvaged.Range()
        first.first = 120
        first.last = 180
        var second = LogSalvaged.Range()
        second.first = 455
        second.last = 455
        salvaged.lost = [first, second]
        salvaged.lostCount = 62
        salvaged.recovered = 99_812
        salvaged.recoveredOutsideTree = 37
        salvaged.highestRecovered = 100_004
        salvaged.keptAside = "/var/lib/vigil/corrupt-1800000000"
        salvaged.damagedPages = 3
        salvaged.firstDamage = "page 812: free-space bounds 9...4"
        salvaged.trigger = "start"
        salvaged.seconds = 1.25
        salvaged.tailUnknown = true
        let previous = goldenEventsV9 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 250_000, .logSalvaged(salvaged))]
    }

    /// The kind schema 11 added, every field set (from the v11 golden stream).
    static var schema11Bodies: [EventBody] {
        goldenEventsV11.suffix(1).map(\.body)
    }

    /// The v11 golden stream: all of v10 and the kind schema 11 added (compacted sightings).
    static var goldenEventsV11: [(timeMicroseconds: UInt64, body: EventBody)] {
        var minute = MinuteSighting()
        minute.minuteDelta = 26_559_500
        minute.firstOffsetUs = 41_250_000
        minute.lengthUs = 17_900_000
        minute.hits = 9
        minute.reports = 27
        minute.rssiSum = -1_701
        minute.rssiUnavailable = 2
        minute.rssiMax = -58
        minute.txPower = -12
        var next = MinuteSighting()
        next.minuteDelta = 1
        next.firstOffsetUs = 900_000
        next.lengthUs = 58_000_000
        next.hits = 30
        next.reports = 88
        next.rssiSum = -5_720
        next.rssiMax = -61
        var track = SightingTrack()
        track.kind = 1
        track.identifier = Data((0..<16).map { UInt8($0 &* 17) })
        track.metadata = Data([0x40, 0x08, 0x00, 0x00])
        track.minutes = [minute, next]
        var sightings = ScanSightings()
        sightings.spanStartUs = 1_593_570_000_000_000
        sightings.spanEndUs = 1_593_570_600_000_000
        sightings.firstSequence = 100_010
        sightings.throughSequence = 160_300
        sightings.hits = 58_121
        sightings.tracks = [track]
        let previous = goldenEventsV10 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 250_000, .scanSightings(sightings))]
    }

    /// The kind schema 12 added, and the fields it gave two older kinds (from the v12 stream).
    static var schema12Bodies: [EventBody] {
        goldenEventsV12.suffix(3).prefix(1).map(\.body)
    }

    /// One body of each kind schema 13 added (connections), every field set.
    static var schema13Bodies: [EventBody] {
        let added = goldenEventsV13.suffix(5).map(\.body)
        return [added[4], added[1], added[3]]
    }

    /// The kinds schema 15 added (active hazards), every field set (from the v15 stream).
    static var schema15Bodies: [EventBody] {
        goldenEventsV15.suffix(2).map(\.body)
    }

    /// The kinds schema 16 added (calls for help), every field set (from the v16 stream).
    static var schema16Bodies: [EventBody] {
        let added = goldenEventsV16.suffix(4).map(\.body)
        return [added[1], added[0], added[3]]
    }

    /// The kinds schema 17 added (phones ask, staff decide), every field set (from the v17 stream).
    static var schema17Bodies: [EventBody] {
        goldenEventsV17.suffix(2).prefix(1).map(\.body)
    }

    /// The kind schema 19 added (a key per box), every field set (from the v19 stream).
    static var schema19Bodies: [EventBody] {
        [.boxKeyRevoked(boxKeyRevoked)]
    }

    /// The kinds schema 20 added (public warnings), every field set.
    static var schema20Bodies: [EventBody] {
        [.warningReceived(warningReceived), .warningDeadline(warningDeadline)]
    }

    static var warningReceived: WarningReceived {
        var w = WarningReceived()
        w.feed = "https://warnings.example.gov/cap/feed.atom"
        w.document = Data(#"<?xml version="1.0" encoding="UTF-8"?><alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>G-1</identifier><sender>golden@example.gov</sender><sent>2026-11-30T10:00:00+00:00</sent><status>Test</status><msgType>Alert</msgType><scope>Public</scope><info><category>Met</category><event>Flood</event><urgency>Immediate</urgency><severity>Extreme</severity><certainty>Observed</certainty><area><areaDesc>Golden</areaDesc><circle>0,0 10</circle></area></info></alert>"#.utf8)
        w.signatureVerified = true
        w.link = "https://warnings.example.gov/cap/G-1.xml"
        w.byStaff = true
        return w
    }

    /// The kind schema 21 added (public warnings on the air), every field set.
    static var schema21Bodies: [EventBody] { [.warningHeard(warningHeard)] }

    static var warningHeard: WarningHeard {
        var h = WarningHeard()
        h.signer = 0xB0B
        h.digest = 0x12_3456_789A
        h.sounds = true
        h.headline = "Flash flood warning: move to higher ground"
        h.expiresUs = 1_796_041_800_000_000
        h.signedAtUs = 1_796_040_000_000_000
        h.heardFrom = 0xC0FFEE
        return h
    }

    /// Schema 21: a neighbour's public warning heard on the air.
    static var goldenEventsV21: [(timeMicroseconds: UInt64, body: EventBody)] {
        let previous = goldenEventsV20 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 62_500, .warningHeard(warningHeard))]
    }

    static var warningDeadline: WarningDeadline {
        var d = WarningDeadline()
        d.dueUs = 1_796_040_000_000_000
        return d
    }

    /// Schema 20: a public warning as its feed served it, and the deadline that ends it.
    static var goldenEventsV20: [(timeMicroseconds: UInt64, body: EventBody)] {
        let previous = goldenEventsV19 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 62_500, .warningReceived(warningReceived)), (base + 125_000, .warningDeadline(warningDeadline))]
    }

    static var boxKeyRevoked: BoxKeyRevoked {
        var revoked = BoxKeyRevoked()
        revoked.revocation = Data((0..<105).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        revoked.name = "kitchen"
        return revoked
    }

    /// Schema 19: a revocation of a box's key, as the hub puts it on its feed (a box holds it
    /// inside a HubReceived; the event itself is written here as the hub encodes it).
    static var goldenEventsV19: [(timeMicroseconds: UInt64, body: EventBody)] {
        let previous = goldenEventsV18 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 62_500, .boxKeyRevoked(boxKeyRevoked))]
    }

    /// Schema 18: a resident's heart-rate sensor linked with its bond (decision 0005), and the
    /// link's end.
    static var goldenEventsV18: [(timeMicroseconds: UInt64, body: EventBody)] {
        var open = LinkChanged()
        open.peer = 0xC0_11_22_33_44_55
        open.peerType = .addressRandom
        open.open = true
        open.role = .sensor
        open.resident = "r1"
        open.bonded = true
        var closed = open
        closed.open = false
        closed.bonded = false
        closed.reason = "the sensor disconnected"
        let previous = goldenEventsV17 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 62_500, .linkChanged(open)), (base + 125_000, .linkChanged(closed))]
    }

    /// Schema 17: a start whose phones open calls, a phone's call taken on the page, then
    /// confirmed (raised as an alert) and another dismissed.
    static var goldenEventsV17: [(timeMicroseconds: UInt64, body: EventBody)] {
        var taken = AlertTaken()
        taken.call = "phone:a1b2c3"
        taken.by = "Marta"
        taken.via = .page
        var confirmed = PhoneCallDecided()
        confirmed.call = "phone:a1b2c3"
        confirmed.confirmed = true
        confirmed.by = "Marta"
        confirmed.via = .page
        confirmed.alert = AlertID(origin: 0x00C0_FFEE, counter: 8)
        var dismissed = PhoneCallDecided()
        dismissed.call = "phone:d4e5f6"
        dismissed.by = "Luis"
        dismissed.via = .cli
        var started = NodeStarted()
        started.nodeID = 0x00C0_FFEE
        started.version = "0.17.0"
        started.board = "sim"
        started.radio = "hci0"
        started.phonesOpenCalls = true
        let previous = goldenEventsV16 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 62_500, .nodeStarted(started)), (base + 125_000, .alertTaken(taken)), (base + 250_000, .phoneCallDecided(confirmed)),
                                  (base + 500_000, .phoneCallDecided(dismissed))]
    }

    /// Schema 16: a call taken by SMS, a resident's call taken on the page, a call tree's step.
    static var goldenEventsV16: [(timeMicroseconds: UInt64, body: EventBody)] {
        var taken = AlertTaken()
        taken.id = AlertID(origin: 0x00C0_FFEE, counter: 7)
        taken.by = "Luis (+34600111222)"
        taken.via = .sms
        taken.heardFrom = 0x0BAD_CAFE
        var resident = AlertTaken()
        resident.resident = "room-12"
        resident.ladder = 3
        resident.by = "Marta"
        resident.via = .page
        var deadline = CallDeadline()
        deadline.call = "alert:c0ffee:7"
        deadline.tier = 1
        deadline.round = 2
        deadline.dueUs = start + 300_000_000
        var sms = SMSReceived()
        sms.file = "IN20261128_031200_00_+34600111222_00.txt"
        sms.sender = "+34600111222"
        sms.text = "Take T4821, José"
        sms.reading = .reply
        sms.error = "none"
        sms.receivedUs = start + 400_000_000
        sms.outcome = "not acted on: not a reply the box knows (TAKE, a call's code, OK)"
        let previous = goldenEventsV15 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 125_000, .callDeadline(deadline)), (base + 250_000, .alertTaken(taken)),
                                  (base + 500_000, .alertTaken(resident)), (base + 750_000, .smsReceived(sms))]
    }

    /// Schema 15: a start with the site, a road user's position report and a hazard deadline.
    static var goldenEventsV15: [(timeMicroseconds: UInt64, body: EventBody)] {
        var report = HazardReported()
        report.id = "PSM-0A1B2C3D"
        report.kind = .pedestrian
        report.source = .mqtt
        report.latitudeE7 = 334_351_000
        report.longitudeE7 = -1_120_108_000
        report.headingCentidegrees = 9_000
        report.speedCmPerS = 140
        report.expiresUs = start + 60_000_000
        report.messageType = "PSM"
        var deadline = HazardDeadline()
        deadline.dueUs = start + 10_000_000
        var started = NodeStarted()
        started.nodeID = 0x00C0_FFEE
        started.version = "0.1.0"
        started.board = "rpi4"
        started.radio = "hci0"
        started.siteLatitudeE7 = 334_351_000
        started.siteLongitudeE7 = -1_120_108_000
        started.roadDirectionCentidegrees = 9_000
        let previous = goldenEventsV14 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 125_000, .nodeStarted(started)), (base + 250_000, .hazardReported(report)),
                                  (base + 500_000, .hazardDeadline(deadline))]
    }

    /// Schema 14: a resident enrolled with a heart-rate sensor, the box's link to it opening, a
    /// reading logged as a check-in, and the link closing with its reason.
    static var goldenEventsV14: [(timeMicroseconds: UInt64, body: EventBody)] {
        var resident = Resident()
        resident.id = "R-0042"
        resident.name = "Ana Pérez"
        resident.mode = .pulse
        resident.intervalUs = 30 * 60_000_000
        resident.heartRateSensor = 0xC3_11_22_33_44_55
        resident.heartRateSensorType = .addressRandom
        var opened = LinkChanged()
        opened.peer = 0xC3_11_22_33_44_55
        opened.peerType = .addressRandom
        opened.open = true
        opened.role = .sensor
        opened.resident = "R-0042"
        var reading = CheckIn()
        reading.resident = "R-0042"
        reading.source = .checkInHeartRate
        reading.value = 72
        reading.heartRateFlags = 0x06
        var closed = opened
        closed.open = false
        closed.reason = "the sensor disconnected"
        let previous = goldenEventsV13 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 250_000, .residentEnrolled(resident)), (base + 500_000, .linkChanged(opened)),
                                  (base + 750_000, .checkIn(reading)), (base + 1_000_000, .linkChanged(closed))]
    }

    /// Hits of one window as a ScanBatch holds them: a plain one, one with every optional part,
    /// one without any RSSI, one sharing the first's advertisement.
    static var batchHits: [ScanHit] {
        var plain = ScanHit()
        plain.address = 0xD4_12_34_56_78_9A
        plain.addressType = .addressRandom
        plain.rssiMin = -71
        plain.rssiMax = -66
        plain.rssiSum = -205
        plain.count = 3
        plain.firstOffsetUs = 1_812_000
        plain.lastOffsetUs = 95_000
        var summary = AdvertisementSummary()
        summary.flags = 0x1A
        summary.companyID = 0x004C + 1
        plain.advertisement = summary
        var full = ScanHit()
        full.address = 0x00_1A_7D_DA_71_13
        full.addressType = .addressPublic
        full.rssiMin = -90
        full.rssiMax = -48
        full.rssiSum = -400
        full.count = 7
        full.rssiUnavailable = 2
        full.firstOffsetUs = 1_999_999
        full.lastOffsetUs = 0
        full.txPower = -12
        var gaen = AdvertisementSummary()
        gaen.flags = 0x1A
        gaen.serviceUuids16 = [0xFD6F]
        gaen.serviceDataUuids16 = [0xFD6F]
        gaen.gaenRpi = Data((0..<16).map { UInt8($0 &* 13 &+ 1) })
        gaen.gaenAem = Data([0x40, 0x08, 0x00, 0x00])
        gaen.name = "pixel"
        full.advertisement = gaen
        var silent = ScanHit()
        silent.address = 0xC0_00_00_00_00_01
        silent.addressType = .addressRandom
        silent.count = 2
        silent.rssiUnavailable = 2
        silent.firstOffsetUs = 700_000
        silent.lastOffsetUs = 600_000
        var twin = plain
        twin.address = 0xD4_12_34_56_78_9B
        twin.rssiMin = -80
        twin.rssiMax = -80
        twin.rssiSum = -80
        twin.count = 1
        twin.firstOffsetUs = 10
        twin.lastOffsetUs = 10
        return [plain, full, silent, twin]
    }

    /// The v12 golden stream: all of v11, a ScanBatch, and a compaction and a retention that
    /// carry the device list.
    static var goldenEventsV12: [(timeMicroseconds: UInt64, body: EventBody)] {
        let (batch, rest) = ScanBatch.packing(batchHits)
        precondition(rest.isEmpty, "every fixture hit fits a batch")
        var stay = DeviceStay()
        stay.address = 0xD4_12_34_56_78_9A
        stay.addressType = 1
        stay.firstSeenOffsetUs = 5_400_000_000
        stay.lastSeenOffsetUs = 2_000_000
        stay.hits = 2_700
        stay.reports = 8_100
        stay.rssiMin = -93
        stay.rssiMax = -51
        stay.rssiSum = -540_000
        stay.lastMeanRssiCentiDbm = -6_650
        stay.txPower = 8
        stay.name = "tag"
        stay.rssiUnavailable = 4
        stay.firstHitSequence = 90_001
        stay.deletableEarlier = 12
        stay.deletableFloor = 2_655_950
        stay.deletableSlots = [2_655_950, 2_655_951]
        stay.deletableCounts = [3, 1]
        stay.earliestHitOffsetUs = 5_400_900_000
        var stays = DeviceStays()
        stays.devices = [stay]
        guard case .scanSightings(var sightings)? = goldenEventsV11.last?.body else { preconditionFailure("v11 ends with sightings") }
        sightings.stays = stays
        var retention = ContactRetention()
        retention.cutoffUs = 1_592_352_000_000_000
        retention.stays = stays
        let previous = goldenEventsV11 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 250_000, .scanBatch(batch)), (base + 500_000, .scanSightings(sightings)),
                                  (base + 750_000, .contactRetention(retention))]
    }

    /// The v13 golden stream: all of v12 and the kinds schema 13 added (connections), every
    /// field set.
    static var goldenEventsV13: [(timeMicroseconds: UInt64, body: EventBody)] {
        var opened = LinkChanged()
        opened.peer = 0x00_AA_01_00_00_00
        opened.peerType = .addressPublic
        opened.open = true
        opened.role = .peripheral
        var closed = LinkChanged()
        closed.peer = 0x5A_0B_1C_2D_3E_4F
        closed.peerType = .addressRandom
        closed.open = false
        closed.role = .central
        closed.reason = "the peer wrote faster than its rate"
        var received = ChatMessage()
        received.peer = 0x5A_0B_1C_2D_3E_4F
        received.peerType = .addressRandom
        received.channel = .message
        received.outgoing = false
        received.text = "trapped on the roof, two of us"
        received.messageID = "6F1C2B0A-1111-4A5B-9C3D-000000000001"
        received.category = "sos"
        var sent = ChatMessage()
        sent.peer = 0x00_AA_01_00_00_00
        sent.peerType = .addressPublic
        sent.channel = .chat
        sent.outgoing = true
        sent.text = "water at the north door"
        sent.delivered = true
        var chatOpened = ChatOpened()
        chatOpened.peer = 0x00_AA_01_00_00_00
        let previous = goldenEventsV12 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 250_000, .linkChanged(opened)), (base + 500_000, .chatMessage(received)),
                                  (base + 750_000, .chatMessage(sent)), (base + 1_000_000, .chatOpened(chatOpened)),
                                  (base + 1_250_000, .linkChanged(closed))]
    }

    /// The kinds schema 6 added, every field set (from the v6 golden stream).
    static var schema6Bodies: [EventBody] {
        goldenEventsV6.suffix(3).map(\.body)
    }

    /// The kind schema 5 added, every field set (from the v5 golden stream).
    static var schema5Bodies: [EventBody] {
        goldenEventsV5.suffix(1).map(\.body)
    }

    /// One body of each kind added in schema 2, every field set.
    /// The kinds schema 4 added, every field set (from the v4 golden stream).
    static var schema4Bodies: [EventBody] {
        goldenEventsV4.suffix(3).map(\.body)
    }

    static var schema2Bodies: [EventBody] {
        var resident = Resident()
        resident.id = "R-0042"
        resident.name = "Ana Pérez"
        resident.mode = .time
        resident.intervalUs = 4 * 3_600_000_000
        resident.confirmUs = 20 * 60_000_000
        resident.textToAlarmUs = 5 * 60_000_000
        resident.alarmToNotifyUs = 5 * 60_000_000
        var contact = Contact()
        contact.name = "Luis"
        contact.address = "+34 600 000 000"
        resident.contacts = [contact]
        var pause = Pause()
        pause.startUs = start
        pause.endUs = start + 3_600_000_000
        resident.pauses = [pause]
        resident.night.startMinute = 22 * 60
        resident.night.endMinute = 7 * 60
        resident.night.utcOffsetMinutes = 60
        resident.bleTag = 0xC0_11_22_33_44_55

        var updated = resident
        updated.mode = .pulse
        updated.intervalUs = 30 * 60_000_000

        var removed = ResidentRemoved()
        removed.id = "R-0042"

        var deadline = DeadlineReached()
        deadline.resident = "R-0042"
        deadline.ladder = 3
        deadline.step = .text
        deadline.dueUs = start + 1_200_000_000

        var ack = AlarmAcknowledged()
        ack.by = "button"

        var attempt = OutboxAttempt()
        attempt.entry = "R-0042/3/text"
        attempt.attempt = 2
        attempt.delivered = false
        attempt.notifier = "command"
        attempt.error = "exit status 1: modem busy"

        return [
            .residentEnrolled(resident), .residentUpdated(updated), .residentRemoved(removed),
            .deadlineReached(deadline), .alarmAcknowledged(ack), .outboxAttempt(attempt),
        ]
    }

    /// The v2 golden stream: all of v1, a heart-rate check-in with its contact flags, and every
    /// kind schema 2 added.
    static var goldenEventsV2: [(timeMicroseconds: UInt64, body: EventBody)] {
        var checkIn = CheckIn()
        checkIn.resident = "R-7"
        checkIn.source = .checkInHeartRate
        checkIn.value = 64
        checkIn.heartRateFlags = 0b100 // contact supported, not detected
        var button = ButtonInput()
        button.line = 6
        button.edge = .falling
        button.kernelTimestampNs = 123_456_789
        button.role = "checkin:R-7"
        let added: [EventBody] = [.checkIn(checkIn), .buttonInput(button)] + schema2Bodies
        let previous = goldenEvents // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + added.enumerated().map { (base + UInt64($0.offset + 1) * 250_000, $0.element) }
    }

    /// The v3 golden stream: all of v2, a ScanHit with reports that had no RSSI, and a cancel
    /// heard over the air (the fields schema 3 added).
    static var goldenEventsV3: [(timeMicroseconds: UInt64, body: EventBody)] {
        var noRSSI = typicalScanHit
        noRSSI.address = 0x12_34_56_78_9A_BC
        noRSSI.count = 3
        noRSSI.rssiUnavailable = 2
        noRSSI.rssiMin = -70
        noRSSI.rssiMax = -70
        noRSSI.rssiSum = -70
        var cancel = AlertCancelled()
        cancel.id = AlertID(origin: 0x1234_5678, counter: 9)
        cancel.reason = "cancel heard over the air"
        cancel.hops = 2
        cancel.heardFrom = 0x0A_0B_0C_0D_0E_0F
        cancel.expiresAtUs = 1_800_000_000_000_000
        cancel.severity = .critical
        let added: [EventBody] = [.scanHit(noRSSI), .alertCancelled(cancel)]
        let previous = goldenEventsV2 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + added.enumerated().map { (base + UInt64($0.offset + 1) * 250_000, $0.element) }
    }

    /// The v4 golden stream: all of v3, a ScanHit carrying a GAEN identifier and a Vigil presence
    /// identifier, and the exposure kinds schema 4 added.
    static var goldenEventsV4: [(timeMicroseconds: UInt64, body: EventBody)] {
        var contact = typicalScanHit
        contact.address = 0x0F_1E_2D_3C_4B_5A
        contact.advertisement.serviceDataUuids16 = [0xFD6F]
        contact.advertisement.gaenRpi = Data((0..<16).map { UInt8($0) })
        contact.advertisement.gaenAem = Data([0x40, 0xF3, 0x00, 0x00])
        var peer = typicalScanHit
        peer.address = 0x1F_1E_2D_3C_4B_5A
        peer.advertisement.vigilPresence = Data((16..<32).map { UInt8($0) })
        var exposure = ExposureDetected()
        exposure.identifier = Data((0..<16).map { UInt8($0) })
        exposure.diagnosisKey = Data((100..<116).map { UInt8($0) })
        exposure.rollingStart = 2_655_936
        exposure.rollingPeriod = 144
        exposure.transmissionRiskLevel = 4
        exposure.reportType = 1
        exposure.firstSeenUs = 1_593_561_600_000_000
        exposure.lastSeenUs = 1_593_562_800_000_000
        exposure.secondsByBucket = [600, 300, 0, 0]
        exposure.txPower = -12
        exposure.minAttenuation = 51
        exposure.weightedMinutesMilli = 13_000
        exposure.highRisk = false
        exposure.source = "export.bin"
        exposure.scanInstances = 240
        var retention = ContactRetention()
        retention.cutoffUs = 1_592_352_000_000_000
        retention.removedEvents = 1_234
        retention.firstRemovedSequence = 1
        retention.lastRemovedSequence = 1_300
        var published = ExposureKeysPublished()
        published.keys = 14
        published.firstInterval = 2_654_064
        published.lastInterval = 2_655_936
        published.path = "/var/lib/vigil/export"
        let added: [EventBody] = [.scanHit(contact), .scanHit(peer), .exposureDetected(exposure),
                                  .contactRetention(retention), .exposureKeysPublished(published)]
        let previous = goldenEventsV3 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + added.enumerated().map { (base + UInt64($0.offset + 1) * 250_000, $0.element) }
    }

    /// The v5 golden stream: all of v4 and an acknowledgement heard over the air.
    static var goldenEventsV5: [(timeMicroseconds: UInt64, body: EventBody)] {
        var acknowledged = AlertAcknowledged()
        acknowledged.id = AlertID(origin: 0x0A11_CE01, counter: 42)
        acknowledged.hops = 1
        acknowledged.heardFrom = 0x3A_4B_5C_6D_7E_8F
        acknowledged.expiresAtUs = 1_593_565_200_000_000
        acknowledged.severity = .critical
        let previous = goldenEventsV4 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + [(base + 250_000, .alertAcknowledged(acknowledged))]
    }

    /// The v6 golden stream: all of v5, a resident and a scan hit with schema 6's fields, and the
    /// three kinds schema 6 added.
    static var goldenEventsV6: [(timeMicroseconds: UInt64, body: EventBody)] {
        var resident = Resident()
        resident.id = "R-0043"
        resident.name = "Luz"
        resident.mode = .pulse
        resident.intervalUs = 2 * 3_600_000_000
        resident.ownAddress = "+34611111111"
        resident.room = "Hall B, bed 12"
        var weekdays = WeeklySlot()
        weekdays.days = 0b001_1111
        weekdays.startMinute = 9 * 60
        weekdays.endMinute = 12 * 60
        var weekend = WeeklySlot()
        weekend.days = 0b110_0000
        weekend.startMinute = 22 * 60
        weekend.endMinute = 8 * 60
        resident.weeklyPauses = [weekdays, weekend]
        resident.timeZone = "Europe/Madrid"
        var phone = ScanHit()
        phone.address = 0x5A_11_22_33_44_55
        phone.addressType = .addressRandom
        phone.rssiMin = -70
        phone.rssiMax = -64
        phone.rssiSum = -134
        phone.count = 2
        phone.advertisement.serviceUuids128 = [Data((0..<16).map { UInt8($0) })]
        phone.advertisement.serviceDataUuids128 = [Data((0..<16).map { UInt8(0xF0 | $0) })]
        var expired = AlertExpired()
        expired.id = AlertID(origin: 0x0A11_CE01, counter: 42)
        expired.expiresAtUs = 1_593_565_200_000_000
        var reaffirmed = AlertReaffirmed()
        reaffirmed.id = AlertID(origin: 0x0A11_CE01, counter: 43)
        reaffirmed.expiresAtUs = 1_593_568_800_000_000
        reaffirmed.by = "button"
        var downtime = DowntimeDetected()
        downtime.fromUs = 1_593_550_000_000_000
        downtime.toUs = 1_593_560_000_000_000
        let added: [EventBody] = [.residentEnrolled(resident), .scanHit(phone), .alertExpired(expired),
                                  .alertReaffirmed(reaffirmed), .downtimeDetected(downtime)]
        let previous = goldenEventsV5 // once: each version builds on the one before
        let base = previous.last?.timeMicroseconds ?? start
        return previous + added.enumerated().map { (base + UInt64($0.offset + 1) * 250_000, $0.element) }
    }

    /// The v1 golden event stream: every kind at least once, optional fields present and absent,
    /// zero-valued optionals that are present, and empty messages.
    static var goldenEvents: [(timeMicroseconds: UInt64, body: EventBody)] {
        var bodies: [EventBody] = []
        var started = NodeStarted()
        started.nodeID = nodeID
        started.version = "0.1.0"
        started.board = "simulated"
        started.radio = "simulated"
        bodies.append(.nodeStarted(started))

        var radioOn = RadioStateChanged()
        radioOn.state = .on
        radioOn.adapter = "hci0"
        bodies.append(.radioStateChanged(radioOn))

        bodies.append(.scanHit(typicalScanHit)) // no tx power, no name
        var named = typicalScanHit
        named.address = 0x00_1A_7D_DA_71_13
        named.addressType = .addressPublic
        named.txPower = 0 // present, and zero
        named.advertisement.name = "HR Strap"
        named.advertisement.connectable = true
        named.advertisement.companyID = 0x0059 + 1
        bodies.append(.scanHit(named))
        var bare = ScanHit() // no advertisement at all
        bare.address = 1
        bare.count = 1
        bare.rssiMin = -99
        bare.rssiMax = -99
        bare.rssiSum = -99
        bodies.append(.scanHit(bare))

        var withLocation = Alert()
        withLocation.id = AlertID(origin: nodeID, counter: 1)
        withLocation.kind = .sos
        withLocation.severity = .critical
        withLocation.location.latitudeE7 = 0 // present, and zero
        withLocation.location.longitudeE7 = -1
        withLocation.text = "SOS"
        bodies.append(.alertRaised(withLocation))

        var relayed = Alert() // no location, no expiry
        relayed.id = AlertID(origin: 0xAB, counter: 2)
        relayed.kind = .roadHazard
        relayed.severity = .info
        relayed.hops = 2
        relayed.heardFrom = 0xCD
        relayed.text = "Tree down on Route 9"
        bodies.append(.alertReceived(relayed))

        var cancel = AlertCancelled()
        cancel.id = AlertID(origin: nodeID, counter: 1)
        cancel.by = nodeID
        bodies.append(.alertCancelled(cancel)) // no reason

        var heart = CheckIn()
        heart.resident = "R-0042"
        heart.source = .checkInHeartRate
        heart.value = 64.25
        bodies.append(.checkIn(heart))
        var plain = CheckIn() // no value
        plain.resident = "R-0007"
        plain.source = .checkInButton
        bodies.append(.checkIn(plain))

        var press = ButtonInput()
        press.line = 4
        press.edge = .rising
        press.kernelTimestampNs = 5_000_000_123
        bodies.append(.buttonInput(press))

        bodies.append(.nodeStopped(NodeStopped())) // empty payload

        var stopped = NodeStopped()
        stopped.reason = "shutdown"
        bodies.append(.nodeStopped(stopped))

        return bodies.enumerated().map { (start + UInt64($0.offset) * 250_000, $0.element) }
    }
}

// MARK: - Bodies as protobuf messages (for JSON)

extension EventBody {
    /// The payload message, for swift-protobuf's JSON.
    var message: any SwiftProtobuf.Message {
        switch self {
        case .scanHit(let m): m
        case .alertReceived(let m), .alertRaised(let m): m
        case .alertCancelled(let m): m
        case .checkIn(let m): m
        case .buttonInput(let m): m
        case .nodeStarted(let m): m
        case .nodeStopped(let m): m
        case .radioStateChanged(let m): m
        case .residentEnrolled(let m), .residentUpdated(let m): m
        case .residentRemoved(let m): m
        case .deadlineReached(let m): m
        case .alarmAcknowledged(let m): m
        case .outboxAttempt(let m): m
        case .exposureDetected(let m): m
        case .contactRetention(let m): m
        case .exposureKeysPublished(let m): m
        case .alertAcknowledged(let m): m
        case .alertExpired(let m): m
        case .alertReaffirmed(let m): m
        case .downtimeDetected(let m): m
        case .hubAcknowledged(let m): m
        case .hubEpochStarted(let m): m
        case .hubReceived(let m): m
        case .occupancySampled(let m): m
        case .exposureKeysOffered(let m): m
        case .exposureKeysMatched(let m): m
        case .hubFeedRewound(let m): m
        case .logSalvaged(let m): m
        case .scanSightings(let m): m
        case .scanBatch(let m): m
        case .linkChanged(let m): m
        case .chatMessage(let m): m
        case .chatOpened(let m): m
        case .hazardReported(let m): m
        case .hazardDeadline(let m): m
        case .alertTaken(let m): m
        case .callDeadline(let m): m
        case .smsReceived(let m): m
        case .phoneCallDecided(let m): m
        case .boxKeyRevoked(let m): m
        case .warningReceived(let m): m
        case .warningDeadline(let m): m
        case .warningHeard(let m): m
        }
    }

    /// Parses a payload written by swift-protobuf's JSON encoder as the message of `kind`.
    init(kind: EventKind, payloadJSON json: String) throws {
        switch kind {
        case .scanHit: self = .scanHit(try ScanHit(jsonString: json))
        case .alertReceived: self = .alertReceived(try Alert(jsonString: json))
        case .alertRaised: self = .alertRaised(try Alert(jsonString: json))
        case .alertCancelled: self = .alertCancelled(try AlertCancelled(jsonString: json))
        case .checkIn: self = .checkIn(try CheckIn(jsonString: json))
        case .buttonInput: self = .buttonInput(try ButtonInput(jsonString: json))
        case .nodeStarted: self = .nodeStarted(try NodeStarted(jsonString: json))
        case .nodeStopped: self = .nodeStopped(try NodeStopped(jsonString: json))
        case .radioStateChanged: self = .radioStateChanged(try RadioStateChanged(jsonString: json))
        case .residentEnrolled: self = .residentEnrolled(try Resident(jsonString: json))
        case .residentUpdated: self = .residentUpdated(try Resident(jsonString: json))
        case .residentRemoved: self = .residentRemoved(try ResidentRemoved(jsonString: json))
        case .deadlineReached: self = .deadlineReached(try DeadlineReached(jsonString: json))
        case .alarmAcknowledged: self = .alarmAcknowledged(try AlarmAcknowledged(jsonString: json))
        case .outboxAttempt: self = .outboxAttempt(try OutboxAttempt(jsonString: json))
        case .exposureDetected: self = .exposureDetected(try ExposureDetected(jsonString: json))
        case .contactRetention: self = .contactRetention(try ContactRetention(jsonString: json))
        case .exposureKeysPublished: self = .exposureKeysPublished(try ExposureKeysPublished(jsonString: json))
        case .alertAcknowledged: self = .alertAcknowledged(try AlertAcknowledged(jsonString: json))
        case .alertExpired: self = .alertExpired(try AlertExpired(jsonString: json))
        case .alertReaffirmed: self = .alertReaffirmed(try AlertReaffirmed(jsonString: json))
        case .downtimeDetected: self = .downtimeDetected(try DowntimeDetected(jsonString: json))
        case .hubAcknowledged: self = .hubAcknowledged(try HubAcknowledged(jsonString: json))
        case .hubEpochStarted: self = .hubEpochStarted(try HubEpochStarted(jsonString: json))
        case .hubReceived: self = .hubReceived(try HubReceived(jsonString: json))
        case .occupancySampled: self = .occupancySampled(try OccupancySampled(jsonString: json))
        case .exposureKeysOffered: self = .exposureKeysOffered(try ExposureKeysOffered(jsonString: json))
        case .exposureKeysMatched: self = .exposureKeysMatched(try ExposureKeysMatched(jsonString: json))
        case .hubFeedRewound: self = .hubFeedRewound(try HubFeedRewound(jsonString: json))
        case .logSalvaged: self = .logSalvaged(try LogSalvaged(jsonString: json))
        case .scanSightings: self = .scanSightings(try ScanSightings(jsonString: json))
        case .scanBatch: self = .scanBatch(try ScanBatch(jsonString: json))
        case .linkChanged: self = .linkChanged(try LinkChanged(jsonString: json))
        case .chatMessage: self = .chatMessage(try ChatMessage(jsonString: json))
        case .chatOpened: self = .chatOpened(try ChatOpened(jsonString: json))
        case .hazardReported: self = .hazardReported(try HazardReported(jsonString: json))
        case .hazardDeadline: self = .hazardDeadline(try HazardDeadline(jsonString: json))
        case .alertTaken: self = .alertTaken(try AlertTaken(jsonString: json))
        case .callDeadline: self = .callDeadline(try CallDeadline(jsonString: json))
        case .smsReceived: self = .smsReceived(try SMSReceived(jsonString: json))
        case .phoneCallDecided: self = .phoneCallDecided(try PhoneCallDecided(jsonString: json))
        case .boxKeyRevoked: self = .boxKeyRevoked(try BoxKeyRevoked(jsonString: json))
        case .warningReceived: self = .warningReceived(try WarningReceived(jsonString: json))
        case .warningDeadline: self = .warningDeadline(try WarningDeadline(jsonString: json))
        case .warningHeard: self = .warningHeard(try WarningHeard(jsonString: json))
        case .unspecified, .UNRECOGNIZED: throw GoldenFormatError("no payload type for kind \(kind.name)")
        }
    }
}

struct GoldenFormatError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
