import ArgumentParser
import Foundation
import VigilCore
import VigilEvents
import VigilLog
import VigilNode
import VigilSystem
import VigilWeb

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a node's state from its log (works while the node runs).")

    @OptionGroup var options: DataOptions

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @Option(help: ArgumentHelp("Show the state as it was at a past time, rebuilt from the log: ISO 8601 (2026-11-24T18:30:00Z), or a duration ago (\"90m ago\", or --at=-90m).",
                               valueName: "time"))
    var at: String?

    @Option(help: ArgumentHelp("Show the state as it was right after this event (its sequence).", valueName: "sequence"))
    var atSequence: UInt64?

    /// The past moment `--at` or `--at-sequence` names, nil for now.
    func moment(now: UInt64) throws -> PastMoment? {
        if at != nil && atSequence != nil { throw CLIError("give --at or --at-sequence, not both", code: 64) }
        if let atSequence { return .sequence(atSequence) }
        guard let at else { return nil }
        do {
            return try PastMoment.parse(at, nowMicroseconds: now)
        } catch {
            throw CLIError("--at \(at): \(error)", code: 64)
        }
    }

    func run() async throws {
        try await reportingErrors {
            let configuration = try options.load().configuration
            let dir = configuration.dataDirectory
            let log = try openForReading(dir)
            if let moment = try moment(now: realtimeMicroseconds()) {
                try past(log, moment: moment, configuration: configuration)
                return
            }
            var state = try Replay.currentState(log, settings: configuration.projections)
            state.outbox.unreachableAfterMicroseconds = configuration.notifyUnreachableAfterMicroseconds
            let space = try log.spaceUsage()
            var live: LiveStatus?
            // 3 s: a node busy with a storm of scan hits on a slow card still answers; one that
            // took the request and never answered is said to be stuck, not "not running".
            var silent = false
            do throws(ControlClientError) {
                live = try ControlClient.send(.status, dataDirectory: dir, timeoutMilliseconds: 3_000).status
            } catch .noAnswer {
                silent = true
            } catch {}
            let hub = HubStatusLine(links: (try? HubLinks.load(dataDirectory: dir)) ?? HubLinks(), mark: try HubSyncMark.read(log))
            if json {
                let report = StatusReport(state: state, usedBytes: space.usedBytes, mapBytes: space.mapBytes, live: live, silent: silent ? true : nil,
                                          hub: hub, page: PageStatus(configuration))
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                FileOutput.standardOutput.write(String(decoding: try encoder.encode(report), as: UTF8.self) + "\n")
            } else {
                FileOutput.standardOutput.write(text(state, space: space, live: live, silent: silent, dir: dir, hub: hub,
                                                     verificationKeys: configuration.exposure.verificationKeys.count)
                                                + PageStatus(configuration).text + "\n")
            }
        }
    }

    /// `--at`: the state at a past moment, without what only a running node knows (its live
    /// counters, the hub's view).
    private func past(_ log: EventLog, moment: PastMoment, configuration: NodeConfiguration) throws {
        var past = try Replay.state(log, settings: configuration.projections, at: moment)
        past.state.outbox.unreachableAfterMicroseconds = configuration.notifyUnreachableAfterMicroseconds
        let asked: String = switch moment {
        case .time(let t): "as it was at \(EventFormatting.time(t))"
        case .sequence(let n): "as it was after event \(n)"
        }
        let retention = past.state.exposures.lastRetentionCutoffMicroseconds
        if json {
            let report = PastStatusReport(asked: asked, throughSequence: past.throughSequence, fromCheckpoint: past.fromCheckpoint,
                                          retentionCutoffMicroseconds: retention, state: past.state)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            FileOutput.standardOutput.write(String(decoding: try encoder.encode(report), as: UTF8.self) + "\n")
            return
        }
        var out = "\(asked): the log up to event \(past.throughSequence)"
        out += past.throughSequence == 0 ? " (nothing had been logged yet)\n" : "\n"
        // What deletion took is not in the log: say so rather than show a past without it.
        let now = try Replay.currentState(log, settings: configuration.projections)
        if now.exposures.lastRetentionCutoffMicroseconds > 0 {
            out += "(contact data before \(EventFormatting.time(now.exposures.lastRetentionCutoffMicroseconds)) was deleted by retention"
            let compacted = UInt64(now.retention.recentScanHits.floorSlot) * SlotTally.slotMicroseconds
            out += compacted > 0 ? ", and raw scan hits before \(EventFormatting.time(compacted)) by compaction: devices and counts of then are what is left)\n" : ")\n"
        } else if now.retention.recentScanHits.floorSlot > 0 {
            let compacted = UInt64(now.retention.recentScanHits.floorSlot) * SlotTally.slotMicroseconds
            out += "(raw scan hits before \(EventFormatting.time(compacted)) were compacted: devices and counts of then are what is left)\n"
        }
        // The hub's view then: what it had acknowledged (the backlog of then is not kept).
        let hub = HubStatusLine(links: (try? HubLinks.load(dataDirectory: configuration.dataDirectory)) ?? HubLinks(),
                                mark: HubSyncMark(book: past.state.hub, backlog: 0))
        out += text(past.state, space: (0, 0, 0), live: nil, dir: configuration.dataDirectory, hub: hub,
                    verificationKeys: configuration.exposure.verificationKeys.count)
        FileOutput.standardOutput.write(out)
    }

    private func text(_ s: Projections, space: (usedBytes: Int, mapBytes: Int, pageSize: Int), live: LiveStatus?, silent: Bool = false,
                      dir: String, hub: HubStatusLine, verificationKeys: Int) -> String {
        var out = ""
        let running = live.map { "running for \(Int($0.uptimeSeconds)) s" }
            ?? (silent ? "running, but it did not answer within 3 s (its loop is busy or stuck)" : "not running")
        out += "node \(String(s.health.nodeID, radix: 16)) at \(dir): \(running)\n"
        out += "log: \(s.appliedThrough) events, \(space.usedBytes >> 10) KiB used of a \(space.mapBytes >> 20) MiB map"
        if s.health.undecodable > 0 { out += ", \(s.health.undecodable) unreadable (last at \(s.health.lastUndecodableSequence))" }
        out += "\n"
        if let check = live?.logCheck { out += "log check: \(check)\n" }
        if let opening = live?.logOpening {
            out += "log: being checked and opened after an unclean stop, for \(String(format: "%.1f", opening.seconds)) s;"
                + " \(opening.held) event(s) held until it is open (the button, the outputs and calls for help work meanwhile)\n"
        }
        if let salvage = s.health.lastSalvage {
            out += "log SALVAGED \(s.health.salvages == 1 ? "once" : "\(s.health.salvages) times"), last at \(EventFormatting.time(salvage.timeMicroseconds)): "
                + "\(salvage.recovered) records kept, \(salvage.lostCount) lost\(salvage.lost.isEmpty ? "" : " (\(salvage.lost))")"
                + "\(salvage.tailUnknown ? ", and an unknown number at the end" : ""); the damaged file is in \(salvage.keptAside)\n"
        }
        let kinds = EventKind.known.map { "\($0.name) \(s.health.count(of: $0))" }
        out += "events: " + kinds.joined(separator: ", ") + "\n"
        if s.health.lastEventMicroseconds > 0 { out += "last event: \(EventFormatting.time(s.health.lastEventMicroseconds))\n" }
        out += hub.text + "\n"
        if let problem = live?.hubProblem { out += "hub PROBLEM: \(problem)\n" }
        out += "radio: \(RadioState(rawValue: s.health.radioState).map { "\($0)" } ?? "unknown") \(s.health.radioAdapter)\n"
        out += ChatText.statusLine(s.conversations)
        out += "devices: \(s.devices.devices.count) (pruned \(s.devices.pruned))\n"
        for d in s.devices.sorted.sorted(by: { $0.lastSeenMicroseconds > $1.lastSeenMicroseconds }).prefix(5) {
            out += "  \(formatAddress(d.address)) seen \(d.hits)x, mean rssi \(String(format: "%.1f", d.meanRSSI)) dBm\(d.name.isEmpty ? "" : " \"\(d.name)\"")\n"
        }
        let active = s.alerts.active
        out += "alerts: \(active.count) active of \(s.alerts.alerts.count) (duplicates dropped \(s.alerts.duplicatesDropped))\n"
        for a in active {
            var ack = ""
            if let k = s.alerts.acknowledgement(of: a) {
                ack = k.madeHere ? ", acknowledged here" : ", acknowledged by another box (\(k.hops) hops)"
            }
            out += "  \(a.idText) \(AlertKind(rawValue: a.kind).map { "\($0)" } ?? "?") \(a.raisedHere ? "raised here" : "received, \(a.hops) hops")\(ack)\n"
        }
        // A past moment (--at) ages calls to then; the present to the wall clock.
        let now = (at != nil || atSequence != nil) && s.health.lastEventMicroseconds > 0
            ? s.health.lastEventMicroseconds : UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
        out += CallText.status(s, nowMicroseconds: now)
        out += CallText.alarmCentre(live?.alarmCentre)
        out += CallText.notifierTest(live?.notifierTest)
        out += CallText.webhookCallbacks(live?.webhookCallbacks)
        out += CallText.sms(s)
        let pending = s.outbox.pending.filter { $0.channel != .broadcast }
        out += "messages: \(pending.count) pending, \(s.outbox.deliveredTotal) delivered, \(s.outbox.failedAttempts) failed attempts\n"
        let unreachable = s.outbox.unreachableEntries
        if !unreachable.isEmpty {
            // The same judgement as the amber line's "no way to tell anyone" (OutputPolicy).
            out += "no way to tell anyone: \(unreachable.count) message\(unreachable.count == 1 ? "" : "s") cannot be delivered\n"
            for (e, why) in unreachable.prefix(10) {
                let cause = switch why {
                case .noNotifier: "no notify.command is configured"
                case .failingSince(let t): "failing since \(EventFormatting.time(t)): \(e.lastError)"
                }
                out += "  \(e.id) (\(e.attempts) attempts): \(cause)\n"
            }
        }
        out += exposureText(s.exposures, verificationKeys: verificationKeys)
        if !s.hazards.hazards.isEmpty || s.hazards.warningsStarted > 0
            || s.alerts.active.contains(where: { $0.kind == AlertKind.roadHazard.rawValue || $0.kind == AlertKind.areaHazard.rawValue }) {
            out += hazardText(s.hazards, alerts: s.alerts)
        }
        if !s.warnings.warnings.current.isEmpty || s.warnings.unreadable > 0 {
            out += warningText(s.warnings)
        }
        out += "check-ins: \(s.checkIns.residents.count) residents\n"
        for (name, c) in s.checkIns.residents.sorted(by: { $0.key < $1.key }) {
            out += "  \(name): last \(EventFormatting.time(c.microseconds)) (\(c.total) total)\n"
        }
        for sensor in s.sensors.sorted {
            out += "  \(sensor.resident)'s \(ListResidents.describe(sensor))\n"
        }
        if let live {
            out += "live: durable through \(live.log.durableSequence), \(live.log.commits) commits, \(live.log.flushes) flushes, pending \(live.pending), shed \(live.counters.shed), refused \(live.counters.refused)\n"
            if let m = live.fromMemory {
                out += "log FAILED since \(EventFormatting.time(m.sinceMicroseconds)): \(m.failure)\n"
                out += "  running from memory: button, alarms and radio work; \(m.events) events since are not stored (\(m.critical) critical); replace the card\n"
            }
            if live.log.diskFull {
                out += "disk FULL: the log's reserve was handed back; scan hits refused (\(live.log.refusedDiskFull) so far), alerts, SOS and check-ins logged while the reserve's room lasts; free space on the card\n"
            } else if live.log.diskFullEpisodes > 0 {
                out += "disk: was full \(live.log.diskFullEpisodes) times since start (\(live.log.refusedDiskFull) refused); the reserve is back\n"
            }
            let lit = live.outputs.filter(\.value).keys.sorted()
            out += "outputs: \(lit.isEmpty ? "all off" : lit.joined(separator: ", ") + " on")\n"
            let a = live.air
            out += "air: \(a.accepted) new frames accepted, \(a.duplicates) duplicates, \(a.forged) forged, \(a.stale) stale, \(a.malformed) malformed, \(a.ownEchoes) own echoes, \(a.acknowledgements) acknowledgements heard, \(a.presence) presence adverts\n"
            if a.forgedCertificates + a.revoked + a.impersonations + a.tooOld + a.shed + a.unsigned + a.unverifiableSigned + a.revocationsHeard + a.overRate + a.warnings > 0 {
                out += "air (signed): \(a.forgedCertificates) forged certificates, \(a.revoked) from revoked boxes, \(a.impersonations) in another box's name, \(a.tooOld) too old or ahead, \(a.shed) shed over the budget, \(a.unsigned) shared-key frames refused, \(a.unverifiableSigned) without a network key, \(a.revocationsHeard) revocations heard, \(a.overRate) new alerts over their sender's rate, \(a.warnings) public warning frames of neighbours\n"
            }
            if let g = live.signing {
                out += "signing: " + (g.signing ? "this box signs its frames" : "not signing (\(g.whyNotSigning ?? "?"))")
                    + (g.network.map { "; network key \($0), \(g.revoked) boxes revoked" } ?? "; no network key: signed frames not checked")
                    + (g.requireSigned ? "; shared-key frames refused" : "")
                    + "; clock: " + (g.clock == "none" ? "NOT vouched for (not synchronised, no hub, no signed frame heard)" : "vouched by \(g.clock)")
                    + (g.revocationWriteFailures > 0 ? "; \(g.revocationWriteFailures) revocations could not be kept on the card" : "") + "\n"
            }
            out += "on the air: \(live.onAir.isEmpty ? "presence only" : live.onAir.joined(separator: "; "))\n"
            if let h = live.hci {
                out += "hci: \(h.packetsIn) packets in, \(h.packetsOut) out, \(h.reports) reports, \(h.recoveries) recoveries, \(h.commandTimeouts) command timeouts, \(h.hardwareErrors) hardware errors\n"
                if h.incomingLinks > 0 || h.connectableRefusals > 0 {
                    out += "hci links: \(h.incomingLinks) centrals connected to the box's advertising, connectable advertising refused \(h.connectableRefusals) times during a link\n"
                }
            }
            if let c = live.connections {
                let k = c.counters
                out += "connections: \(c.serving ? "serving GATT" : "not serving (see the log)"), \(c.links.count) of \(c.maximumLinks) links"
                    + (c.links.isEmpty ? "" : " (\(c.links.joined(separator: ", ")))")
                    + (c.chatLink.map { "; the box's chat link to \($0)" } ?? "")
                    + "; \(k.messagesReceived) messages in (unauthenticated), \(k.messagesSent) out, \(k.messagesRefused) refused (\(k.messagesRefusedPending) while the card was slow), \(k.violations) violations, \(k.linksClosedForMisbehaviour) links closed for misbehaviour, \(k.linksRefused) refused when full"
                    + (k.messagesRefusedBusy > 0 ? "; \(k.messagesRefusedBusy) refused while phones together were over the box's budget" : "")
                    + (k.linkEventsShed > 0 ? "; \(k.linkEventsShed) links not logged (too many)" : "")
                    + (k.callsFromPhones > 0 ? "; \(k.callsFromPhones) phones' sos and medical messages (unverified)" : "")
                    + (k.warningsNotified + k.warningsNotNotified > 0
                        ? "; \(k.warningsNotified) public warnings notified to phones (\(k.warningsNotNotified) a full link did not take)" : "") + "\n"
            }
            for s in live.sensors ?? [] {
                out += "heart-rate sensor of \(s.resident) (\(s.sensor)): \(s.state), \(s.bond)"
                    + (s.bondProblem.isEmpty ? "" : " [\(s.bondProblem)]")
                    + (s.bondFailures > 0 ? " [\(s.bondFailures) failed to prove the bond]" : "")
                    + (s.retryInSeconds.map { ", next attempt in \(Int($0.rounded(.up))) s" } ?? "")
                    + (s.lastError.isEmpty ? "" : " (\(s.lastError))")
                    + "; \(s.readingsHeard) readings heard, \(s.readingsLogged) logged"
                    + (s.readingsMalformed > 0 ? ", \(s.readingsMalformed) malformed" : "") + ", \(s.attempts) attempts\n"
            }
            if let f = live.hazardFeed {
                let k = f.counters
                let broker = f.broker.map { " to " + PeerText.printable($0, limit: 200) } ?? ""
                let error = f.lastError.map { " (last error: " + PeerText.printable($0, limit: 300) + ")" } ?? ""
                out += "hazard feed: \(f.state)\(broker)\(error)\n"
                out += "  received \(k.received) (\(k.receivedPSM) PSM, \(k.receivedTIM) TIM, \(k.receivedOther) other)"
                out += ", undecodable \(k.undecodablePSM) PSM and \(k.undecodableTIM) TIM\n"
                out += "  \(k.logged) logged, \(k.coalesced) repeats coalesced, \(k.shed) shed, \(k.ignored) ignored\n"
                out += "  sent \(k.sent)" + (k.sendFailures > 0 ? " (\(k.sendFailures) failed)" : "") + (f.vruActive ? ", VRU mode on" : "")
                out += "; \(k.connects) connects, \(k.disconnects) drops, \(k.failovers) failovers"
                out += (k.subscriptionsRefused > 0 ? ", \(k.subscriptionsRefused) subscriptions refused" : "") + "\n"
                for seen in f.seen.prefix(5) {
                    out += "  seen \(EventFormatting.time(seen.timeMicroseconds)): \(seen.type) \(PeerText.printable(seen.id, limit: 64))\n"
                }
            }
            for f in live.warningFeeds ?? [] {
                let read = f.lastReadMicroseconds.map { "last read \(EventFormatting.time($0))" } ?? "not read yet"
                out += "warnings feed \(PeerText.printable(f.url, limit: 200)): \(read); \(f.polls) polls, \(f.logged) messages logged, "
                    + "\(f.unchanged) copies, \(f.refused) documents refused, \(f.failures) failures"
                    + (f.problem.map { " (now: " + PeerText.printable($0, limit: 300) + ")" } ?? "") + "\n"
            }
        }
        return out
    }
}

/// Exposures found, and the hub's key files: matched, refused (why), waiting.
func exposureText(_ x: ExposureBook, verificationKeys: Int) -> String {
    var out = "exposures: \(x.entries.count) found (\(x.highRisk.count) high risk)"
    if x.keyFilesMatched + x.keyFilesRefused > 0 || !x.keyFileOffers.isEmpty {
        out += "; key files from the hub: \(x.keyFilesMatched) matched, \(x.keyFilesRefused) refused, \(x.keyFileOffers.count) waiting"
        if x.keyFileOffersDropped > 0 { out += ", \(x.keyFileOffersDropped) dropped (too many waiting)" }
        if !x.keyFileOffers.isEmpty && verificationKeys == 0 {
            out += " (they wait: no exposure.verification_keys are configured to check them with)"
        }
    }
    out += "\n"
    if let last = x.lastKeyFile {
        out += "  last key file: \"\(last.name)\" at \(EventFormatting.time(last.atMicroseconds)): "
        out += last.refused.isEmpty ? "\(last.keys) keys, \(last.exposures) new exposures (\(last.highRisk) high risk)\n" : "REFUSED: \(last.refused)\n"
    }
    return out
}

/// `vigil status --at --json`.
struct PastStatusReport: Encodable {
    var asked: String
    var throughSequence: UInt64
    var fromCheckpoint: Bool
    var retentionCutoffMicroseconds: UInt64
    var state: Projections
}

struct StatusReport: Encodable {
    var state: Projections
    var usedBytes: Int
    var mapBytes: Int
    var live: LiveStatus?
    /// A node took the request but did not answer within 3 s (no `live` then): it runs, busy or
    /// stuck. Absent when it answered or none runs.
    var silent: Bool?
    var hub: HubStatusLine
    var page: PageStatus
}

/// The box's page: where it is served and its certificate's fingerprint (`vigil status`), which
/// staff compare with what their browser shows before they trust it.
struct PageStatus: Encodable {
    var listen: String?
    var tls: Bool
    /// SHA-256 of the certificate, as browsers show it (nil until the node first serves over TLS).
    var fingerprint: String?
    var passwordSet: Bool

    init(_ configuration: NodeConfiguration) {
        let credentials = WebCredentials(dataDirectory: configuration.dataDirectory)
        listen = configuration.http.listen
        tls = configuration.http.tls
        fingerprint = credentials.identity.map { WebCredentials.displayFingerprint($0.fingerprint) }
        passwordSet = credentials.adminHash != nil
    }

    var text: String {
        guard let listen else {
            return "page: off (set http.listen, or run with --http 0.0.0.0:8443)"
                + (fingerprint.map { "; certificate SHA-256 \($0)" } ?? "")
        }
        var line = "page: \(tls ? "https" : "http")://\(listen)/"
        if tls { line += fingerprint.map { ", certificate SHA-256 \($0)" } ?? ", certificate made at the node's next start" }
        else { line += " (plain HTTP by choice: passwords cross the network readable)" }
        if !passwordSet { line += "; no admin password yet (vigil http passwd)" }
        return line
    }
}

/// The hub in use and what it holds of this box (`vigil status`).
struct HubStatusLine: Encodable {
    var url: String?
    var name: String?
    var hub: String
    var epoch: UInt32
    var syncedThrough: UInt64
    var backlog: UInt64
    var lastAcknowledgedMicroseconds: UInt64
    var acknowledgements: UInt64
    var conflicts: UInt64
    /// Entry points of the network the box lists (`vigil hub join`, `vigil hub add`).
    var hubsListed: Int

    init(links: HubLinks, mark: HubSyncMark) {
        // The hub in use: the one that last acknowledged (after a failover, not the first joined).
        let link = links.hubs.first { $0.fingerprint == mark.book.hub } ?? links.hubs.first
        hubsListed = links.hubs.count
        url = link?.url
        name = link?.name
        hub = mark.book.hub.isEmpty ? (link?.fingerprint ?? "") : mark.book.hub
        epoch = mark.book.epoch
        syncedThrough = mark.book.syncedThrough
        backlog = mark.backlog
        lastAcknowledgedMicroseconds = mark.book.lastAcknowledgedMicroseconds
        acknowledgements = mark.book.acknowledgements
        conflicts = mark.book.conflicts
    }

    var text: String {
        guard let url else {
            return hub.isEmpty ? "hub: none (join one with `vigil hub join URL --token-file -`)"
                : "hub: \(hub.prefix(16))… (no longer joined), synced through \(syncedThrough)"
        }
        var line = "hub: \(url) as \(name ?? "?"): synced through \(syncedThrough) (epoch \(epoch)), backlog \(backlog)"
        line += lastAcknowledgedMicroseconds > 0
            ? ", last acknowledgement \(EventFormatting.time(lastAcknowledgedMicroseconds)) (\(acknowledgements) in all)"
            : ", nothing acknowledged yet"
        if conflicts > 0 { line += ", \(conflicts) conflicts (new epochs)" }
        if hubsListed > 1 { line += "; \(hubsListed) entry points listed, the nearest that answers is used" }
        return line
    }
}

/// Opens a node's log read-only, with messages for the usual mistakes.
/// Opens the log for a command that reads it. LMDB reads through a memory map: a page a failing
/// card mangled, or a sector it cannot read, would crash the command; instead it ends with a
/// message saying what to do (`vigil log check` reads the file without the map).
func openForReading(_ dir: String) throws -> EventLog {
    exitOnMemoryFault(message: "vigil: the event log in \(dir) is damaged: reading it through LMDB failed (a bad page or an unreadable sector). "
                      + "Run `vigil log check --data \(dir)`; a node salvages the log at its next start, or stop it and run `vigil log salvage`.\n",
                      status: 1)
    do {
        return try EventLog.openReadOnly(directory: dir)
    } catch {
        throw CLIError(error.description)
    }
}
