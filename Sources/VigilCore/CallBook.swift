import FoundationEssentials // trimming a call's name: value types, no I/O
import VigilEvents

/// Calls for help and the people told of them: every SOS or medical call raised here or heard
/// from another box (over the air or the hub's feed), and every resident's ladder at its alarm
/// step, becomes a call that walks the call tree (`CallTree`) until a person takes it
/// (`AlertTaken`, or an acknowledgement of the alert) or it ends (cancelled, expired, the
/// resident checked in). Each step makes one message per recipient, which the outbox delivers.
///
/// Pure: time enters as `CallDeadline` events (appended by the node when a tier is due), so
/// replay gives the same calls, tiers, messages and takers. Messages are named by call, round,
/// tier and recipient, so a step never sends twice.
public struct CallBook: Codable, Equatable, Sendable {
    public static let keptFolded = 8
    /// Phones' messages open phones' calls from a start of a node that says so (`NodeStarted`):
    /// replayed, an older log's messages stay history (they were raised as alerts then).
    public var phonesOpenCalls: Bool? = nil

    /// A message for one recipient (it becomes an outbox entry).
    public struct Message: Equatable, Sendable {
        public var id: String
        public var recipient: String
        public var text: String
        /// For the alarm receiving centre (`arc`): what it is told, as a Contact ID event.
        public var alarm: AlarmSignal? = nil
    }

    /// The next step due: what `CallDeadline` names when its time comes.
    public struct Deadline: Equatable, Sendable {
        public var call: String
        public var tier: UInt32
        public var round: UInt32
        public var dueMicroseconds: UInt64
    }

    /// The tree (a setting: see `CallTree`).
    public var tree = CallTree()
    public private(set) var calls: [String: Call] = [:]
    /// The ids of open residents' calls: what every check-in and ladder event looks at
    /// (`Projections.followResidentCalls`), kept apart so that a box with many open alerts does not
    /// sort all its calls on each one. Derived (rebuilt from `calls` on decode).
    public private(set) var openResidentCallIDs: Set<String> = []
    /// The ids of open phones' calls (derived, like `openResidentCallIDs`).
    public private(set) var openPhoneCallIDs: Set<String> = []
    /// The codes open calls hold, and the ended calls in the order they ended (ties: the order
    /// they started): derived like `openResidentCallIDs`, so that opening or ending a call costs
    /// the same with ten open calls as with ten thousand.
    private var openCodes: Set<String> = []
    private var openNumbers: Set<UInt64> = []
    /// Open calls from other boxes: their ids and origins (the bounds `maximumRemoteOpen` and
    /// `maximumOpenPerRemoteBox` are checked against it on every alert heard).
    public private(set) var openRemoteOrigins: [String: UInt64] = [:]
    private var endedOrder: [String] = []
    public private(set) var openedTotal: UInt64 = 0
    public private(set) var takenTotal: UInt64 = 0
    public private(set) var staleDeadlines: UInt64 = 0
    /// Ended calls kept for status and the page; older ones are forgotten.
    public static let keepEnded = 100
    /// Open calls from other boxes at most, in all and per box (`noteRefusedRemoteCall` counts
    /// the rest, which stay alerts).
    public static let maximumRemoteOpen = 64
    public static let maximumOpenPerRemoteBox = 4
    public static let raisedHere = "raised at this box"
    public private(set) var refusedRemoteCalls: UInt64 = 0
    /// Open phones' calls at most: a phone's sos or medical message while this many are open
    /// (all taken: an unanswered one takes it in) stays a message (`refusedPhoneCalls`).
    public static let maximumOpenPhoneCalls = 4
    /// A phone's call nobody confirmed or dismissed ends this long after it opened (at the next
    /// event after then: no clock), so a forgotten one does not hold a place for ever.
    public static let phoneCallLifetimeMicroseconds: UInt64 = 2 * 3_600_000_000
    public private(set) var refusedPhoneCalls: UInt64 = 0
    public private(set) var phoneMessagesTakenIn: UInt64 = 0
    /// The prefix of a phone's call id; the rest is a hash of its first message's id and sender
    /// (`phoneCallID`).
    public static let phoneCallPrefix = "phone:"
    /// The box's own troubles reported to the alarm receiving centre and not yet restored.
    public private(set) var raisedTroubles: Set<AlarmSignal.Condition> = []
    /// The recipient that stands for the alarm receiving centre in a tree.
    public static let alarmCentre = "arc"

    mutating func noteRefusedRemoteCall() { refusedRemoteCalls += 1 }

    public init() {}

    /// Unanswered calls nobody was told of, because the tree has nobody in it: "no way to tell
    /// anyone" (OutputPolicy, status).
    public var nobodyToTell: [Call] {
        tree.everyone.isEmpty ? open.filter { $0.isUnanswered && $0.told.isEmpty } : []
    }

    /// Open calls, oldest first.
    public var open: [Call] {
        calls.values.filter(\.isOpen).sorted { ($0.startedSequence, $0.id) < ($1.startedSequence, $1.id) }
    }

    /// A call for help raised at another box (heard over the air, or from the hub).
    static func isRemote(_ call: Call) -> Bool { call.kind != .resident && call.phone == nil && call.source != raisedHere }

    /// Open residents' calls, oldest first.
    public var openResidentCalls: [Call] {
        openResidentCallIDs.compactMap { calls[$0] }.sorted { ($0.startedSequence, $0.id) < ($1.startedSequence, $1.id) }
    }

    /// Every call kept, newest first.
    public var newestFirst: [Call] {
        calls.values.sorted { ($0.startedSequence, $0.id) > ($1.startedSequence, $1.id) }
    }

    // MARK: Opening

    /// A phone's sos or medical message (a `ChatMessage` on the message characteristic): taken
    /// into the unanswered phone's call if there is one (nobody is told again), else a new call
    /// "from a phone, unverified" that walks the tree like any other, but is never told to the
    /// alarm receiving centre (its operator would act on a prank; a confirmed call's alert is).
    /// Over `maximumOpenPhoneCalls` it stays a message. Same message id again: nothing.
    mutating func phoneAsked(kind: Kind, messageID: String, peer: String, text: String, place: String, event: Event) -> [Message] {
        guard phonesOpenCalls == true else { return [] }
        let id = Self.phoneCallID(messageID: messageID, peer: peer)
        guard calls[id] == nil else { return [] }
        if let open = openPhoneCallIDs.sorted().first(where: { calls[$0]?.isUnanswered == true }), var call = calls[open], var phone = call.phone {
            phone.messages &+= 1
            var folded = phone.folded ?? []
            folded.append(Folded(peer: peer, text: PrintableText.clean(text, limit: 120), microseconds: event.timeMicroseconds))
            phone.folded = Array(folded.suffix(Self.keptFolded))
            call.phone = phone
            calls[open] = call
            phoneMessagesTakenIn += 1
            return []
        }
        guard openPhoneCallIDs.count < Self.maximumOpenPhoneCalls else {
            refusedPhoneCalls += 1
            return []
        }
        let shown = PrintableText.clean(text, limit: 200)
        let what = (kind == .medical ? "MEDICAL call" : "SOS") + " FROM A PHONE, UNVERIFIED" + (shown.isEmpty ? "" : " \"\(PrintableText.clean(text, limit: 80))\"")
        return self.open(id: id, kind: kind, alert: nil, resident: nil, ladder: nil, source: "a phone nearby (\(peer)) wrote it",
                    what: what, place: place, event: event, phone: Phone(peer: peer, messageID: messageID, text: shown, messages: 1))
    }

    /// Staff's word on a phone's call: confirmed (raised as `alert`) or dismissed; the call ends
    /// and everyone told is told.
    mutating func phoneDecided(_ d: PhoneCallDecided, event: Event) -> [Message] {
        guard var call = calls[d.call], call.isOpen, var phone = call.phone else { return [] }
        let by = PrintableText.clean(d.by, limit: 64)
        let others = phone.messages > 1 ? " It held \(phone.messages) phones' messages." : ""
        if d.confirmed {
            phone.confirmedAlert = d.alert.text
            call.phone = phone
            calls[d.call] = call
            return end(d.call, reason: "confirmed", detail: "\(by) confirmed it (\(Self.viaText(d.via))): it is now alert \(d.alert.text) of the network.\(others)", event: event)
        }
        return end(d.call, reason: "dismissed", detail: "\(by) dismissed it (\(Self.viaText(d.via))): not a call for help.\(others)", event: event)
    }

    /// A phone's call's id: its first message's id and sender, hashed (the id is the phone's to
    /// choose: any bytes, up to 128; the call's id goes into events, messages and status lines).
    public static func phoneCallID(messageID: String, peer: String) -> String {
        let h = hash(peer + "\u{0}" + messageID, 0)
        let hex = String(h, radix: 16)
        return phoneCallPrefix + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The step `CallDeadline` names to end a phone's call nobody confirmed or dismissed.
    public static let phoneExpiryTier = UInt32.max

    /// When an open phone's call ends by itself (taken or not).
    public func expiry(of call: Call) -> Deadline? {
        guard call.isOpen, call.phone != nil else { return nil }
        return Deadline(call: call.id, tier: Self.phoneExpiryTier, round: 0,
                        dueMicroseconds: call.startedMicroseconds &+ Self.phoneCallLifetimeMicroseconds)
    }

    /// Opens a call (an id already present is left alone: a renewal or a duplicate heard again
    /// is the same call) and tells the first tier.
    mutating func open(id: String, kind: Kind, alert: String?, resident: String?, ladder: UInt32?, source: String,
                       what: String, place: String, event: Event, origin: UInt64 = 0, phone: Phone? = nil) -> [Message] {
        guard calls[id] == nil else { return [] }
        let time = event.timeMicroseconds
        let since = CivilTime(utcSeconds: Int64(clamping: time / 1_000_000)).text
        let summary = "\(what)\(place.isEmpty ? "" : " " + place); \(source); since \(since) UTC"
        openedTotal += 1
        let call = Call(id: id, kind: kind, alert: alert, resident: resident, ladder: ladder, source: source,
                        summary: summary, startedMicroseconds: time, startedSequence: event.sequence,
                        code: uniqueCode(for: id, time: time), tier: 0, round: 0,
                        stepStartedMicroseconds: time, told: [], lastTold: [:], firstTold: [:], origin: origin,
                        number: uniqueNumber(for: id, time: time), taken: nil, ended: nil, phone: phone)
        calls[id] = call
        if kind == .resident { openResidentCallIDs.insert(id) }
        if phone != nil { openPhoneCallIDs.insert(id) }
        if Self.isRemote(call) { openRemoteOrigins[id] = call.origin }
        openCodes.insert(call.code)
        openNumbers.insert(call.number)
        return tell(id, tier: 0, round: 0, at: time)
    }

    /// "T" and four digits from the call's id and the time of the event that opened it (no
    /// clock, no randomness: replay makes the same; not the event's sequence, which changes
    /// when a call opened before the log was open is carried into it), moved on while an open
    /// call holds it.
    func uniqueCode(for id: String, time: UInt64) -> String {
        var n = Int(Self.hash(id, time) % 9_000) + 1_000
        for _ in 0..<9_000 {
            guard openCodes.contains("T\(n)") else { break }
            n = n == 9_999 ? 1_000 : n + 1
        }
        return "T\(n)"
    }

    /// 1 to 999 from the call's id and time, moved on while an open call holds it.
    func uniqueNumber(for id: String, time: UInt64) -> UInt64 {
        var n = (Self.hash(id, time) >> 20) % 999 + 1
        for _ in 0..<999 {
            guard openNumbers.contains(n) else { break }
            n = n == 999 ? 1 : n + 1
        }
        return n
    }

    private static func hash(_ id: String, _ time: UInt64) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in id.utf8 { hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3 }
        return hash ^ (time &* 0x9E37_79B9_7F4A_7C15)
    }

    // MARK: The tree walking

    /// A `CallDeadline`: the step it names starts, if it is still the call's next step.
    mutating func reached(_ d: CallDeadline, event: Event) -> [Message] {
        if d.tier == Self.phoneExpiryTier {
            guard let call = calls[d.call], let due = expiry(of: call), due.dueMicroseconds == d.dueUs else {
                staleDeadlines += 1
                return []
            }
            return end(d.call, reason: "ended", detail: "Nobody confirmed or dismissed it within \(Self.phoneCallLifetimeMicroseconds / 3_600_000_000) hours.", event: event)
        }
        guard let call = calls[d.call], call.isUnanswered, let next = nextStep(of: call),
              next.tier == d.tier, next.round == d.round, next.dueMicroseconds == d.dueUs else {
            staleDeadlines += 1
            return []
        }
        return tell(d.call, tier: d.tier, round: d.round, at: max(d.dueUs, event.timeMicroseconds))
    }

    /// The step after the call's current one: the next tier, or the top of the next round after
    /// `repeatAfter`; nil after the last round's last tier.
    public func nextStep(of call: Call) -> Deadline? {
        guard call.isUnanswered, !tree.tiers.isEmpty else { return nil }
        let nextTier = Int(call.tier) + 1
        if nextTier < tree.tiers.count {
            return Deadline(call: call.id, tier: UInt32(nextTier), round: call.round,
                            dueMicroseconds: call.stepStartedMicroseconds &+ tree.tiers[nextTier].afterMicroseconds)
        }
        guard call.round + 1 < tree.rounds else { return nil }
        return Deadline(call: call.id, tier: 0, round: call.round + 1,
                        dueMicroseconds: call.stepStartedMicroseconds &+ tree.repeatAfterMicroseconds)
    }

    /// The earliest step due among unanswered calls (ties: the lower call id).
    public var nextDeadline: Deadline? {
        var best: Deadline?
        func consider(_ d: Deadline?) {
            guard let d else { return }
            if let b = best, (b.dueMicroseconds, b.call, b.tier) <= (d.dueMicroseconds, d.call, d.tier) { return }
            best = d
        }
        for call in calls.values where call.isUnanswered { consider(nextStep(of: call)) }
        for id in openPhoneCallIDs { consider(calls[id].flatMap(expiry(of:))) }
        return best
    }

    /// Starts `tier` of `round` at `time`: one message for each of its recipients. With nobody
    /// in the tree there is no message (`nobodyToTell` says so, and amber shows it).
    private mutating func tell(_ id: String, tier: UInt32, round: UInt32, at time: UInt64) -> [Message] {
        guard var call = calls[id] else { return [] }
        call.tier = tier
        call.round = round
        call.stepStartedMicroseconds = time
        var messages: [Message] = []
        if Int(tier) < tree.tiers.count {
            let text = openingText(call, round: round)
            for r in tree.tiers[Int(tier)].recipients {
                var alarm: AlarmSignal?
                if r == Self.alarmCentre {
                    // A phone's word is nobody's: the centre hears of it once staff confirm it.
                    guard call.phone == nil else { continue }
                    // The centre holds an alarm until it is restored: a later round would be a
                    // second alarm there, not a reminder.
                    guard !call.told.contains(r) else { continue }
                    alarm = AlarmSignal(Self.condition(of: call.kind), number: call.number)
                }
                messages.append(Message(id: "call/\(id)/\(round).\(tier)/\(r)", recipient: r, text: text, alarm: alarm))
                if !call.told.contains(r) { call.told.append(r) }
                call.lastTold[r] = time
                if call.firstTold[r] == nil { call.firstTold[r] = time }
            }
        }
        calls[id] = call
        return messages
    }

    private func openingText(_ call: Call, round: UInt32) -> String {
        let again = round == 0 ? "" : "STILL UNANSWERED (pass \(round + 1) of \(tree.rounds)): "
        let decide = call.phone == nil ? "" : " Then confirm it (it goes to every box) or dismiss it there."
        return "\(again)\(call.summary). Reply TAKE or \(call.code) to take it, or take it on the box's page.\(decide)"
    }

    // MARK: Taken, ended

    /// A person took the call: the tree stops, and everyone told learns who took it. Only the
    /// first taking counts; a call already ended is not taken.
    mutating func take(_ id: String, by: String, via: TakenVia, event: Event) -> [Message] {
        guard var call = calls[id], call.isUnanswered else { return [] }
        let time = event.timeMicroseconds
        call.taken = Taking(by: by, via: via.rawValue, microseconds: time, sequence: event.sequence)
        calls[id] = call
        takenTotal += 1
        let at = CivilTime(utcSeconds: Int64(clamping: time / 1_000_000)).text
        let text = "TAKEN: \(call.summary). Taken by \(by) (\(Self.viaText(via))) at \(at) UTC."
        // The centre is not told: a taking here is not its alarm's end, and Contact ID has no
        // word for "a person is on the way". Its operator follows its own procedure until the
        // restore at the call's end.
        return call.told.filter { $0 != Self.alarmCentre }.map { Message(id: "call/\(id)/taken/\($0)", recipient: $0, text: text) }
    }

    /// The call ended (cancelled, expired, the resident checked in or was removed): everyone
    /// told is told.
    mutating func end(_ id: String, reason: String, detail: String, event: Event) -> [Message] {
        guard var call = calls[id], call.isOpen else { return [] }
        let time = event.timeMicroseconds
        call.ended = Ending(reason: reason, microseconds: time, sequence: event.sequence)
        calls[id] = call
        openResidentCallIDs.remove(id)
        openPhoneCallIDs.remove(id)
        openRemoteOrigins[id] = nil
        openCodes.remove(call.code)
        openNumbers.remove(call.number)
        endedOrder.append(id)
        forgetOldEnded()
        let at = CivilTime(utcSeconds: Int64(clamping: time / 1_000_000)).text
        let text = "\(reason.uppercased()): \(call.summary). \(detail) (\(at) UTC)"
        return call.told.map { r in
            Message(id: "call/\(id)/end/\(r)", recipient: r, text: text,
                    alarm: r == Self.alarmCentre ? AlarmSignal(Self.condition(of: call.kind), restore: true, number: call.number) : nil)
        }
    }

    static func condition(of kind: Kind) -> AlarmSignal.Condition {
        switch kind {
        case .sos: .sos
        case .medical: .medical
        case .resident: .missedCheckIn
        }
    }

    // MARK: The box's own troubles

    /// A trouble of the box raised (`raised`) or over: a message for the alarm receiving centre
    /// when the tree has one. A trouble already raised is not raised again, and only a raised one
    /// is restored; a damaged log (`once`) is reported each time and never restored, since what
    /// was lost stays lost until someone looks.
    mutating func trouble(_ condition: AlarmSignal.Condition, raised: Bool, once: Bool = false, event: Event) -> [Message] {
        guard tree.everyone.contains(Self.alarmCentre) else { return [] }
        if !once {
            if raised {
                guard raisedTroubles.insert(condition).inserted else { return [] }
            } else {
                guard raisedTroubles.remove(condition) != nil else { return [] }
            }
        }
        let signal = AlarmSignal(condition, restore: !raised)
        let at = CivilTime(utcSeconds: Int64(clamping: event.timeMicroseconds / 1_000_000)).text
        return [Message(id: "trouble/\(condition.rawValue)/\(event.sequence)/\(Self.alarmCentre)", recipient: Self.alarmCentre,
                        text: "Box trouble: \(signal.text) (\(at) UTC)", alarm: signal)]
    }

    public static func viaText(_ via: TakenVia) -> String {
        switch via {
        case .page: "on the box's page"
        case .api: "through the API"
        case .cli: "at the box's console"
        case .sms: "by SMS"
        case .webhook: "by webhook"
        case .hub: "at the hub"
        case .button: "with a box's button"
        case .unspecified, .UNRECOGNIZED: "by an unknown way"
        }
    }

    private mutating func forgetOldEnded() {
        guard endedOrder.count > Self.keepEnded else { return }
        for old in endedOrder.prefix(endedOrder.count - Self.keepEnded) { calls[old] = nil }
        endedOrder.removeFirst(endedOrder.count - Self.keepEnded)
    }

    // MARK: Checkpoint

    enum CodingKeys: String, CodingKey {
        case tree, calls, openedTotal, takenTotal, staleDeadlines, refusedRemoteCalls, raisedTroubles, refusedPhoneCalls, phoneMessagesTakenIn
        case phonesOpenCalls
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        tree = try c.decode(CallTree.self, forKey: .tree)
        let list = try c.decode([Call].self, forKey: .calls)
        calls = Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        openResidentCallIDs = Set(calls.values.filter { $0.isOpen && $0.kind == .resident }.map(\.id))
        openPhoneCallIDs = Set(calls.values.filter { $0.isOpen && $0.phone != nil }.map(\.id))
        openCodes = Set(calls.values.filter(\.isOpen).map(\.code))
        openNumbers = Set(calls.values.filter(\.isOpen).map(\.number))
        openRemoteOrigins = Dictionary(calls.values.filter { $0.isOpen && Self.isRemote($0) }.map { ($0.id, $0.origin) },
                                       uniquingKeysWith: { a, _ in a })
        endedOrder = calls.values.filter { !$0.isOpen }
            .sorted { ($0.ended?.sequence ?? 0, $0.startedSequence, $0.id) < ($1.ended?.sequence ?? 0, $1.startedSequence, $1.id) }
            .map(\.id)
        openedTotal = try c.decode(UInt64.self, forKey: .openedTotal)
        takenTotal = try c.decode(UInt64.self, forKey: .takenTotal)
        staleDeadlines = try c.decode(UInt64.self, forKey: .staleDeadlines)
        refusedRemoteCalls = try c.decode(UInt64.self, forKey: .refusedRemoteCalls)
        raisedTroubles = Set(try c.decode([AlarmSignal.Condition].self, forKey: .raisedTroubles))
        refusedPhoneCalls = try c.decodeIfPresent(UInt64.self, forKey: .refusedPhoneCalls) ?? 0
        phoneMessagesTakenIn = try c.decodeIfPresent(UInt64.self, forKey: .phoneMessagesTakenIn) ?? 0
        phonesOpenCalls = try c.decodeIfPresent(Bool.self, forKey: .phonesOpenCalls)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(tree, forKey: .tree)
        try c.encode(calls.values.sorted { $0.id < $1.id }, forKey: .calls)
        try c.encode(openedTotal, forKey: .openedTotal)
        try c.encode(takenTotal, forKey: .takenTotal)
        try c.encode(staleDeadlines, forKey: .staleDeadlines)
        try c.encode(refusedRemoteCalls, forKey: .refusedRemoteCalls)
        try c.encode(raisedTroubles.map(\.rawValue).sorted(), forKey: .raisedTroubles)
        try c.encode(refusedPhoneCalls, forKey: .refusedPhoneCalls)
        try c.encode(phoneMessagesTakenIn, forKey: .phoneMessagesTakenIn)
        try c.encodeIfPresent(phonesOpenCalls, forKey: .phonesOpenCalls)
    }
}
