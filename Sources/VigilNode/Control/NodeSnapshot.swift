import VigilCore
import VigilEvents

/// What the box's page and its API show: everything a volunteer needs at a glance, as plain
/// values. Built on the loop from the projections (`SnapshotFeed`) for the live view, or from a
/// replayed past state for time travel, by the same function, so both views read alike.
///
/// Small by design: no device list, no contact data (contacts' names and addresses, tags), only
/// what the page shows; building it costs the loop a pass over residents and active alerts, never
/// over the devices heard, and servers beside the loop render it without touching node state.
public struct NodeSnapshot: Sendable, Codable, Equatable {
    /// The last event the state includes (the SSE event id).
    public var sequence: UInt64
    /// When it was taken (wall clock, µs), or the moment asked for in a past view.
    public var timeMicroseconds: UInt64
    public var nodeID: String
    /// Nil for a running node's live view; a past view says what moment it shows.
    public var past: String?
    public var outputs: [OutputView]
    public var residents: [ResidentView]
    /// Active alerts: calls for help, hazards and notices, newest first.
    public var alerts: [AlertView]
    public var exposures: ExposureView
    public var messages: MessageView
    public var radio: RadioView
    public var hub: HubView
    public var log: LogView
    public var chats: ChatsView
    /// Road users, work zones and jams near the shelter, and the warning (docs/hazards.md "Active hazards").
    public var roadHazards: RoadHazardsView
    /// Calls for help, open ones first, then the most recently ended (docs/calls-for-help.md).
    /// Nil from a node before calls existed.
    public var calls: [CallView]?
    /// The latest SMS that reached the box and what it made of them, newest first; empty in the
    /// public view (phone numbers and what people wrote).
    public var texts: [TextView]?
    /// Whether the box can call for help: its alarm centre's link, its self-test's messages, and
    /// a start still checking its log. Nil from a node that knows neither (no `arc:`, no
    /// `calls.test_to`, not starting), or a past state.
    public var callPaths: CallPathsView?

    public struct CallPathsView: Sendable, Codable, Equatable {
        /// Why the box cannot call for help now (what amber says); nil: no path is known to fail.
        public var problem: String?
        public var alarmCentre: Path?
        public var messages: Path?
        /// Seconds the start has been checking its log, while it does (decision 0002).
        public var logOpeningSeconds: Double?

        public struct Path: Sendable, Codable, Equatable {
            /// When it last worked: the centre's last ACK, or the last self-test that passed.
            public var lastGoodMicroseconds: UInt64?
            /// When the last test ran and whether it passed.
            public var lastTestMicroseconds: UInt64?
            public var lastTestPassed: Bool?
            public var failingSinceMicroseconds: UInt64?
            /// What went wrong last (staff only: it may name hosts or numbers).
            public var lastProblem: String?
        }
    }

    public struct TextView: Sendable, Codable, Equatable {
        public var sender: String
        public var text: String
        public var outcome: String
        public var receivedMicroseconds: UInt64
        public static let limit = 10
    }

    /// A call for help: what, how old, whether a person has taken it, where the tree stands.
    public struct CallView: Sendable, Codable, Equatable {
        /// The short code its messages gave (T4821): what "take" takes.
        public var code: String
        public var id: String
        /// sos, medical, resident.
        public var kind: String
        /// What, where, whose, since when; empty in the public view (names, rooms).
        public var summary: String
        public var startedMicroseconds: UInt64
        public var open: Bool
        /// Who took it and how; the public view says only that it was taken.
        public var takenBy: String?
        public var takenVia: String?
        public var takenMicroseconds: UInt64?
        /// Why it ended: cancelled, ended, resolved.
        public var ended: String?
        /// The tier and pass started last (1-based), and how many recipients were told.
        public var tier: UInt32
        public var pass: UInt32
        public var told: Int
        /// A phone's unverified call (staff confirm or dismiss it); nil for every other call.
        public var fromPhone: Bool? = nil
        /// Phones' sos and medical messages taken into it (the first included).
        public var phoneMessages: UInt32? = nil
        /// Confirmed: the alert of the network raised from it.
        public var confirmedAlert: String? = nil
        /// The latest other phones' messages taken into it ("ADDRESS: text"); staff only.
        public var phoneOthers: [String]? = nil
        public static let limit = 20
    }

    public struct RoadHazardsView: Sendable, Codable, Equatable {
        /// The warning sounding now, in words, and when it ends.
        public var warning: String?
        public var warningEndsMicroseconds: UInt64?
        public var count: Int
        public var warningsStarted: UInt64
        /// The most recently heard (at most `limit`); empty in the public view: where people
        /// are is not for anyone passing by.
        public var hazards: [Item]
        public static let limit = 20
        /// The regional MQTT feed (live only; nil when none is configured). The public view
        /// keeps its state and counts, not the ids it saw or its errors.
        public var feed: HazardFeedStatus?

        public struct Item: Sendable, Codable, Equatable {
            /// vehicle, pedestrian, cyclist, traffic jam, work zone.
            public var kind: String
            /// air, hub, MQTT, staff.
            public var source: String
            public var latitude: Double
            public var longitude: Double
            public var headingDegrees: Double?
            public var speedMetersPerSecond: Double?
            public var lastMicroseconds: UInt64
            public var expiresMicroseconds: UInt64
        }
    }

    public struct OutputView: Sendable, Codable, Equatable {
        /// red, amber, green, blue, buzzer.
        public var line: String
        /// `off`, `on`, `blink 500/500 ms`, ... (OutputPattern's description).
        public var pattern: String
        public var reasons: [Reason]
        public struct Reason: Sendable, Codable, Equatable {
            public var text: String
            public var sequences: [UInt64]
        }
    }

    public struct ResidentView: Sendable, Codable, Equatable {
        public var id: String
        public var name: String
        public var room: String
        /// time, pulse or off.
        public var mode: String
        /// none, prompt, text, alarm, notify.
        public var step: String
        /// When the current step was reached (0 at none).
        public var stepMicroseconds: UInt64
        public var next: Deadline?
        public var lastCheckInMicroseconds: UInt64?
        public var checkIns: UInt64
        public var intervalMicroseconds: UInt64
        public var timeZone: String
        public var paused: Bool
        /// The resident's heart-rate sensor (nil: none).
        public var sensor: SensorView?
        public struct SensorView: Sendable, Codable, Equatable {
            /// "AA:BB:CC:DD:EE:FF", with "/random" for a random address (nil in the public view:
            /// a strap that needs no pairing is easier to spoof once its address is known).
            public var device: String?
            public var linked: Bool
            /// Whether the link was encrypted with the sensor's bond key (false while linked:
            /// "unbonded", its readings could come from anyone with its address).
            public var bonded: Bool
            /// The last reading and its time (nil: none yet, or the public view: a pulse is health
            /// data).
            public var beatsPerMinute: Double?
            public var readingMicroseconds: UInt64?
            /// contact, no contact, or no contact sensing.
            public var contact: String?
            /// Whether the last reading was a sign of life to the ladder.
            public var counted: Bool?
        }
        public struct Deadline: Sendable, Codable, Equatable {
            public var step: String
            public var dueMicroseconds: UInt64
        }
    }

    public struct AlertView: Sendable, Codable, Equatable {
        /// `ORIGIN:COUNTER`, what `cancel` and `acknowledge` take.
        public var id: String
        /// sos, medical, fire, flood, evacuate, road-hazard, area-hazard, info.
        public var kind: String
        /// info, warning, critical.
        public var severity: String
        /// help (sos, medical), hazard (fire, flood, evacuate, road and area hazards) or notice.
        public var category: String
        public var raisedHere: Bool
        public var hops: UInt32
        public var raisedMicroseconds: UInt64
        public var expiresMicroseconds: UInt64
        public var text: String
        public var latitude: Double?
        public var longitude: Double?
        /// here, elsewhere (another box answered), or nil: nobody yet.
        public var acknowledged: String?
    }

    public struct ExposureView: Sendable, Codable, Equatable {
        public var found: Int
        public var highRisk: Int
        /// The newest high-risk windows' last contact times (µs), newest first (at most 10).
        public var recentHighRiskMicroseconds: [UInt64]
        public var keyFilesMatched: UInt64
        public var keyFilesRefused: UInt64
        public var keyFilesWaiting: Int
    }

    public struct MessageView: Sendable, Codable, Equatable {
        public var pending: Int
        public var delivered: UInt64
        public var failedAttempts: UInt64
        /// Messages that cannot reach anyone (amber's "no way to tell anyone").
        public var unreachable: Int
    }

    public struct RadioView: Sendable, Codable, Equatable {
        /// The radio's state from the log (up, down, recovering, ...).
        public var state: String
        public var adapter: String
        public var sinceMicroseconds: UInt64
        public var devices: Int
        /// Live only.
        public var framesAccepted: UInt64?
        public var framesForged: UInt64?
        public var onAir: [String]
        public var hciErrors: UInt64?
    }

    public struct HubView: Sendable, Codable, Equatable {
        /// Empty: no hub acknowledged anything yet.
        public var hub: String
        public var syncedThrough: UInt64
        public var lastAcknowledgedMicroseconds: UInt64
        public var received: UInt64
        /// What the sync keeps failing at (live only).
        public var problem: String?
    }

    /// Chats with phones and boxes (`Conversations`). What peers wrote is unauthenticated and
    /// private to the shelter's staff: `forPublic` keeps only the counts.
    public struct ChatsView: Sendable, Codable, Equatable {
        /// Devices the box has a conversation with, those linked now, and those with unread messages.
        public var devices: Int
        public var connected: Int
        public var unread: Int
        /// The most recent conversations (at most `conversationLimit`), newest first; empty in
        /// the public view.
        public var conversations: [ConversationView]

        public static let conversationLimit = 16
        public static let lineLimit = 5

        public struct ConversationView: Sendable, Codable, Equatable {
            /// "AA:BB:CC:DD:EE:FF", with "/random" for a random address: what `chat-send` takes.
            public var device: String
            public var connected: Bool
            /// BTFinder's badge: "" (none), "1" to "99", then "...".
            public var unread: String
            public var lastActivityMicroseconds: UInt64
            /// The last `lineLimit` messages, oldest first.
            public var messages: [Line]
        }

        public struct Line: Sendable, Codable, Equatable {
            public var timeMicroseconds: UInt64
            /// Sent by the box (else written by the peer: unauthenticated).
            public var outgoing: Bool
            /// Control characters replaced.
            public var text: String
            /// A phone message's category (sos, info, ...), "" for chat.
            public var category: String
            /// For outgoing messages: whether every part went out on the link.
            public var delivered: Bool
        }
    }

    public struct LogView: Sendable, Codable, Equatable {
        public var events: UInt64
        public var usedBytes: UInt64?
        public var undecodable: UInt64
        public var salvages: UInt64
        /// The last check this run: "sound", or what it found (live only).
        public var check: String?
        /// Set while the node runs from memory: why the log failed.
        public var failure: String?
        public var diskFull: Bool
        public var uptimeSeconds: Double?
    }
}

extension NodeSnapshot {
    /// The view of `state`. `decisions` are the outputs' patterns and reasons (the loop's own, or
    /// `OutputPolicy.decide` of a past state); `live` and `logUsedBytes` what only a running node
    /// knows.
    public init(state: Projections, decisions: [OutputLine: OutputDecision], live: LiveStatus?,
                logUsedBytes: UInt64? = nil, timeMicroseconds: UInt64, past: String? = nil) {
        sequence = state.appliedThrough
        self.timeMicroseconds = timeMicroseconds
        nodeID = String(state.health.nodeID, radix: 16)
        self.past = past
        outputs = OutputLine.allCases.map { line in
            let d = decisions[line] ?? OutputDecision(pattern: .off, reasons: [])
            return OutputView(line: line.rawValue, pattern: d.pattern.description,
                              reasons: d.reasons.map { .init(text: $0.text, sequences: $0.sequences) })
        }
        let book = state.escalations
        residents = book.residents.values.sorted { $0.id < $1.id }.map { r in
            let checkIn = state.checkIns.residents[r.id]
            let paused = r.pauses.contains { $0.start <= timeMicroseconds && timeMicroseconds < $0.end }
            return ResidentView(
                id: r.id, name: r.name, room: r.room, mode: Self.name(r.checkInMode), step: Self.name(r.ladderStep),
                stepMicroseconds: r.step == 0 ? 0 : r.stepDueMicroseconds,
                next: book.nextDeadline(for: r).map { .init(step: Self.name($0.step), dueMicroseconds: $0.dueMicroseconds) },
                lastCheckInMicroseconds: checkIn?.microseconds, checkIns: checkIn?.total ?? 0,
                intervalMicroseconds: r.intervalMicroseconds, timeZone: r.timeZone, paused: paused,
                sensor: state.sensors.byResident[r.id].map { sensor in
                    let read = sensor.lastReadingMicroseconds > 0
                    return .init(device: formatAddress(sensor.peer) + (sensor.random ? "/random" : ""), linked: sensor.linked,
                                 bonded: sensor.bonded,
                                 beatsPerMinute: read ? sensor.lastBeatsPerMinute : nil,
                                 readingMicroseconds: read ? sensor.lastReadingMicroseconds : nil,
                                 contact: read ? sensor.lastContact : nil, counted: read ? sensor.lastPositive : nil)
                })
        }
        alerts = state.alerts.active.sorted { ($0.firstMicroseconds, $0.idText) > ($1.firstMicroseconds, $1.idText) }.map { a in
            let kind = AlertKind(rawValue: a.kind) ?? .unspecified
            let ack = state.alerts.acknowledgement(of: a).map { $0.madeHere ? "here" : "elsewhere" }
            return AlertView(
                id: a.idText, kind: Self.slug(kind), severity: Self.name(AlertSeverity(rawValue: a.severity) ?? .unspecified),
                category: Self.category(kind), raisedHere: a.raisedHere, hops: a.hops, raisedMicroseconds: a.firstMicroseconds,
                expiresMicroseconds: a.expiresAtMicroseconds, text: a.text,
                latitude: a.latitudeE7.map { Double($0) / 1e7 }, longitude: a.longitudeE7.map { Double($0) / 1e7 },
                acknowledged: ack)
        }
        let x = state.exposures
        exposures = ExposureView(
            found: x.entries.count, highRisk: x.highRisk.count,
            recentHighRiskMicroseconds: Array(x.highRisk.map(\.lastSeenMicroseconds).sorted(by: >).prefix(10)),
            keyFilesMatched: x.keyFilesMatched, keyFilesRefused: x.keyFilesRefused, keyFilesWaiting: x.keyFileOffers.count)
        messages = MessageView(pending: state.outbox.pending.filter { $0.channel != .broadcast }.count,
                               delivered: state.outbox.deliveredTotal, failedAttempts: state.outbox.failedAttempts,
                               unreachable: state.outbox.unreachableEntries.count)
        let h = state.health
        radio = RadioView(
            state: RadioState(rawValue: h.radioState).map { "\($0)" } ?? "unknown", adapter: h.radioAdapter,
            sinceMicroseconds: h.radioStateChangedMicroseconds, devices: state.devices.devices.count,
            framesAccepted: live?.air.accepted, framesForged: live?.air.forged, onAir: live?.onAir ?? [],
            hciErrors: live?.hci.map { $0.hardwareErrors + $0.commandTimeouts })
        hub = HubView(hub: state.hub.hub, syncedThrough: state.hub.syncedThrough,
                      lastAcknowledgedMicroseconds: state.hub.lastAcknowledgedMicroseconds, received: state.hub.received,
                      problem: live?.hubProblem)
        log = LogView(events: state.appliedThrough, usedBytes: logUsedBytes,
                      undecodable: h.undecodable, salvages: h.salvages, check: live?.logCheck,
                      failure: live?.fromMemory?.failure, diskFull: live?.log.diskFull ?? false,
                      uptimeSeconds: live?.uptimeSeconds)
        let h2 = state.hazards
        roadHazards = RoadHazardsView(
            warning: OutputPolicy.hazardWarningReasons(state).first.map { String($0.text.dropFirst("hazard warning: ".count)) },
            warningEndsMicroseconds: h2.warning?.endsMicroseconds, count: h2.hazards.count, warningsStarted: h2.warningsStarted,
            hazards: h2.active.prefix(RoadHazardsView.limit).map { x in
                RoadHazardsView.Item(kind: x.hazardKind.displayName, source: (HazardSource(rawValue: x.source) ?? .unspecified).displayName,
                                     latitude: Double(x.latitudeE7) / 1e7, longitude: Double(x.longitudeE7) / 1e7,
                                     headingDegrees: x.headingCentidegrees.map { Double($0) / 100 },
                                     speedMetersPerSecond: x.speedCentimetersPerSecond.map { Double($0) / 100 },
                                     lastMicroseconds: x.lastMicroseconds, expiresMicroseconds: x.expiresMicroseconds)
            }, feed: live?.hazardFeed)
        calls = (state.calls.open + state.calls.newestFirst.filter { !$0.isOpen }).prefix(CallView.limit).map { c in
            CallView(code: c.code, id: c.id, kind: c.kind.rawValue, summary: c.summary, startedMicroseconds: c.startedMicroseconds,
                     open: c.isOpen, takenBy: c.taken?.by, takenVia: c.taken.map { CallBook.viaText(TakenVia(rawValue: $0.via) ?? .unspecified) },
                     takenMicroseconds: c.taken?.microseconds, ended: c.ended?.reason, tier: c.tier + 1, pass: c.round + 1,
                     told: c.told.count, fromPhone: c.phone.map { _ in true }, phoneMessages: c.phone?.messages,
                     confirmedAlert: c.phone?.confirmedAlert, phoneOthers: c.phone?.folded.map { $0.map { "\($0.peer): \($0.text)" } })
        }
        if let live, live.alarmCentre != nil || live.notifierTest != nil || live.logOpening != nil || live.callPathProblem != nil {
            callPaths = CallPathsView(
                problem: live.callPathProblem,
                alarmCentre: live.alarmCentre.map { a in
                    .init(lastGoodMicroseconds: a.lastAcknowledgedMicroseconds, lastTestMicroseconds: a.lastTestMicroseconds,
                          lastTestPassed: a.lastTestPassed, failingSinceMicroseconds: a.failingSinceMicroseconds, lastProblem: a.lastProblem)
                },
                messages: live.notifierTest.map { t in
                    .init(lastGoodMicroseconds: t.lastTestPassed == true ? t.lastTestMicroseconds : nil, lastTestMicroseconds: t.lastTestMicroseconds,
                          lastTestPassed: t.lastTestPassed, failingSinceMicroseconds: t.failingSinceMicroseconds, lastProblem: t.lastProblem)
                },
                logOpeningSeconds: live.logOpening?.seconds)
        }
        texts = state.sms.recent.suffix(TextView.limit).reversed().map {
            TextView(sender: $0.sender, text: PeerText.printable($0.text), outcome: $0.outcome, receivedMicroseconds: $0.receivedMicroseconds)
        }
        let talks = state.conversations.recent
        chats = ChatsView(
            devices: talks.count, connected: talks.count { $0.connected }, unread: talks.count { $0.unread > 0 },
            conversations: talks.prefix(ChatsView.conversationLimit).map { c in
                ChatsView.ConversationView(
                    device: formatAddress(c.peer) + (c.random ? "/random" : ""), connected: c.connected, unread: c.unreadBadge,
                    lastActivityMicroseconds: c.lastActivityMicroseconds,
                    messages: c.messages.suffix(ChatsView.lineLimit).map { m in
                        ChatsView.Line(timeMicroseconds: m.timeMicroseconds, outgoing: m.outgoing, text: PeerText.printable(m.text),
                                       category: PeerText.printable(m.category), delivered: m.delivered)
                    })
            })
    }

    /// What anyone may read where `http.public_view` allows it, the one filter for the page, its
    /// live stream and the API: that calls are open and taken, the lights, counts; not who, where,
    /// what they wrote, their heart rates, or the hosts and errors behind the box's links.
    public func forPublic() -> NodeSnapshot {
        var copy = self
        copy.chats.conversations = []
        // Who needs help and who is coming are for staff: a passer-by sees that a call is open
        // and whether it is taken.
        copy.texts = copy.texts.map { _ in [] }
        // That the box cannot call for help is for everyone to see; the details name hosts and
        // numbers (the problem line carries them too: it is said again without them).
        copy.callPaths?.alarmCentre?.lastProblem = nil
        copy.callPaths?.messages?.lastProblem = nil
        if let paths = copy.callPaths, paths.problem != nil {
            let failing = [paths.alarmCentre?.failingSinceMicroseconds != nil ? "the alarm centre is failing" : nil,
                           paths.messages?.failingSinceMicroseconds != nil ? "test messages are failing" : nil].compactMap { $0 }
            copy.callPaths?.problem = failing.isEmpty ? "a path is failing" : failing.joined(separator: "; ")
        }
        // Where an alert was raised and what it says (a phone's text staff confirmed, a name, a room) are for
        // staff: a passer-by sees its kind and that it is open.
        copy.alerts = copy.alerts.map { a in
            var a = a
            a.text = ""
            a.latitude = nil
            a.longitude = nil
            return a
        }
        // Why each light is on is for staff: the reasons name who took a call, the numbers and
        // hosts a call path failed on, the card's error. A viewer sees the lights themselves.
        copy.outputs = copy.outputs.map { o in
            var o = o
            o.reasons = []
            return o
        }
        copy.log.check = nil
        if copy.log.failure != nil { copy.log.failure = "details for staff" }
        // The hub's address, and why it fails (hosts, errors), are for staff.
        if !copy.hub.hub.isEmpty { copy.hub.hub = "a hub" }
        if copy.hub.problem != nil { copy.hub.problem = "the hub cannot be reached" }
        copy.roadHazards.feed?.broker = nil
        copy.calls = copy.calls?.map { c in
            var c = c
            c.summary = ""
            c.phoneOthers = nil
            c.takenBy = c.takenBy == nil ? nil : "someone"
            return c
        }
        copy.roadHazards.hazards = []
        copy.roadHazards.feed?.seen = []
        copy.roadHazards.feed?.lastError = nil
        for i in copy.residents.indices where copy.residents[i].sensor != nil {
            copy.residents[i].sensor?.device = nil
            copy.residents[i].sensor?.readingMicroseconds = nil
            copy.residents[i].sensor?.beatsPerMinute = nil
            copy.residents[i].sensor?.contact = nil
            copy.residents[i].sensor?.counted = nil
        }
        return copy
    }

    static func name(_ m: CheckInMode) -> String {
        switch m {
        case .time: "time"
        case .pulse: "pulse"
        default: "off"
        }
    }

    static func name(_ s: LadderStep) -> String {
        switch s {
        case .none: "none"
        case .prompt: "prompt"
        case .text: "text"
        case .alarm: "alarm"
        case .notify: "notify"
        case .UNRECOGNIZED(let n): "step \(n)"
        }
    }

    static func name(_ s: AlertSeverity) -> String {
        switch s {
        case .info: "info"
        case .warning: "warning"
        case .critical: "critical"
        default: "unspecified"
        }
    }

    /// The kind's name as commands take it (`raise-alert`'s `kind`).
    public static func slug(_ k: AlertKind) -> String {
        switch k {
        case .sos: "sos"
        case .medical: "medical"
        case .fire: "fire"
        case .flood: "flood"
        case .evacuate: "evacuate"
        case .roadHazard: "road-hazard"
        case .areaHazard: "area-hazard"
        case .info: "info"
        default: "unspecified"
        }
    }

    static func category(_ k: AlertKind) -> String {
        switch k {
        case .sos, .medical: "help"
        case .fire, .flood, .evacuate, .roadHazard, .areaHazard: "hazard"
        default: "notice"
        }
    }
}
