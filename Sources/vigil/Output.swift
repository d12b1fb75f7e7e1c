import Foundation
import SwiftProtobuf
import VigilCore
import VigilEvents
import VigilNode
import VigilRadio
import VigilSystem

/// Unbuffered writes to stdout/stderr (a follower of `log tail -f` must see each line at once).
struct FileOutput {
    let fd: Int32
    static let standardOutput = FileOutput(fd: 1)
    static let standardError = FileOutput(fd: 2)

    /// VigilSystem's write loop; output that cannot be written (a closed pipe) is dropped.
    func write(_ text: String) {
        try? VigilSystem.writeAll(text, toDescriptor: fd)
    }
}

enum EventFormatting {
    static let iso = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func time(_ microseconds: UInt64) -> String {
        Date(timeIntervalSince1970: Double(microseconds) / 1e6).formatted(iso)
    }

    /// One JSON Lines record: sequence, time, kind, and the payload as protobuf JSON.
    static func jsonLine(_ event: Event, sync: String? = nil) -> String {
        var options = JSONEncodingOptions()
        options.preserveProtoFieldNames = true
        let payload: String
        var extra = ""
        do {
            switch event.body {
            case .scanHit(let m):
                payload = try m.jsonString(options: options)
                extra = #","address":"\#(formatAddress(m.address))""#
            case .alertReceived(let m), .alertRaised(let m):
                payload = try m.jsonString(options: options)
                extra = #","alert":"\#(m.id.text)""#
            case .alertCancelled(let m): payload = try m.jsonString(options: options)
            case .checkIn(let m): payload = try m.jsonString(options: options)
            case .buttonInput(let m): payload = try m.jsonString(options: options)
            case .nodeStarted(let m): payload = try m.jsonString(options: options)
            case .nodeStopped(let m): payload = try m.jsonString(options: options)
            case .radioStateChanged(let m): payload = try m.jsonString(options: options)
            case .residentEnrolled(let m), .residentUpdated(let m): payload = try m.jsonString(options: options)
            case .residentRemoved(let m): payload = try m.jsonString(options: options)
            case .deadlineReached(let m): payload = try m.jsonString(options: options)
            case .alarmAcknowledged(let m): payload = try m.jsonString(options: options)
            case .outboxAttempt(let m): payload = try m.jsonString(options: options)
            case .exposureDetected(let m): payload = try m.jsonString(options: options)
            case .contactRetention(let m): payload = try m.jsonString(options: options)
            case .exposureKeysPublished(let m): payload = try m.jsonString(options: options)
            case .alertAcknowledged(let m):
                payload = try m.jsonString(options: options)
                extra = #","alert":"\#(m.id.text)""#
            case .alertExpired(let m):
                payload = try m.jsonString(options: options)
                extra = #","alert":"\#(m.id.text)""#
            case .alertReaffirmed(let m):
                payload = try m.jsonString(options: options)
                extra = #","alert":"\#(m.id.text)""#
            case .downtimeDetected(let m): payload = try m.jsonString(options: options)
            case .hubAcknowledged(let m): payload = try m.jsonString(options: options)
            case .hubEpochStarted(let m): payload = try m.jsonString(options: options)
            case .hubReceived(let m): payload = try m.jsonString(options: options)
            case .occupancySampled(let m): payload = try m.jsonString(options: options)
            case .exposureKeysOffered(let m): payload = try m.jsonString(options: options)
            case .exposureKeysMatched(let m): payload = try m.jsonString(options: options)
            case .hubFeedRewound(let m): payload = try m.jsonString(options: options)
            case .logSalvaged(let m): payload = try m.jsonString(options: options)
            case .scanSightings(let m): payload = try m.jsonString(options: options)
            case .linkChanged(let m): payload = try m.jsonString(options: options)
            case .chatMessage(let m): payload = try m.jsonString(options: options)
            case .chatOpened(let m): payload = try m.jsonString(options: options)
            case .hazardReported(let m): payload = try m.jsonString(options: options)
            case .hazardDeadline(let m): payload = try m.jsonString(options: options)
            case .alertTaken(let m): payload = try m.jsonString(options: options)
            case .callDeadline(let m): payload = try m.jsonString(options: options)
            case .smsReceived(let m): payload = try m.jsonString(options: options)
            case .phoneCallDecided(let m): payload = try m.jsonString(options: options)
            case .boxKeyRevoked(let m): payload = try m.jsonString(options: options)
            case .warningReceived(let m): payload = try m.jsonString(options: options)
            case .warningDeadline(let m): payload = try m.jsonString(options: options)
            case .warningHeard(let m): payload = try m.jsonString(options: options)
            case .scanBatch(let m):
                // The packed hits shown as the ScanHits they are (the batch's bytes say nothing to a reader).
                let hits = try m.scanHits().map { try $0.jsonString(options: options) }
                payload = #"{"count":\#(m.count),"hits":[\#(hits.joined(separator: ","))]}"#
            }
        } catch {
            return #"{"seq":\#(event.sequence),"error":"cannot format payload"}"#
        }
        if let sync { extra += #","hub":"\#(sync)""# }
        return #"{"seq":\#(event.sequence),"time_us":\#(event.timeMicroseconds),"time":"\#(time(event.timeMicroseconds))","kind":"\#(event.body.kind.name)"\#(extra),"payload":\#(payload)}"#
    }

    /// One human line: sequence, time, kind, and a short summary.
    static func textLine(_ event: Event, sync: String? = nil) -> String {
        let summary: String
        switch event.body {
        case .scanHit(let h):
            let name = h.advertisement.name.isEmpty ? "" : " \"\(h.advertisement.name)\""
            summary = "\(formatAddress(h.address)) rssi \(h.rssiMin)..\(h.rssiMax) mean \(String(format: "%.1f", h.meanRSSI)) x\(h.count)\(name)"
        case .alertReceived(let a), .alertRaised(let a):
            summary = "\(a.id.text) \(a.kind) severity \(a.severity) hops \(a.hops)"
        case .alertCancelled(let c): summary = "\(c.id.text) \(c.reason)"
        case .checkIn(let c): summary = "\(c.resident) via \(c.source)" + (c.hasValue ? " value \(c.value)" : "")
        case .buttonInput(let b): summary = "line \(b.line) \(b.edge) at \(b.kernelTimestampNs) ns"
        case .nodeStarted(let s): summary = "node \(String(s.nodeID, radix: 16)) v\(s.version) board \(s.board) radio \(s.radio)"
        case .nodeStopped(let s): summary = s.reason
        case .radioStateChanged(let r): summary = "\(r.adapter) \(r.state) (\(r.reason))"
        case .residentEnrolled(let r), .residentUpdated(let r):
            summary = "\(r.id) \(r.name.isEmpty ? "" : "(\(r.name)) ")mode \(r.mode) every \(r.intervalUs / 1_000_000) s, \(r.contacts.count) contacts"
        case .residentRemoved(let r): summary = r.id
        case .deadlineReached(let d): summary = "\(d.resident) ladder \(d.ladder) \(d.step) (due \(time(d.dueUs)))"
        case .alarmAcknowledged(let a): summary = "by \(a.by)"
        case .outboxAttempt(let o): summary = "\(o.entry) attempt \(o.attempt) via \(o.notifier): \(o.delivered ? "delivered" : "failed: \(o.error)")"
        case .exposureDetected(let x):
            summary = "\(x.highRisk ? "HIGH " : "")exposure \(time(x.firstSeenUs))–\(time(x.lastSeenUs)), score \(Double(x.weightedMinutesMilli) / 1_000) weighted min (\(x.source))"
        case .contactRetention(let r): summary = "contact data before \(time(r.cutoffUs)) is deleted (retention)"
        case .exposureKeysPublished(let p): summary = "\(p.keys) own keys published to \(p.path)"
        case .alertAcknowledged(let a):
            summary = a.heardFrom == 0 ? "\(a.id.text) acknowledged here"
                : "\(a.id.text) acknowledged by another box, heard at hops \(a.hops) from \(formatAddress(a.heardFrom))"
        case .alertExpired(let x): summary = "\(x.id.text) expired (at \(time(x.expiresAtUs)))"
        case .alertReaffirmed(let r): summary = "\(r.id.text) re-affirmed by \(r.by); now until \(time(r.expiresAtUs))"
        case .downtimeDetected(let d): summary = "the box was off from \(time(d.fromUs)) to \(time(d.toUs))"
        case .hubAcknowledged(let a):
            summary = "hub \(a.hub.prefix(12)) holds epoch \(a.epoch) through \(a.throughSequence) (\(a.accepted) new)"
        case .hubEpochStarted(let e):
            summary = "upload epoch \(e.epoch) from \(e.firstSequence) on (\(e.reason); hub held \(e.hubHeldThrough))"
        case .hubReceived(let r):
            let kind = EventKind(rawValue: Int(r.kind)).map(\.name) ?? "kind-\(r.kind)"
            let origin = r.originNode == 0 ? "a coordinator" : "box \(String(r.originNode, radix: 16))"
            summary = "from the hub (feed \(r.position)): \(kind) by \(origin)"
        case .occupancySampled(let o):
            summary = "\(o.advertisers) advertisers heard in the minute from \(time(o.minuteStartUs)) (\(o.tags) tags)" + (o.radioOn ? "" : ", radio off part of it")
        case .exposureKeysOffered(let o): summary = "key file \(o.fileID) \"\(o.name)\" offered: \(o.keys) keys, \(o.bytes) bytes"
        case .exposureKeysMatched(let m):
            summary = m.refused.isEmpty
                ? "key file \(m.fileID) \"\(m.name)\" matched: \(m.keys) keys, \(m.exposures) new exposures (\(m.highRisk) high risk), signed by \(m.signedBy)"
                : "key file \(m.fileID) \"\(m.name)\" refused: \(m.refused)"
        case .hubFeedRewound(let r):
            summary = "the hub's feed no longer holds what was taken at \(r.fromPosition) (\(r.cursorMissing ? "gone" : "another item"); its newest is \(r.hubHead)): read again from the start"
        case .logSalvaged(let s):
            summary = "the log was damaged and salvaged (\(s.trigger)): \(s.recovered) records kept, \(s.lostCount) lost"
                + (s.lost.isEmpty ? "" : " (\(LogSalvageText.ranges(s.lost)))")
                + (s.tailUnknown ? ", and an unknown number after \(s.highestRecovered)" : "") + "; the damaged file is in \(s.keptAside)"
        case .linkChanged(let l):
            let role = l.role == .sensor ? "\(ChatText.printable(l.resident, limit: 64))'s heart-rate sensor"
                : l.role == .central ? "the box connected to" : "connected from"
            summary = l.open ? "link open: \(role) \(formatAddress(l.peer))"
                : "link closed: \(formatAddress(l.peer))" + (l.reason.isEmpty ? "" : " (\(l.reason))")
        case .chatMessage(let m):
            let channel = switch m.channel { case .uart: "uart"; case .message: "message"; default: "chat" }
            let direction = m.outgoing ? "to \(formatAddress(m.peer))" + (m.delivered ? "" : " (not delivered)") : "from \(formatAddress(m.peer)) [unauthenticated]"
            let tag = m.category.isEmpty ? "" : " \(ChatText.printable(m.category, limit: 32))"
            summary = "\(channel)\(tag) \(direction): \(ChatText.printable(m.text, limit: 120))"
        case .chatOpened(let o): summary = "chat with \(formatAddress(o.peer)) opened (unread reset)"
        case .hazardReported(let h):
            let motion = h.hasSpeedCmPerS ? String(format: ", %.1f m/s", Double(h.speedCmPerS) / 100) : ""
            let course = h.hasHeadingCentidegrees ? String(format: " heading %.1f°", Double(h.headingCentidegrees) / 100) : ""
            summary = "\(h.kind.displayName) \(ChatText.printable(h.id, limit: 64)) at \(String(format: "%.6f,%.6f", Double(h.latitudeE7) / 1e7, Double(h.longitudeE7) / 1e7))\(course)\(motion) (from \(h.source.displayName))"
        case .hazardDeadline(let d): summary = "hazards due by \(EventFormatting.time(d.dueUs)) end"
        case .alertTaken(let t):
            let call = t.hasID ? t.id.text
                : !t.call.isEmpty ? ChatText.printable(t.call, limit: 80)
                : "\(ChatText.printable(t.resident, limit: 64))'s ladder \(t.ladder)"
            let heard = t.heardFrom == 0 ? "" : " (heard from \(String(t.heardFrom, radix: 16)))"
            summary = "call \(call) taken by \(ChatText.printable(t.by, limit: 64)) \(CallBook.viaText(t.via))\(heard)"
        case .phoneCallDecided(let d):
            let what = d.confirmed ? "confirmed: raised as alert \(d.alert.text)" : "dismissed"
            summary = "phone's call \(ChatText.printable(d.call, limit: 80)) \(what) by \(ChatText.printable(d.by, limit: 64)) \(CallBook.viaText(d.via))"
        case .boxKeyRevoked(let r):
            let node = (try? Revocation(bytes: [UInt8](r.revocation))).map { String($0.node, radix: 16) } ?? "(unreadable revocation)"
            summary = "the network revoked the signing key of box \(ChatText.printable(r.name, limit: 64)) (node \(node))"
        case .warningReceived(let w):
            summary = WarningBook.summary(w)
        case .warningDeadline(let d): summary = "public warnings due by \(EventFormatting.time(d.dueUs)) end"
        case .warningHeard(let h): summary = WarningBook.summary(h)
        case .smsReceived(let m):
            summary = "SMS from \(ChatText.printable(m.sender, limit: 32)) (\(m.reading)): \(ChatText.printable(m.text, limit: 120))"
        case .callDeadline(let d):
            summary = d.tier == CallBook.phoneExpiryTier
                ? "call \(ChatText.printable(d.call, limit: 80)): a phone's call nobody decided ends, due \(EventFormatting.time(d.dueUs))"
                : "call \(ChatText.printable(d.call, limit: 80)): tier \(d.tier &+ 1), pass \(d.round &+ 1) due \(EventFormatting.time(d.dueUs))"
        case .scanSightings(let s):
            let minutes = s.tracks.reduce(0) { $0 + $1.minutes.count }
            summary = "\(s.hits) scan hits from \(time(s.spanStartUs)) to \(time(s.spanEndUs)) compacted: \(s.tracks.count) contact identifiers, \(minutes) identifier-minutes"
                + (s.hasStays ? "; \(s.stays.devices.count) device stays" : "")
        case .scanBatch(let b):
            var strongest: (Int32, UInt64)?
            try? b.forEachHit { hit, _ in
                if hit.count > hit.rssiUnavailable, strongest.map({ hit.rssiMax > $0.0 }) ?? true { strongest = (hit.rssiMax, hit.address) }
            }
            summary = "\(b.count) scan hits of one window, \(b.advertisements.count) distinct advertisements"
                + (strongest.map { ", strongest \(formatAddress($0.1)) at \($0.0) dBm" } ?? "")
        }
        return "\(event.sequence)\t\(time(event.timeMicroseconds))\t\(event.body.kind.name)\t\(summary)" + (sync.map { " [\($0)]" } ?? "")
    }
}
