import VigilCore
import VigilEvents

/// Building the view: from the projections and the outputs' decisions, and the public view of it.
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
            Self.alertView(a, acknowledged: state.alerts.acknowledgement(of: a).map { $0.madeHere ? "here" : "elsewhere" })
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
        publicWarnings = Self.publicWarnings(state.warnings)
        recentlyCancelled = Self.recentlyCancelled(state.alerts)
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
        // A public warning is public; which feed (a host inside the shelter's network, perhaps)
        // and which event are for staff.
        copy.publicWarnings = copy.publicWarnings?.map { w in
            var w = w
            w.source = nil
            w.sequence = nil
            return w
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
        // Who the residents are and where they sleep are for staff: a passer-by would learn who
        // is alone and not answering, and in which room. A viewer sees how many are at each step
        // and since when, as "resident 1, 2...", numbered in that order, not the residents'.
        copy.residents = copy.residents
            .sorted { ($0.step, $0.stepMicroseconds, $0.lastCheckInMicroseconds ?? 0) < ($1.step, $1.stepMicroseconds, $1.lastCheckInMicroseconds ?? 0) }
            .enumerated().map { n, r in
                var r = r
                r.id = "resident \(n + 1)"
                r.name = ""
                r.room = ""
                r.timeZone = ""
                return r
            }
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

    static func name(_ s: AlertSeverity) -> String { s.name }

    /// The kind's name as commands take it (`raise-alert`'s `kind`).
    public static func slug(_ k: AlertKind) -> String { k.slug }

    static func category(_ k: AlertKind) -> String {
        switch k {
        case .sos, .medical: "help"
        case .fire, .flood, .evacuate, .roadHazard, .areaHazard: "hazard"
        default: "notice"
        }
    }
}
