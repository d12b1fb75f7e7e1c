import Foundation
import Testing
import VigilEvents
import VigilHubProtocol

/// The upload's documents as both ends read them: what the box writes comes back equal, and what
/// a peer could send instead (cut, mistyped, wrongly sized) is refused with an error, never a trap.
@Suite struct SyncDocumentTests {
    static let hash = ContentHash.bytes(kind: 2, timeMicroseconds: 5, payload: [1, 2, 3])

    static func batch(box: BoxReport?) -> UploadBatch {
        UploadBatch(node: NodeIDText.format(0xB0C5), epoch: 3, epochFirst: 7, from: 7, through: 9, urgent: true,
                    events: [UploadedEvent(seq: 7, kind: 2, timeUs: 5, payload: [1, 2, 3], hash: Self.hash),
                             UploadedEvent(seq: 9, kind: 5, timeUs: 6, payload: [], hash: Self.hash)],
                    box: box)
    }

    @Test func theContentHashIsSHA256OverKindTimeAndPayload() {
        // sha256(00000001 || 0000000000000002 || 03), computed apart from the code.
        #expect(ContentHash.of(kind: 1, timeMicroseconds: 2, payload: [3]) == "4ec9dc03bc7e4113423b9e7d87cf8c6a6e31bf52bccc3c4e0821ee6a3f10f133")
        #expect(ContentHash.of(kind: 2, timeMicroseconds: 2, payload: [3]) == "45f1b94b4923526b0c3f75e197cf7f25e23eacac05ba7ecfec1bb2d00a837a18")
        #expect(ContentHash.bytes(kind: 1, timeMicroseconds: 2, payload: [3]).count == 32)
    }

    @Test func anEventLeavesWithItsIdentityContentAndHash() throws {
        let event = Event(sequence: 4, timeMicroseconds: 1_000, body: .checkIn(CheckIn()))
        let uploaded = try #require(UploadedEvent(event, policy: SharePolicy()))
        #expect(uploaded.seq == 4 && uploaded.timeUs == 1_000)
        #expect(uploaded.kind == UInt32(EventKind.checkIn.rawValue))
        #expect(uploaded.hash == ContentHash.bytes(kind: uploaded.kind, timeMicroseconds: 1_000, payload: uploaded.payload))
        let scan = Event(sequence: 5, timeMicroseconds: 1_000, body: .scanHit(ScanHit()))
        #expect(UploadedEvent(scan, policy: SharePolicy()) == nil, "scan hits never leave the box")
    }

    @Test func aBinaryBatchReadsBackEqual() throws {
        for box: BoxReport? in [nil, BoxReport(backlog: 0), BoxReport(site: "Gym", location: "52.52,13.405", backlog: 12),
                                BoxReport(site: nil, location: "0,0", backlog: UInt64.max)] {
            let batch = Self.batch(box: box)
            #expect(try UploadBatch(protobuf: batch.protobuf()) == batch, "\(String(describing: box))")
        }
    }

    @Test func aCutOrMalformedBinaryBatchIsRefusedNotTrapped() throws {
        let whole = try Self.batch(box: BoxReport(site: "Gym", backlog: 12)).protobuf()
        #expect(throws: (any Error).self) { try UploadBatch(protobuf: Array(whole.dropLast())) }
        #expect(throws: (any Error).self) { try UploadBatch(protobuf: [0x0A, 0x05, 0x41]) }   // node: 5 bytes said, 1 sent
        #expect(throws: (any Error).self) { try UploadBatch(protobuf: [0x0A, 0x01, 0xFF]) }   // node: not UTF-8
        #expect(throws: (any Error).self) { try UploadBatch(protobuf: [0xFF, 0xFF, 0xFF]) }   // a tag that never ends
    }

    @Test func aJSONBatchUsesSnakeCaseAndReadsBackEqual() throws {
        let batch = Self.batch(box: BoxReport(site: "Gym", backlog: 12))
        let data = try JSONEncoder().encode(batch)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"epoch_first\"") && text.contains("\"time_us\""))
        #expect(text.contains("\"payload\":\"AQID\""), "payloads are base64")
        let hex = ContentHash.of(kind: 2, timeMicroseconds: 5, payload: [1, 2, 3])   // Self.hash, as hex
        #expect(text.contains("\"hash\":\"\(hex)\""), "hashes are hex")
        #expect(try JSONDecoder().decode(UploadBatch.self, from: data) == batch)
    }

    @Test func aJSONEventWithABadPayloadOrHashIsRefused() throws {
        let hash = String(repeating: "ab", count: 32)
        func event(payload: String = "\"AQID\"", hash: String = "\"\(String(repeating: "ab", count: 32))\"", seq: String = "1") -> Data {
            Data(#"{"seq":\#(seq),"kind":2,"time_us":3,"payload":\#(payload),"hash":\#(hash)}"#.utf8)
        }
        let good = try JSONDecoder().decode(UploadedEvent.self, from: event())
        #expect(good == UploadedEvent(seq: 1, kind: 2, timeUs: 3, payload: [1, 2, 3], hash: [UInt8](repeating: 0xAB, count: 32)))
        for bad in [event(payload: "\"not base64!\""), event(payload: "12"),
                    event(hash: "\"abcd\""), event(hash: "\"\(hash)ab\""), event(hash: "\"\(String(repeating: "zz", count: 32))\""),
                    event(seq: "-1"), event(seq: "\"1\""), event(seq: "18446744073709551616"),
                    Data(#"{"seq":1,"kind":2,"payload":"AQID"}"#.utf8), Data("{".utf8), Data()] {
            #expect(throws: (any Error).self) { try JSONDecoder().decode(UploadedEvent.self, from: bad) }
        }
    }
}

/// What leaves the box: contacts' addresses stay unless shared, occupancy only when on.
@Suite struct SharePolicyTests {
    static func resident() -> Resident {
        var ben = Contact()
        ben.name = "Ben"
        ben.address = "+34600111222"
        var none = Contact()
        none.name = "Carla"
        var r = Resident()
        r.id = "r1"
        r.name = "Ana"
        r.ownAddress = "+34600333444"
        r.contacts = [ben, none]
        return r
    }

    @Test func aResidentsAddressesStayOnTheBoxButTheirNamesLeave() throws {
        for body in [EventBody.residentEnrolled(Self.resident()), .residentUpdated(Self.resident())] {
            let uploaded = try #require(SharePolicy().uploaded(body))
            let r: Resident
            switch uploaded {
            case .residentEnrolled(let x), .residentUpdated(let x): r = x
            default: Issue.record("\(uploaded.kind.name) is not a resident"); continue
            }
            #expect(uploaded.kind == body.kind)
            #expect(r.name == "Ana" && r.contacts.map(\.name) == ["Ben", "Carla"])
            #expect(r.contacts.map(\.address) == [SharePolicy.kept, ""], "an empty address stays empty")
            #expect(r.ownAddress == SharePolicy.kept)
        }
        let shared = EventBody.residentEnrolled(Self.resident())
        #expect(SharePolicy(shareContacts: true).uploaded(shared) == shared)
    }

    @Test func occupancyLeavesOnlyWhenShared() {
        var sample = OccupancySampled()
        sample.advertisers = 12
        #expect(SharePolicy().uploaded(.occupancySampled(sample)) == EventBody.occupancySampled(sample))
        #expect(SharePolicy(shareOccupancy: false).uploaded(.occupancySampled(sample)) == nil)
    }

    @Test func callsForHelpAreUrgentAndNothingElseIs() {
        #expect(SharePolicy.isUrgent(.alertRaised) && SharePolicy.isUrgent(.alertCancelled) && SharePolicy.isUrgent(.alertReaffirmed))
        #expect(!SharePolicy.isUrgent(.checkIn) && !SharePolicy.isUrgent(.alertReceived) && !SharePolicy.isUrgent(.scanHit))
    }
}
