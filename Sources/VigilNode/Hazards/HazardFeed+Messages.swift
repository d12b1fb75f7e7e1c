import Foundation
import VigilCore
import VigilEvents
import VigilHex
import VigilJ2735
import VigilMQTT
import VigilSystem

/// Messages from the feed: what each topic carries, parsed and handed to the node as hazard reports.
extension HazardFeed {
    func sighted(_ type: String, _ id: String) {
        seen.insert(FeedSighting(type: type, id: String(id.prefix(64)), timeMicroseconds: context.clock.nowMicroseconds()), at: 0)
        if seen.count > Self.sightingLimit { seen.removeLast() }
    }

    func received(topic text: String, payload: UnsafeRawBufferPointer) {
        counters.received += 1
        guard let topic = FeedTopic(text) else {
            counters.unknownTopics += 1
            return
        }
        let message: FeedMessage
        do throws(FeedError) {
            // A payload longer than any PSM or TIM is nothing the box reads. (libmosquitto has
            // already taken it whole: MQTT 3.1.1 cannot ask a broker for less, so its size is
            // bounded by the broker's `message_size_limit`.)
            guard payload.count <= 16_384 else { throw FeedError(messageID: nil, reason: "\(payload.count) bytes") }
            message = try FeedMessage.decode([UInt8](payload), encoding: topic.encoding)
        } catch {
            let type: FeedTopic.MessageType = switch error.messageID {
            case MessageFrame.personalSafetyMessage: .psm
            case MessageFrame.travelerInformation: .tim
            default: topic.messageType
            }
            if type == .psm { counters.undecodablePSM += 1 } else { counters.undecodableTIM += 1 }
            sighted("\(type.rawValue) (undecodable)", topic.id)
            return
        }
        switch message {
        case .psm(let psm):
            counters.receivedPSM += 1
            sighted("PSM", Hex.encode(psm.temporaryID).uppercased())
            take(psm)
        case .tim(let tim):
            counters.receivedTIM += 1
            sighted("TIM", tim.packetID.map { Hex.encode($0).uppercased() } ?? topic.id)
            take(tim, topicID: topic.id)
        case .other(let id):
            counters.receivedOther += 1
            sighted("frame \(id)", topic.id)
        }
    }

    func take(_ psm: PersonalSafetyMessage) {
        guard let report = FeedReports.report(psm, ownIDs: ownIDs) else {
            counters.ignored += 1
            return
        }
        submit(report, roadUser: true, signature: "")
    }

    func take(_ tim: TravelerInformation, topicID: String) {
        let reports = FeedReports.reports(tim, topicID: topicID, site: context.projections.hazards.site, nowMicroseconds: context.clock.nowMicroseconds())
        for case let (report, signature)? in reports { submit(report, roadUser: false, signature: signature) }
        counters.ignored += UInt64(reports.count { $0 == nil })
    }

    func submit(_ report: HazardReported, roadUser: Bool, signature: String) {
        let key = HazardBook.key(kind: report.kind, source: .mqtt, id: report.id)
        let relevant = roadUser && FeedReports.isRelevant(report, to: context.projections.hazards.site)
        switch memory.judge(key, roadUser: roadUser, relevant: relevant, signature: signature, atMicroseconds: now) {
        case .repeatOfLogged:
            counters.coalesced += 1
            return
        case .full:
            counters.shed += 1
            return
        case .worthLogging:
            break
        }
        guard inFlight.count < settings.maximumInFlight, let sequence = context.append(.hazardReported(report), time: nil, sheddable: true) else {
            counters.shed += 1
            return
        }
        inFlight.insert(sequence)
        counters.maximumInFlight = max(counters.maximumInFlight, inFlight.count)
        memory.logged(key, roadUser: roadUser, relevant: relevant, signature: signature, atMicroseconds: now)
        counters.logged += 1
    }
}
