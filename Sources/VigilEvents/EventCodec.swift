import SwiftProtobuf

/// Why an event could not be decoded. Iteration reports it with the sequence and goes on.
public struct EventDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// A kind this build does not know (written by a newer Vigil).
        case unknownKind(UInt32)
        /// The payload is not a valid message of its kind.
        case malformed(kind: UInt32, detail: String)
        /// The log envelope itself was unreadable.
        case envelope(String)
    }
    public let sequence: UInt64
    public let reason: Reason

    public init(sequence: UInt64, reason: Reason) {
        self.sequence = sequence
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .unknownKind(let k): "event \(sequence): unknown kind \(k) (written by a newer Vigil?)"
        case .malformed(let k, let detail): "event \(sequence): malformed \(EventKind(rawValue: Int(k)).map(\.name) ?? "kind \(k)") payload: \(detail)"
        case .envelope(let detail): "event \(sequence): \(detail)"
        }
    }
}

/// Encodes event bodies to (kind, payload) pairs for the log and back.
///
/// The payload is the protobuf message for the kind. Unknown fields from newer schemas are
/// skipped by the decoder, so old builds keep reading newer logs, and new builds read every
/// older schema version (proved by the golden files in Tests/VigilEventsTests/Golden).
public enum EventCodec {
    public static func encode(_ body: EventBody) -> (kind: UInt32, payload: [UInt8]) {
        let kind = UInt32(body.kind.rawValue)
        // Serializing these messages cannot fail: they have no required fields and no Any.
        let payload: [UInt8]
        switch body {
        case .scanHit(let m): payload = serialize(m)
        case .alertReceived(let m), .alertRaised(let m): payload = serialize(m)
        case .alertCancelled(let m): payload = serialize(m)
        case .checkIn(let m): payload = serialize(m)
        case .buttonInput(let m): payload = serialize(m)
        case .nodeStarted(let m): payload = serialize(m)
        case .nodeStopped(let m): payload = serialize(m)
        case .radioStateChanged(let m): payload = serialize(m)
        case .residentEnrolled(let m), .residentUpdated(let m): payload = serialize(m)
        case .residentRemoved(let m): payload = serialize(m)
        case .deadlineReached(let m): payload = serialize(m)
        case .alarmAcknowledged(let m): payload = serialize(m)
        case .outboxAttempt(let m): payload = serialize(m)
        case .exposureDetected(let m): payload = serialize(m)
        case .contactRetention(let m): payload = serialize(m)
        case .exposureKeysPublished(let m): payload = serialize(m)
        case .alertAcknowledged(let m): payload = serialize(m)
        case .alertExpired(let m): payload = serialize(m)
        case .alertReaffirmed(let m): payload = serialize(m)
        case .downtimeDetected(let m): payload = serialize(m)
        case .hubAcknowledged(let m): payload = serialize(m)
        case .hubEpochStarted(let m): payload = serialize(m)
        case .hubReceived(let m): payload = serialize(m)
        case .occupancySampled(let m): payload = serialize(m)
        case .exposureKeysOffered(let m): payload = serialize(m)
        case .exposureKeysMatched(let m): payload = serialize(m)
        case .hubFeedRewound(let m): payload = serialize(m)
        case .logSalvaged(let m): payload = serialize(m)
        case .scanSightings(let m): payload = serialize(m)
        case .scanBatch(let m): payload = serialize(m)
        case .linkChanged(let m): payload = serialize(m)
        case .chatMessage(let m): payload = serialize(m)
        case .chatOpened(let m): payload = serialize(m)
        case .hazardReported(let m): payload = serialize(m)
        case .hazardDeadline(let m): payload = serialize(m)
        case .alertTaken(let m): payload = serialize(m)
        case .callDeadline(let m): payload = serialize(m)
        case .smsReceived(let m): payload = serialize(m)
        case .phoneCallDecided(let m): payload = serialize(m)
        case .boxKeyRevoked(let m): payload = serialize(m)
        case .warningReceived(let m): payload = serialize(m)
        case .warningDeadline(let m): payload = serialize(m)
        case .warningHeard(let m): payload = serialize(m)
        }
        return (kind, payload)
    }

    private static func serialize<M: SwiftProtobuf.Message>(_ message: M) -> [UInt8] {
        (try? message.serializedBytes()) ?? []
    }

    /// Decodes a payload in place (no copy of the bytes).
    public static func decode(kind: UInt32, payload: UnsafeRawBufferPointer, sequence: UInt64) throws(EventDecodingError) -> EventBody {
        guard let eventKind = EventKind(rawValue: Int(kind)), EventKind.known.contains(eventKind) else {
            throw EventDecodingError(sequence: sequence, reason: .unknownKind(kind))
        }
        do {
            switch eventKind {
            case .scanHit:
                // The hot kind: a fast path that defers to swift-protobuf on anything unusual.
                if let hit = ScanHitWireDecoder.decode(payload) { return .scanHit(hit) }
                return .scanHit(try parse(payload))
            case .alertReceived: return .alertReceived(try parse(payload))
            case .alertRaised: return .alertRaised(try parse(payload))
            case .alertCancelled: return .alertCancelled(try parse(payload))
            case .checkIn: return .checkIn(try parse(payload))
            case .buttonInput: return .buttonInput(try parse(payload))
            case .nodeStarted: return .nodeStarted(try parse(payload))
            case .nodeStopped: return .nodeStopped(try parse(payload))
            case .radioStateChanged: return .radioStateChanged(try parse(payload))
            case .residentEnrolled: return .residentEnrolled(try parse(payload))
            case .residentUpdated: return .residentUpdated(try parse(payload))
            case .residentRemoved: return .residentRemoved(try parse(payload))
            case .deadlineReached: return .deadlineReached(try parse(payload))
            case .alarmAcknowledged: return .alarmAcknowledged(try parse(payload))
            case .outboxAttempt: return .outboxAttempt(try parse(payload))
            case .exposureDetected: return .exposureDetected(try parse(payload))
            case .contactRetention: return .contactRetention(try parse(payload))
            case .exposureKeysPublished: return .exposureKeysPublished(try parse(payload))
            case .alertAcknowledged: return .alertAcknowledged(try parse(payload))
            case .alertExpired: return .alertExpired(try parse(payload))
            case .alertReaffirmed: return .alertReaffirmed(try parse(payload))
            case .downtimeDetected: return .downtimeDetected(try parse(payload))
            case .hubAcknowledged: return .hubAcknowledged(try parse(payload))
            case .hubEpochStarted: return .hubEpochStarted(try parse(payload))
            case .hubReceived: return .hubReceived(try parse(payload))
            case .occupancySampled: return .occupancySampled(try parse(payload))
            case .exposureKeysOffered: return .exposureKeysOffered(try parse(payload))
            case .exposureKeysMatched: return .exposureKeysMatched(try parse(payload))
            case .hubFeedRewound: return .hubFeedRewound(try parse(payload))
            case .logSalvaged: return .logSalvaged(try parse(payload))
            case .scanSightings: return .scanSightings(try parse(payload))
            case .scanBatch:
                // Its packed hits are checked here, whole, so a batch that decodes never fails later.
                let batch: ScanBatch = try parse(payload)
                do { try batch.validate() } catch {
                    throw EventDecodingError(sequence: sequence, reason: .malformed(kind: kind, detail: error.description))
                }
                return .scanBatch(batch)
            case .linkChanged: return .linkChanged(try parse(payload))
            case .chatMessage: return .chatMessage(try parse(payload))
            case .chatOpened: return .chatOpened(try parse(payload))
            case .hazardReported: return .hazardReported(try parse(payload))
            case .hazardDeadline: return .hazardDeadline(try parse(payload))
            case .alertTaken: return .alertTaken(try parse(payload))
            case .callDeadline: return .callDeadline(try parse(payload))
            case .smsReceived: return .smsReceived(try parse(payload))
            case .phoneCallDecided: return .phoneCallDecided(try parse(payload))
            case .boxKeyRevoked: return .boxKeyRevoked(try parse(payload))
            case .warningReceived: return .warningReceived(try parse(payload))
            case .warningDeadline: return .warningDeadline(try parse(payload))
            case .warningHeard: return .warningHeard(try parse(payload))
            case .unspecified, .UNRECOGNIZED:
                throw EventDecodingError(sequence: sequence, reason: .unknownKind(kind))
            }
        } catch let error as EventDecodingError {
            throw error
        } catch {
            throw EventDecodingError(sequence: sequence, reason: .malformed(kind: kind, detail: "\(error)"))
        }
    }

    @inline(__always)
    private static func parse<M: SwiftProtobuf.Message>(_ payload: UnsafeRawBufferPointer) throws -> M {
        // Unknown fields are discarded: projections never need them and keeping them costs an
        // allocation per event on replay.
        var options = BinaryDecodingOptions()
        options.discardUnknownFields = true
        return try M(serializedBytes: RawSpan(_unsafeBytes: payload), options: options)
    }

    /// The fields projections fold from a ScanHit payload, decoded in place without building the
    /// generated message (see `ScanHitFields`). nil when the payload is not in the common shape:
    /// then `decode(kind:payload:sequence:)` decodes it, or reports why it cannot.
    @inline(__always)
    public static func scanHitFields(payload: UnsafeRawBufferPointer) -> ScanHitFields? {
        ScanHitWireDecoder.decodeFields(payload)
    }

    public static func decode(kind: UInt32, payload: [UInt8], sequence: UInt64) throws(EventDecodingError) -> EventBody {
        let result: Result<EventBody, EventDecodingError> = payload.withUnsafeBytes { raw in
            do throws(EventDecodingError) { return .success(try decode(kind: kind, payload: raw, sequence: sequence)) }
            catch { return .failure(error) }
        }
        return try result.get()
    }
}
