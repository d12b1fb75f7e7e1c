import Foundation // Data, for the envelope's bytes
import SwiftProtobuf

/// One message from DriveAZ's regional MQTT feed: its topic says how it is wrapped and what it
/// claims to be; its payload is a UPER MessageFrame, alone (`j2735`) or inside a `GeoRoutedMsg`
/// (`j2735_gr`).
///
/// Topic grammar: `vzimp/1/GeoRelevance/<a>/<b>/<Public|vendor>/<j2735_gr|j2735>/<PSM|TIM>/<id>`.
public struct FeedTopic: Equatable, Sendable {
    public enum Encoding: String, Equatable, Sendable { case raw = "j2735", geoRouted = "j2735_gr" }
    public enum MessageType: String, Equatable, Sendable { case psm = "PSM", tim = "TIM" }

    public var channel: String
    public var encoding: Encoding
    public static let idLimit = 96
    public var messageType: MessageType
    public var id: String

    /// Nil for a topic outside the grammar (the feed then counts the message as unknown).
    public init?(_ topic: String) {
        let parts = topic.split(separator: "/", omittingEmptySubsequences: false)
        // An id becomes part of a hazard's id (at most 128 bytes with a frame index), a channel
        // is a vendor's name: anything longer is not DriveAZ's grammar.
        guard parts.count == 9, parts[0] == "vzimp", parts[1] == "1", parts[2] == "GeoRelevance",
              parts[8].utf8.count <= Self.idLimit, !parts[8].isEmpty, parts[5].utf8.count <= 64,
              let encoding = Encoding(rawValue: String(parts[6])), let type = MessageType(rawValue: String(parts[7]))
        else { return nil }
        channel = String(parts[5])
        self.encoding = encoding
        messageType = type
        id = String(parts[8])
    }

    /// The subscriptions for a channel (`Public` or a vendor id): both encodings, both types.
    public static func subscriptions(channel: String) -> [String] {
        ["j2735_gr", "j2735"].flatMap { enc in ["PSM", "TIM"].map { "vzimp/1/GeoRelevance/+/+/\(channel)/\(enc)/\($0)/+" } }
    }

    /// The topic the box publishes its own PSM on.
    public static func publication(region: String, cell: String, channel: String, id: String) -> String {
        "vzimp/1/GeoRelevance/\(region)/\(cell)/\(channel)/j2735/PSM/\(id)"
    }
}

/// A decoded feed payload.
public enum FeedMessage: Equatable, Sendable {
    case psm(PersonalSafetyMessage)
    case tim(TravelerInformation)
    /// A well-formed frame of a kind the box does not read (a BSM, a MAP): counted, not an error.
    case other(messageID: Int)

    /// Decodes `payload` as `encoding` says. A TIM or PSM that cannot be decoded throws, so the
    /// caller counts it against the type the frame (or, when even the frame is broken, the topic)
    /// names.
    public static func decode(_ payload: [UInt8], encoding: FeedTopic.Encoding) throws(FeedError) -> FeedMessage {
        var frameBytes = payload
        if encoding == .geoRouted {
            let envelope: Driveaz_Georouted_GeoRoutedMsg
            do {
                var options = BinaryDecodingOptions()
                options.messageDepthLimit = 4
                envelope = try Driveaz_Georouted_GeoRoutedMsg(serializedBytes: payload, options: options)
            } catch {
                throw FeedError(messageID: nil, reason: "not a GeoRoutedMsg: \(error)")
            }
            frameBytes = [UInt8](envelope.msgBytes)
        }
        let frame: MessageFrame
        do {
            frame = try MessageFrame.decode(frameBytes)
        } catch {
            throw FeedError(messageID: nil, reason: "not a MessageFrame: \(error)")
        }
        do {
            switch frame.messageID {
            case MessageFrame.personalSafetyMessage: return .psm(try PersonalSafetyMessage.decode(frame.value))
            case MessageFrame.travelerInformation: return .tim(try TravelerInformation.decode(frame.value))
            default: return .other(messageID: frame.messageID)
            }
        } catch {
            throw FeedError(messageID: frame.messageID, reason: "\(error)")
        }
    }

    /// Wraps a MessageFrame's bytes in a GeoRoutedMsg (the box's own PSMs on `j2735_gr`, tests).
    public static func geoRouted(_ frame: [UInt8], seconds: Int64, latitude: Double, longitude: Double) -> [UInt8] {
        var envelope = Driveaz_Georouted_GeoRoutedMsg()
        envelope.msgBytes = Data(frame)
        envelope.time.seconds = seconds
        envelope.position.latitude = latitude
        envelope.position.longitude = longitude
        return (try? envelope.serializedBytes()) ?? []
    }
}

/// Why a feed payload was not decoded; `messageID` is the frame's when the frame itself was read.
public struct FeedError: Error, Equatable, Sendable {
    public var messageID: Int?
    public var reason: String

    public init(messageID: Int?, reason: String) {
        self.messageID = messageID
        self.reason = reason
    }
}
