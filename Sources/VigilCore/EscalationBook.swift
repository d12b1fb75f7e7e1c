import VigilEvents

/// Residents who must check in, and where each stands on the "are you OK?" ladder:
/// prompt → (confirm, default 20 min) → text to the resident (their own address) and to the
/// shelter's staff → (5 min) → loud alarm → (5 min) → contacts told the emergency was triggered.
///
/// Pure: the ladder moves only on events. The node's scheduler reads `nextDeadline(for:)`, and
/// when that time comes it appends a DeadlineReached; applying it advances the ladder. So replay
/// rebuilds the same ladder without re-sending a text or re-sounding an alarm, and a node that
/// restarts mid-ladder appends the overdue deadlines one by one — none skipped, none repeated.
public struct EscalationBook: Projection {
    public static let defaultConfirmMicroseconds: UInt64 = 20 * 60_000_000
    public static let defaultTextToAlarmMicroseconds: UInt64 = 5 * 60_000_000
    public static let defaultAlarmToNotifyMicroseconds: UInt64 = 5 * 60_000_000
    /// Bounds on a resident's durations: beyond them a setting is a mistake, and sums of times
    /// could overflow. Values are clamped into them.
    public static let intervalBounds: ClosedRange<UInt64> = 60_000_000...366 * 86_400_000_000
    public static let stepBounds: ClosedRange<UInt64> = 1_000_000...7 * 86_400_000_000
    /// Heart rates outside this range are implausible readings, not signs of life.
    public static let plausibleHeartRate: ClosedRange<Double> = 25...250

    public private(set) var residents: [String: ResidentState] = [:]
    /// Residents by BLE tag address (sorted ids: a shared tag credits every owner, in the same
    /// order on every replay), for presence as a positive datum.
    private var tagOwners: [UInt64: [String]] = [:]
    /// The last ladder number of residents who were removed: a resident enrolled again under the
    /// same id continues the numbering, so its messages never reuse an old outbox id.
    public private(set) var retiredLadders: [String: UInt32] = [:]
    public var hasTags: Bool { !tagOwners.isEmpty }
    /// Whether `address` is a current resident's tag.
    public func isTag(_ address: UInt64) -> Bool { !tagOwners.isEmpty && tagOwners[address & 0xFFFF_FFFF_FFFF] != nil }
    /// Every address that was ever a resident's BLE tag (48 bits) → the sequence of the event
    /// that first made it one: sightings after that were the ladder's data when they were
    /// applied, so retention never deletes them (replay would differ).
    public private(set) var tagSince: [UInt64: UInt64] = [:]

    /// Whether `address` (48 bits) is or was a resident's tag.
    @inline(__always)
    public func wasEverTag(_ address: UInt64) -> Bool { !tagSince.isEmpty && tagSince[address] != nil }
    public private(set) var staleDeadlines: UInt64 = 0
    public private(set) var implausibleData: UInt64 = 0
    /// The shelter's settings and zone rules (see LadderContext).
    public var context = LadderContext()

    public init() {}

    // MARK: Reducer

    public mutating func apply(_ input: ProjectionInput) {
        guard case .event(let event) = input else { return }
        _ = apply(event)
    }

    /// Applies an event and returns the messages it caused (the outbox keeps them).
    public mutating func apply(_ event: Event) -> [Message] {
        switch event.body {
        case .residentEnrolled(let r), .residentUpdated(let r):
            enrol(r, event: event)
            return []
        case .residentRemoved(let r):
            if let removed = residents.removeValue(forKey: r.id) { retiredLadders[r.id] = removed.ladder }
            rebuildTags()
            return []
        case .checkIn(let c):
            guard residents[c.resident] != nil else { return [] }
            guard Self.isPositive(c) else {
                implausibleData += 1
                return []
            }
            return positive(resident: c.resident, event: event)
        case .scanHit(let hit):
            guard !tagOwners.isEmpty, hit.count > 0, let owners = tagOwners[hit.address & 0xFFFF_FFFF_FFFF] else { return [] }
            return owners.flatMap { positive(resident: $0, event: event) }
        case .deadlineReached(let d):
            return reach(d, event: event)
        default:
            return []
        }
    }

    /// A check-in someone made (not a sensor reading, not a tag being heard).
    static func isExplicit(_ event: Event) -> Bool {
        guard case .checkIn(let c) = event.body else { return false }
        return c.source != .checkInHeartRate && c.source != .checkInBleTag
    }

    /// A heart-rate datum (judged by `isPositive` before it gets here).
    static func isHeartRate(_ event: Event) -> Bool {
        guard case .checkIn(let c) = event.body else { return false }
        return c.source == .checkInHeartRate
    }

    /// A check-in is a sign of life unless it is a heart-rate datum that is implausible or whose
    /// sensor says it has no skin contact (0x2A37 flags: bit 2 = contact supported, bit 1 = detected).
    public static func isPositive(_ c: CheckIn) -> Bool {
        guard c.source == .checkInHeartRate else { return true }
        guard c.hasValue, plausibleHeartRate.contains(c.value) else { return false }
        guard c.hasHeartRateFlags else { return true }
        let supported = c.heartRateFlags & 0b100 != 0
        let detected = c.heartRateFlags & 0b010 != 0
        return !supported || detected
    }

    private mutating func enrol(_ r: Resident, event: Event) {
        let previous = residents[r.id]
        var state = ResidentState(
            id: r.id, name: r.name, mode: r.mode.rawValue,
            intervalMicroseconds: Self.clamp(r.intervalUs, Self.intervalBounds),
            confirmMicroseconds: r.confirmUs == 0 ? Self.defaultConfirmMicroseconds : Self.clamp(r.confirmUs, Self.stepBounds),
            textToAlarmMicroseconds: r.textToAlarmUs == 0 ? Self.defaultTextToAlarmMicroseconds : Self.clamp(r.textToAlarmUs, Self.stepBounds),
            alarmToNotifyMicroseconds: r.alarmToNotifyUs == 0 ? Self.defaultAlarmToNotifyMicroseconds : Self.clamp(r.alarmToNotifyUs, Self.stepBounds),
            contacts: r.contacts.map { ContactEntry(name: $0.name, address: $0.address) },
            pauses: r.pauses.filter { $0.endUs > $0.startUs }.map { Window(start: $0.startUs, end: $0.endUs) },
            night: r.hasNight ? Night(startMinute: r.night.startMinute % 1_440, endMinute: r.night.endMinute % 1_440,
                                      utcOffsetMinutes: r.night.utcOffsetMinutes) : nil,
            bleTag: r.bleTag & 0xFFFF_FFFF_FFFF,
            ownAddress: r.ownAddress, room: r.room,
            weekly: r.weeklyPauses.filter { $0.days & 0x7F != 0 && $0.startMinute % 1_440 != $0.endMinute % 1_440 }
                .map { WeeklyWindow(days: $0.days & 0x7F, startMinute: $0.startMinute % 1_440, endMinute: $0.endMinute % 1_440) },
            timeZone: r.timeZone, heartRateSensor: r.heartRateSensor & 0xFFFF_FFFF_FFFF,
            heartRateSensorRandom: r.heartRateSensorType == .addressRandom, ladderStartMicroseconds: 0,
            anchorMicroseconds: event.timeMicroseconds, ladder: retiredLadders[r.id] ?? 0, step: 0, stepDueMicroseconds: 0,
            stepSequence: event.sequence, lastPositiveMicroseconds: 0, lastPositiveSequence: 0, triggered: 0)
        if let previous, previous.checkInMode != .off, state.checkInMode != .off {
            // An update changes the settings, not the history: a running ladder keeps running.
            state.anchorMicroseconds = previous.anchorMicroseconds
            state.ladder = previous.ladder
            state.step = previous.step
            state.stepDueMicroseconds = previous.stepDueMicroseconds
            state.ladderStartMicroseconds = previous.ladderStartMicroseconds
            state.stepSequence = previous.stepSequence
            state.lastPositiveMicroseconds = previous.lastPositiveMicroseconds
            state.lastPositiveSequence = previous.lastPositiveSequence
            state.triggered = previous.triggered
        } else if let previous {
            // Turned off: any running ladder ends. Turned back on: checks start from now, not from
            // an old anchor that would make every step overdue at once.
            state.ladder = previous.ladder
            state.lastPositiveMicroseconds = previous.lastPositiveMicroseconds
            state.lastPositiveSequence = previous.lastPositiveSequence
            state.triggered = previous.triggered
        }
        residents[r.id] = state
        if state.bleTag != 0, tagSince[state.bleTag] == nil { tagSince[state.bleTag] = event.sequence }
        rebuildTags()
    }

    private static func clamp(_ v: UInt64, _ bounds: ClosedRange<UInt64>) -> UInt64 {
        min(max(v, bounds.lowerBound), bounds.upperBound)
    }

    private mutating func rebuildTags() {
        tagOwners = [:]
        for (id, r) in residents where r.bleTag != 0 {
            tagOwners[r.bleTag, default: []].append(id)
        }
        for tag in tagOwners.keys { tagOwners[tag]?.sort() }
    }

    /// A sign of life: stops a running ladder, resets a triggered one, postpones the next one.
    /// An explicit check-in (button, CLI, hub) always counts. In pulse mode a heart-rate datum
    /// with sensor contact counts too: the emergency comes "when the device does not detect the
    /// pulse". A BLE tag in range never counts: a collapsed resident's tag lying on the table is
    /// heard all the same. In time mode the resident must answer "are you OK?" themselves, so no
    /// sensor datum counts. What does not count is still recorded (last seen).
    private mutating func positive(resident id: String, event: Event) -> [Message] {
        guard var r = residents[id] else { return [] }
        if !Self.isExplicit(event) && !(r.checkInMode == .pulse && Self.isHeartRate(event)) {
            r.lastPositiveMicroseconds = event.timeMicroseconds
            r.lastPositiveSequence = event.sequence
            residents[id] = r
            return []
        }
        var messages: [Message] = []
        let who = r.name.isEmpty ? r.id : r.name
        // Whoever was told something was wrong is told it is not: the staff from the second
        // step on, the contacts once the emergency was triggered.
        if r.step >= LadderStep.text.rawValue && !context.staff.isEmpty {
            messages.append(Message(id: "\(r.id)/\(r.ladder)/ok-staff", audience: .staff, recipients: context.staff,
                                    text: "\(who) has checked in and is OK."))
        }
        if r.step >= LadderStep.notify.rawValue {
            messages.append(Message(id: "\(r.id)/\(r.ladder)/ok", audience: .contacts,
                                    recipients: r.contacts.map(\.address),
                                    text: "\(who) has checked in and is OK."))
        }
        r.step = 0
        r.anchorMicroseconds = event.timeMicroseconds
        r.stepSequence = event.sequence
        r.lastPositiveMicroseconds = event.timeMicroseconds
        r.lastPositiveSequence = event.sequence
        residents[id] = r
        return messages
    }

    private mutating func reach(_ d: DeadlineReached, event: Event) -> [Message] {
        guard var r = residents[d.resident], let expected = nextDeadline(for: r),
              expected.ladder == d.ladder, expected.step == d.step, expected.dueMicroseconds == d.dueUs else {
            // Computed from a state that has since changed (an "I'm OK", an update): harmless.
            staleDeadlines += 1
            return []
        }
        let who = r.name.isEmpty ? r.id : r.name
        let contacts = r.contacts.map(\.address)
        var messages: [Message] = []
        switch d.step {
        case .prompt:
            r.ladder = d.ladder
            r.step = LadderStep.prompt.rawValue
            r.ladderStartMicroseconds = max(d.dueUs, event.timeMicroseconds)
            // By SMS to the resident's own number when they have one (a reply OK checks them in);
            // without one, the box's own prompt (its pattern, their tag or phone) is all there is:
            // a message to the resident's id would be "delivered" to nobody.
            if !r.ownAddress.isEmpty {
                messages.append(Message(id: "\(r.id)/\(r.ladder)/prompt", audience: .resident, recipients: [r.ownAddress],
                                        text: "Are you OK, \(who)? Reply OK, press the button or check in."))
            }
        case .text:
            r.step = LadderStep.text.rawValue
            // The second step is a text to the resident themselves and a word to the staff on
            // site, who can knock on the door; contacts hear only at the last step (issue 10).
            if !r.ownAddress.isEmpty {
                messages.append(Message(id: "\(r.id)/\(r.ladder)/text", audience: .resident, recipients: [r.ownAddress],
                                        text: "\(who), you have not answered \"are you OK?\". Please reply OK, press the button or check in now."))
            }
            if !context.staff.isEmpty {
                messages.append(Message(id: "\(r.id)/\(r.ladder)/staff", audience: .staff, recipients: context.staff,
                                        text: "\(who) has not answered \"are you OK?\"\(whereText(r)). Please check on them."))
            }
        case .alarm:
            r.step = LadderStep.alarm.rawValue
        case .notify:
            r.step = LadderStep.notify.rawValue
            r.triggered += 1
            messages.append(Message(id: "\(r.id)/\(r.ladder)/notify", audience: .contacts, recipients: contacts,
                                    text: "EMERGENCY for \(who): no answer after the alarm\(whereText(r)). Emergency triggered."))
        default:
            staleDeadlines += 1
            return []
        }
        // The next step counts from when this one really happened: after a power cut the
        // earliest overdue step fires at once, and every later one waits its full duration from
        // then, so a resident gets time to answer instead of contacts hearing "emergency" at once.
        r.stepDueMicroseconds = max(d.dueUs, event.timeMicroseconds)
        r.stepSequence = event.sequence
        residents[d.resident] = r
        return messages
    }

    // MARK: Deadlines

    /// The resident's next deadline, pushed out of pauses and the night window; nil when idle
    /// checks are off or the emergency has been triggered.
    public func nextDeadline(for r: ResidentState) -> Deadline? {
        guard r.checkInMode != .off else { return nil }
        let step: LadderStep
        let base: UInt64
        switch r.ladderStep {
        case .none:
            step = .prompt
            base = r.anchorMicroseconds &+ r.intervalMicroseconds
        case .prompt:
            step = .text
            base = r.stepDueMicroseconds &+ r.confirmMicroseconds
        case .text:
            step = .alarm
            base = r.stepDueMicroseconds &+ r.textToAlarmMicroseconds
        case .alarm:
            step = .notify
            base = r.stepDueMicroseconds &+ r.alarmToNotifyMicroseconds
        default:
            return nil
        }
        return Deadline(resident: r.id, ladder: step == .prompt ? r.ladder &+ 1 : r.ladder, step: step,
                        dueMicroseconds: outsideQuietTime(base, r))
    }

    /// The earliest deadline over all residents (ties broken by resident id, for determinism).
    public var earliestDeadline: Deadline? {
        residents.values.compactMap { nextDeadline(for: $0) }
            .min { ($0.dueMicroseconds, $0.resident) < ($1.dueMicroseconds, $1.resident) }
    }

    /// Moves `time` to the end of any pause, weekly pause or night window it falls in
    /// (repeatedly, as windows can touch). No prompt and no escalation step happens inside them.
    func outsideQuietTime(_ time: UInt64, _ r: ResidentState) -> UInt64 {
        var t = time
        for _ in 0..<32 {
            var moved = false
            for p in r.pauses where t >= p.start && t < p.end {
                t = p.end
                moved = true
            }
            if let night = r.night, let end = windowEnd(containing: t, days: 0x7F, night.startMinute, night.endMinute, r) {
                t = end
                moved = true
            }
            for w in r.weekly {
                if let end = windowEnd(containing: t, days: w.days, w.startMinute, w.endMinute, r) {
                    t = end
                    moved = true
                }
            }
            if !moved { break }
        }
        return t
    }

    /// The resident's UTC offset in seconds at a UTC time: from their zone's rules when the node
    /// supplied them, else the night window's fixed offset (see LadderContext).
    public func utcOffsetSeconds(_ r: ResidentState, atMicroseconds time: UInt64) -> Int64 {
        if !r.timeZone.isEmpty, let rules = context.zones[r.timeZone] {
            return Int64(rules.offset(atUTC: Int64(time / 1_000_000)))
        }
        return Int64(r.night?.utcOffsetMinutes ?? 0) * 60
    }

    /// Zones residents use whose rules the node did not supply (their fixed offsets are used).
    public var missingZones: [String] {
        Set(residents.values.map(\.timeZone).filter { !$0.isEmpty && context.zones[$0] == nil }).sorted()
    }

    /// When the daily window (on `days`, local minutes `start`..<`end`, wrapping past midnight
    /// when `end` < `start`) containing `time` ends, or nil if `time` is not in it.
    func windowEnd(containing time: UInt64, days: UInt32, _ startMinute: UInt32, _ endMinute: UInt32,
                   _ r: ResidentState) -> UInt64? {
        // Times beyond year ~292,000 cannot come from a clock; refusing them keeps the Int64
        // arithmetic below from overflowing on a hostile or corrupt record.
        guard startMinute != endMinute, time < UInt64(Int64.max / 2) else { return nil }
        let minuteUs: Int64 = 60_000_000
        let dayUs = 1_440 * minuteUs
        let offsetUs = utcOffsetSeconds(r, atMicroseconds: time) * 1_000_000
        let local = Int64(bitPattern: time) + offsetUs
        let dayStart = local - (local % dayUs + dayUs) % dayUs
        let minuteOfDay = (local - dayStart) / minuteUs
        let weekday = CivilTime(utcSeconds: dayStart / 1_000_000).weekday
        func on(_ d: Int64) -> Bool { days & (1 << UInt32((d % 7 + 7) % 7)) != 0 }
        let start = Int64(startMinute), end = Int64(endMinute)
        let endLocal: Int64
        if start < end {
            guard on(weekday), minuteOfDay >= start, minuteOfDay < end else { return nil }
            endLocal = dayStart + end * minuteUs
        } else if minuteOfDay >= start, on(weekday) {
            endLocal = dayStart + dayUs + end * minuteUs
        } else if minuteOfDay < end, on(weekday - 1) {
            endLocal = dayStart + end * minuteUs
        } else {
            return nil
        }
        // Local to UTC with the offset in force at the end (daylight saving may begin or end
        // inside the window): guess with today's offset, then correct with the guess's.
        let guess = endLocal - offsetUs
        let utc = endLocal - utcOffsetSeconds(r, atMicroseconds: UInt64(clamping: guess)) * 1_000_000
        return max(UInt64(clamping: utc), time &+ 1)
    }

    /// " at Shelter North (-33.86,151.21), room 12; ladder started 2026-11-24 03:05 UTC", from
    /// what is known.
    func whereText(_ r: ResidentState) -> String {
        var parts: [String] = []
        let site = context.siteText
        if !site.isEmpty { parts.append("at \(site)") }
        if !r.room.isEmpty { parts.append("room \(r.room)") }
        var text = parts.isEmpty ? "" : " " + parts.joined(separator: ", ")
        if r.ladderStartMicroseconds > 0 {
            text += "; ladder started \(localTimeText(r, r.ladderStartMicroseconds))"
        }
        return text
    }

    /// "The box at Shelter North was off from 2026-11-24 01:00 UTC to 2026-11-24 03:00 UTC
    /// (120 min): no check-ins were watched then."
    public func downtimeText(_ d: DowntimeDetected) -> String {
        let site = context.siteText
        let from = CivilTime(utcSeconds: Int64(clamping: d.fromUs / 1_000_000)).text
        let to = CivilTime(utcSeconds: Int64(clamping: d.toUs / 1_000_000)).text
        let minutes = d.toUs > d.fromUs ? (d.toUs - d.fromUs) / 60_000_000 : 0
        return "The box\(site.isEmpty ? "" : " at " + site) was off from \(from) UTC to \(to) UTC (\(minutes) min): "
            + "no check-ins were watched and no alarms sounded then."
    }

    /// A time as the resident's local civil time with its zone, or UTC.
    public func localTimeText(_ r: ResidentState, _ time: UInt64) -> String {
        let seconds = Int64(clamping: time / 1_000_000)
        if !r.timeZone.isEmpty, context.zones[r.timeZone] != nil {
            let offset = utcOffsetSeconds(r, atMicroseconds: time)
            let sign = offset < 0 ? "-" : "+"
            let a = abs(offset) / 60
            let hh = a / 60 < 10 ? "0\(a / 60)" : "\(a / 60)", mm = a % 60 < 10 ? "0\(a % 60)" : "\(a % 60)"
            return "\(CivilTime(utcSeconds: seconds + offset).text) \(r.timeZone) (UTC\(sign)\(hh):\(mm))"
        }
        return "\(CivilTime(utcSeconds: seconds).text) UTC"
    }

    /// Residents whose loud alarm sounds (alarm step or triggered).
    public var alarming: [ResidentState] { residents.values.filter { $0.step >= 3 }.sorted { $0.id < $1.id } }
    /// Residents being asked "are you OK?" (prompted, or asked again).
    public var prompting: [ResidentState] { residents.values.filter { (1...2).contains($0.step) }.sorted { $0.id < $1.id } }

    // tagOwners is derived from residents: not encoded.
    enum CodingKeys: String, CodingKey { case residents, retiredLadders, staleDeadlines, implausibleData, tagSince, context }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let list = try c.decode([ResidentState].self, forKey: .residents)
        residents = Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        retiredLadders = try c.decode([String: UInt32].self, forKey: .retiredLadders)
        staleDeadlines = try c.decode(UInt64.self, forKey: .staleDeadlines)
        implausibleData = try c.decode(UInt64.self, forKey: .implausibleData)
        let since = try c.decodeIfPresent([[UInt64]].self, forKey: .tagSince) ?? []
        tagSince = Dictionary(since.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }, uniquingKeysWith: { a, _ in a })
        context = try c.decodeIfPresent(LadderContext.self, forKey: .context) ?? LadderContext()
        rebuildTags()
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(residents.values.sorted { $0.id < $1.id }, forKey: .residents)
        try c.encode(retiredLadders, forKey: .retiredLadders) // String keys: sorted by the encoder
        try c.encode(staleDeadlines, forKey: .staleDeadlines)
        try c.encode(implausibleData, forKey: .implausibleData)
        try c.encode(tagSince.sorted { $0.key < $1.key }.map { [$0.key, $0.value] }, forKey: .tagSince)
        try c.encode(context, forKey: .context)
    }
}
