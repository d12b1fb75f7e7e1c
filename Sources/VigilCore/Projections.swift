#if canImport(FoundationEssentials)
import FoundationEssentials // Data and JSON for checkpoints: value types, no I/O
#else
import Foundation
#endif
import VigilCAP
import VigilEvents

/// Settings the reducers depend on. They are part of the state so a reducer stays a function of
/// (state, event); a changed setting applies from the moment the node loads it.
public struct ProjectionSettings: Sendable, Equatable {
    public var devicePruneAfterMicroseconds: UInt64 = 300_000_000
    /// The ladder's view of the shelter: site, staff channel, zone rules (`site.*`, `notify.staff`).
    public var ladder = LadderContext()
    /// The shelter for judging hazards (`site.location`, `site.road_direction`): the node logs it
    /// in its `NodeStarted`, from which the hazard book takes it.
    public var hazardSite: HazardSite?
    /// Who is told of a call for help, and when (`calls.tree`, or `notify.staff` then `arc`).
    public var callTree = CallTree()
    /// Where the shelter is for public warnings, its codes and languages (`warnings.*`, `site.location`).
    public var warnings = CAPWarningSettings()
    public init() {}
}

/// All projections of a node, and the last sequence they include.
public struct Projections: Projection {
    public var appliedThrough: UInt64 = 0
    public var health = NodeHealth()
    public var devices: DeviceList
    public var alerts = AlertBook()
    public var checkIns = CheckInBook()
    public var escalations = EscalationBook()
    public var outbox = Outbox()
    public var alarms = AlarmState()
    public var exposures = ExposureBook()
    /// What retention may delete, counted as it is applied.
    public var retention = RetentionLedger()
    /// Where the box stands with its hub.
    public var hub = HubSyncBook()
    /// Chats with phones and boxes over GATT.
    public var conversations = Conversations()
    /// Residents' heart-rate sensors: their links and last readings.
    public var sensors = SensorLinks()
    /// Road users, work zones and jams near the shelter, and the warning they raise.
    public var hazards = HazardBook()
    /// Calls for help walking the call tree until a person takes them.
    public var calls = CallBook()
    /// SMS that reached the box, and what it made of them.
    public var sms = SMSBook()
    /// Public warnings (CAP 1.2) in force, and how loud each is.
    public var warnings = WarningBook()

    /// The checkpoint's name in the log.
    /// v3: schema 4 added the exposure book (an older checkpoint is ignored: the log is replayed).
    /// v4: schema 5 added acknowledgements to the alert book, and the book forgets long-ended
    /// alerts.
    /// v5: schema 6 gave residents their own address, room, weekly pauses and time zone, and the
    /// ladder keeps its start time and the shelter's settings (older checkpoints cannot hold them);
    /// `vigil ack` also silences the chirp of calls for help received from other boxes (an old
    /// log's AlarmAcknowledged now silences more); alerts end with AlertExpired and are extended
    /// by AlertReaffirmed.
    /// v6: retention forgets only what it deletes (the retention ledger, device stays, the
    /// sequence each tag was enrolled at).
    /// v7: schema 7 (the hub's acknowledgements and the box's upload epochs).
    /// v8: schema 8 (occupancy): the health projection keeps the newest sample and when the radio
    /// last changed state.
    /// v9: schema 9 (diagnosis-key files from the hub, a feed given out again): the exposure book
    /// keeps the offers not yet matched and how the last one ended; the hub book the fingerprint
    /// of the feed item at its cursor.
    /// v10: schema 10 (a damaged log salvaged): the health projection keeps the last salvage.
    /// v11: schema 11 (compacted sightings): the retention ledger counts scan hits by ten-minute
    /// slot, and each device its stay's.
    /// v12: schema 12 (scan batches): the retention ledger counts them by slot.
    /// v13: schema 13 (connections): conversations with phones and boxes.
    /// v14: schema 14 (heart-rate sensors): residents' sensors, their links and last readings.
    /// v15: schema 15 (active hazards): the hazard book.
    /// v16: schema 16 (calls for help reach a person): the call book, its tree and takers.
    /// v17: the alarm receiving centre (call numbers, troubles raised, the outbox's alarm entries
    /// and their numbers) and residents' prompts to their own number only.
    /// v18: schema 18 (bonded heart-rate sensors): a sensor's link says whether it was bonded.
    /// v19: schema 20 (public warnings): the warning book.
    /// v20: a warning that sounds is told to the staff channel (the outbox's `warning/` entries).
    public static let checkpointName = "projections.v21"

    public init(settings: ProjectionSettings = ProjectionSettings()) {
        devices = DeviceList(pruneAfterMicroseconds: settings.devicePruneAfterMicroseconds)
        escalations.context = settings.ladder
        calls.tree = settings.callTree
        warnings.settings = settings.warnings
    }

    /// Same result as applying `input` to each projection in turn; dispatches on the event once
    /// so the replay hot path does not copy every event into all four projections.
    public mutating func apply(_ input: ProjectionInput) {
        switch input {
        case .undecodable(let error):
            appliedThrough = max(appliedThrough, error.sequence)
            health.apply(input)
        case .event(let event):
            apply(event)
        }
    }

    public mutating func apply(_ event: Event) {
        appliedThrough = max(appliedThrough, event.sequence)
        health.record(event)
        hub.countIfShared(event.body.kind)
        let time = event.timeMicroseconds
        devices.observe(time: time)
        alerts.observe(time: time)
        switch event.body {
        case .scanHit(let hit):
            let fields = ScanHitFields(hit)
            let deletable = !escalations.wasEverTag(fields.address & 0xFFFF_FFFF_FFFF)
            let slot = SlotTally.slot(ofMicroseconds: time)
            if deletable { retention.scanHits.add(day: slot) }
            retention.recentScanHits.add(slot: slot, sequence: event.sequence, deletable: deletable)
            devices.fold(fields, time: time, sequence: event.sequence, deletable: deletable)
            if escalations.hasTags { addMessages(escalations.apply(event), event) }
        case .scanBatch(let batch):
            apply(scanBatch: batch, event: event)
        case .alertRaised(let alert):
            alerts.apply(alertEvent: event)
            if alert.kind == .sos {
                outbox.add(id: "sos/\(alert.id.text)/raised", channel: .broadcast, recipients: [],
                           text: "SOS \(alert.id.text)", event: event)
            }
            followCall(ofAlert: alert.id.text, event: event)
            settleAlarms()
        case .alertCancelled(let cancel):
            // Only an SOS raised here has broadcast outbox entries (a hazard raised here has none).
            let ours = alerts.alerts[cancel.id.text].map { $0.raisedHere && $0.kind == AlertKind.sos.rawValue } == true
            alerts.apply(alertEvent: event)
            if ours {
                outbox.add(id: "sos/\(cancel.id.text)/cancelled", channel: .broadcast, recipients: [],
                           text: "SOS \(cancel.id.text) cancelled", event: event)
            }
            followCall(ofAlert: cancel.id.text, event: event, cancelReason: cancel.reason)
            settleAlarms()
        case .alertReceived(let alert):
            alerts.apply(alertEvent: event)
            followCall(ofAlert: alert.id.text, event: event)
            settleAlarms()
        case .alertAcknowledged(let ack):
            alerts.apply(alertEvent: event)
            followCall(ofAlert: ack.id.text, event: event)
            settleAlarms()
        case .alertExpired(let expiry):
            alerts.apply(alertEvent: event)
            followCall(ofAlert: expiry.id.text, event: event)
            settleAlarms()
        case .alertTaken(let t):
            take(t, event: event)
        case .callDeadline(let d):
            addCallMessages(calls.reached(d, event: event), event)
        case .smsReceived(let m):
            sms.apply(m, event: event)
        case .alertReaffirmed:
            alerts.apply(alertEvent: event)
            alarms.reaffirmed(event)
            settleAlarms()
        case .checkIn:
            checkIns.apply(.event(event))
            sensors.apply(event)
            addMessages(escalations.apply(event), event)
            followResidentCalls(event)
            settleAlarms()
        case .residentEnrolled, .residentUpdated, .residentRemoved, .deadlineReached:
            sensors.apply(event)
            addMessages(escalations.apply(event), event)
            followResidentCalls(event)
            settleAlarms()
        case .buttonInput:
            alarms.apply(.event(event))
        case .alarmAcknowledged:
            alarms.acknowledge(sounding: OutputPolicy.soundingAlarms(self), event: event)
        case .outboxAttempt:
            outbox.apply(.event(event))
        case .downtimeDetected(let d):
            // The box's own downtime, told to the staff once (issue 10, item 7).
            let staff = escalations.context.staff
            if !staff.isEmpty {
                outbox.add(id: "downtime/\(event.sequence)", channel: .staff, recipients: staff,
                           text: escalations.downtimeText(d), event: event)
            }
        case .contactRetention(let r):
            // Contact data before the cutoff is being deleted (`RetentionPlan`): exactly what it
            // deletes is forgotten here, whether the deletion has run yet or not, so status
            // agrees with the log and replay of the shortened log gives the same state.
            let cutoffDay = DayTally.day(ofMicroseconds: RetentionPlan.alignedCutoff(r.cutoffUs))
            let cutoffSlot = SlotTally.slot(ofMicroseconds: RetentionPlan.alignedCutoff(r.cutoffUs))
            // Scan hits: unless a compaction already went past the cutoff (it decided then what
            // is left of everything before it; the deletion then follows its keep set).
            if cutoffSlot > retention.scanHits.floorDay {
                if r.hasStays { devices.restore(r.stays, at: time) }
                forgetScanHits(before: cutoffSlot, at: time)
            }
            health.forget(retention.exposures.count(before: cutoffDay), of: .exposureDetected)
            retention.exposures.collapse(before: cutoffDay, earlier: 0)
            health.forget(retention.sightings.count(before: cutoffDay), of: .scanSightings)
            retention.sightings.collapse(before: cutoffDay, earlier: 0)
            // The alert book's hourly pruning ran at times set by events that may be deleted:
            // it runs here too, so it is in step from this event on.
            alerts.prune(now: time)
            exposures.apply(.event(event))
        case .scanSightings(let s):
            // The raw hits before the span's end are being deleted, but for the stays still going
            // on (`CompactionPlan`): forgotten here, as at retention. Each compaction decides
            // again for everything before its end, so a stay a decision kept and a later one
            // deleted (it ended) leaves every count right.
            retention.sightings.add(day: DayTally.day(ofMicroseconds: time))
            if s.hasStays { devices.restore(s.stays, at: time) }
            forgetScanHits(before: SlotTally.slot(ofMicroseconds: s.spanEndUs), at: time)
            retention.compaction = CompactionSpan(startMicroseconds: s.spanStartUs, endMicroseconds: s.spanEndUs,
                                                  firstSequence: s.firstSequence, lastSequence: event.sequence &- 1)
            alerts.prune(now: time)
        case .exposureDetected:
            retention.exposures.add(day: DayTally.day(ofMicroseconds: time))
            exposures.apply(.event(event))
        case .hubAcknowledged, .hubEpochStarted, .hubFeedRewound:
            hub.apply(event)
        case .hubReceived(let r):
            // An item at or before the cursor was taken already (the feed was read again).
            guard r.position > hub.feedCursor else { break }
            hub.apply(event)
            if let item = Self.fromHub(r, event: event) {
                // Read again after a rewind, an answer to an alert this box no longer holds (long
                // ended, forgotten) is history: applied, it would put a stale cancel on the air.
                if r.replayed, !Self.answersKnownAlert(item, alerts) { break }
                if case .alertTaken(let t) = item.body {
                    // A taking of an alert this box never heard names nothing here.
                    if Self.answersKnownAlert(item, alerts) { take(t, event: item) }
                    break
                }
                alerts.apply(alertEvent: item)
                if let key = Self.alertKey(of: item.body) { followCall(ofAlert: key, event: item) }
                settleAlarms()
            } else if r.kind == EventKind.warningReceived.rawValue, r.originNode == 0,
                      case .warningReceived(var w)? = try? EventCodec.decode(kind: r.kind, payload: [UInt8](r.payload), sequence: event.sequence) {
                // A public warning the hub relayed (docs/warnings.md "The hub relays"): judged as
                // the box judges its own feeds', under an origin of its own, so the hub's copy (under
                // the hub's signature rule) never updates or cancels what the box's own poll of the
                // feed brought, and the same message from both is one warning. Never staff's.
                w.feed = WarningBook.relayedOrigin(w.feed)
                w.byStaff = false
                applyWarning(Event(sequence: event.sequence, timeMicroseconds: event.timeMicroseconds, body: .warningReceived(w)))
            } else if r.kind == EventKind.exposureKeysOffered.rawValue,
                      case .exposureKeysOffered(let offer)? = try? EventCodec.decode(kind: r.kind, payload: [UInt8](r.payload), sequence: event.sequence) {
                exposures.offered(offer, hub: r.hub, sequence: event.sequence, atMicroseconds: r.timeUs)
            }
        case .exposureKeysPublished, .exposureKeysMatched:
            exposures.apply(.event(event))
        case .hazardReported, .hazardDeadline:
            hazards.apply(event)
        case .warningReceived, .warningDeadline, .warningHeard:
            applyWarning(event)
        case .nodeStarted(let started):
            hazards.apply(event)
            calls.phonesOpenCalls = started.phonesOpenCalls ? true : nil
        case .logSalvaged:
            addCallMessages(calls.trouble(.logDamaged, raised: true, once: true, event: event), event)
        case .radioStateChanged(let change):
            // The box's own stop turns its radio off: not a trouble.
            if change.state == .on {
                addCallMessages(calls.trouble(.radioLost, raised: false, event: event), event)
            } else if change.reason != NodeHealth.radioStopReason {
                addCallMessages(calls.trouble(.radioLost, raised: true, event: event), event)
            }
        case .linkChanged(let link) where link.role == .sensor:
            sensors.apply(event)
        case .chatMessage(let m):
            conversations.apply(event)
            phoneAsked(m, event: event)
        case .phoneCallDecided(let d):
            addCallMessages(calls.phoneDecided(d, event: event), event)
        case .linkChanged, .chatOpened:
            conversations.apply(event)
        default:
            break
        }
    }

    /// Whether a scan hit must be applied as its whole event (`apply(_:)`) rather than as its
    /// fields: when it is the sighting of a resident's tag, the escalation ladder takes the event.
    /// Tags are every address that ever was one (`EscalationBook.tagSince`, a superset of the
    /// current ones), so this is false for every other hit.
    @inline(__always)
    public func needsWholeEvent(forScanHit hit: ScanHitFields) -> Bool {
        escalations.wasEverTag(hit.address & 0xFFFF_FFFF_FFFF)
    }

    /// A feed item as the alert book takes it: a call for help raised at another box is one
    /// received here (merged by id with the same alert heard over the air); its cancel,
    /// re-affirmation or acknowledgement was made elsewhere. nil for anything else.
    static func fromHub(_ r: HubReceived, event: Event) -> Event? {
        guard let body = try? EventCodec.decode(kind: r.kind, payload: [UInt8](r.payload), sequence: event.sequence) else { return nil }
        let origin = r.originNode == 0 ? UInt64.max : r.originNode
        // Read again after a rewind, an item keeps its origin's time (when it is earlier): a cancel
        // from long ago is not a cancel of now, to be put on the air again.
        let time = r.replayed ? min(r.timeUs, event.timeMicroseconds) : event.timeMicroseconds
        let item: EventBody
        switch body {
        case .alertRaised(var a), .alertReceived(var a):
            if a.heardFrom == 0 { a.heardFrom = origin }
            item = .alertReceived(a)
        case .alertCancelled(var c):
            if c.heardFrom == 0 { c.heardFrom = origin }
            item = .alertCancelled(c)
        case .alertReaffirmed(let x):
            item = .alertReaffirmed(x)
        case .alertAcknowledged(var k):
            if k.heardFrom == 0 { k.heardFrom = origin }
            item = .alertAcknowledged(k)
        case .alertTaken(var t):
            // Only takings made at a box (or by a coordinator): one heard from the feed is not fed
            // again by the box that heard it.
            if t.heardFrom == 0 { t.heardFrom = origin }
            item = .alertTaken(t)
        default:
            return nil
        }
        return Event(sequence: event.sequence, timeMicroseconds: time, body: item)
    }

    /// Whether `item` (from `fromHub`) is a raise, or answers an alert the book holds.
    static func answersKnownAlert(_ item: Event, _ alerts: AlertBook) -> Bool {
        switch item.body {
        case .alertCancelled(let c): alerts.alerts[c.id.text] != nil
        case .alertAcknowledged(let k): alerts.alerts[k.id.text] != nil
        case .alertReaffirmed(let x): alerts.alerts[x.id.text] != nil
        case .alertTaken(let t): !t.hasID || alerts.alerts[t.id.text] != nil
        default: true
        }
    }

    /// What the last retention event deletes (nil before the first): the log's purge follows it.
    public var retentionPlan: RetentionPlan? {
        guard exposures.lastRetentionSequence > 0 else { return nil }
        return RetentionPlan(cutoffMicroseconds: RetentionPlan.alignedCutoff(exposures.lastRetentionCutoffMicroseconds),
                             throughSequence: exposures.lastRetentionSequence - 1,
                             tagSince: escalations.tagSince, keep: retention.keep)
    }

    /// What the last compaction deletes (nil before the first): the log's purge follows it.
    public var compactionPlan: CompactionPlan? {
        guard let span = retention.compaction else { return nil }
        return CompactionPlan(spanStartMicroseconds: span.startMicroseconds, spanEndMicroseconds: span.endMicroseconds,
                              firstSequence: span.firstSequence, lastSequence: span.lastSequence,
                              keep: retention.keep, tagSince: escalations.tagSince)
    }

    /// A retention or compaction at `time` deletes every deletable scan hit before `cutoffSlot`
    /// except the stays still going on: the device list's keep set and the hits it keeps; the
    /// rest is forgotten. The keep set replaces the last one (it covers everything before).
    private mutating func forgetScanHits(before cutoffSlot: UInt32, at time: UInt64) {
        let (keep, kept) = devices.retain(at: time, cutoffSlot: cutoffSlot)
        let deletableHits = retention.scanHits.count(before: cutoffSlot)
        health.forget(deletableHits > kept ? deletableHits - kept : 0, of: .scanHit)
        retention.scanHits.collapse(before: cutoffSlot, earlier: kept)
        health.forget(retention.scanBatches.count(before: cutoffSlot), of: .scanBatch)
        retention.scanBatches.collapse(before: cutoffSlot, earlier: 0)
        retention.recentScanHits.drop(before: cutoffSlot)
        retention.keep = keep
    }

    /// The replay hot path for the hot kind: a ScanHit as the fields replay decoded, without the
    /// generated message. The same result as `apply(_:)` with the whole event, for every hit for
    /// which `needsWholeEvent(forScanHit:)` is false (the caller applies the event otherwise).
    public mutating func apply(scanHit hit: ScanHitFields, sequence: UInt64, timeMicroseconds time: UInt64) {
        appliedThrough = max(appliedThrough, sequence)
        health.recordScanHit(timeMicroseconds: time)
        devices.observe(time: time)
        alerts.observe(time: time)
        let slot = SlotTally.slot(ofMicroseconds: time)
        retention.scanHits.add(day: slot)
        retention.recentScanHits.add(slot: slot, sequence: sequence, deletable: true)
        devices.fold(hit, time: time, sequence: sequence, deletable: true)
    }

    /// One scan window's hits (`ScanBatch`), each folded as a ScanHit of the record's time would
    /// be, but counted as one record: retention and compaction delete it whole, never keeping it
    /// for a stay (the event that deletes it carries the entries of the stays it reaches), only for
    /// a tag's sighting.
    private mutating func apply(scanBatch batch: ScanBatch, event: Event) {
        let time = event.timeMicroseconds
        var tagSighting = false
        // Validated when it was decoded: no hit can be malformed here.
        try? batch.forEachHit { hit, advertisement in
            devices.fold(hit, time: time, sequence: event.sequence, deletable: false)
            let address = hit.address & 0xFFFF_FFFF_FFFF
            if escalations.wasEverTag(address) { tagSighting = true }
            if escalations.isTag(address) {
                let sighting = Event(sequence: event.sequence, timeMicroseconds: time, body: .scanHit(batch.scanHit(hit, advertisement: advertisement)))
                addMessages(escalations.apply(sighting), event)
            }
        }
        let slot = SlotTally.slot(ofMicroseconds: time)
        if !tagSighting { retention.scanBatches.add(day: slot) }
        retention.recentScanHits.add(slot: slot, sequence: event.sequence, deletable: !tagSighting)
    }

    private mutating func addMessages(_ messages: [EscalationBook.Message], _ event: Event) {
        for m in messages {
            let channel: Outbox.Channel = switch m.audience {
            case .resident: .resident
            case .contacts: .contacts
            case .staff: .staff
            }
            outbox.add(id: m.id, channel: channel, recipients: m.recipients,
                       text: m.text, event: event)
        }
    }

    /// Silenced alarms that are over are forgotten, so a new alarm for the same cause sounds.
    mutating func settleAlarms() {
        guard !alarms.silenced.isEmpty else { return }
        let ladder = escalations.alarming.map(AlarmKey.ladder)
        let sos = alerts.active.filter { $0.raisedHere }.map(AlarmKey.sos)
        let calls = alerts.awaitingAcknowledgement.map(AlarmKey.received)
        let warned = warnings.inForceHere.filter { $0.level == .sounds }.map(AlarmKey.warning)
        alarms.keepOnly(Set(ladder + sos + calls + warned))
    }

    /// Deterministic encoding (sorted keys, sorted collections): equal states give equal bytes,
    /// which is what `vigil replay` compares.
    public func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(self))
    }

    public static func decoded(_ bytes: [UInt8]) throws -> Projections {
        try JSONDecoder().decode(Projections.self, from: Data(bytes))
    }
}
