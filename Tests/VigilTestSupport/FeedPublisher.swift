import Foundation
import VigilJ2735
import VigilMQTT

/// A regional feed's publisher and a bare subscriber for the hazard feed's tests and benchmark:
/// this project's MQTT client (libmosquitto) driven by a blocking poll on the caller's thread,
/// with the publisher's certificate.
public enum FeedPublisher {
    /// A client of the broker with the publisher's certificate, connected.
    static func connected(_ broker: MosquittoBroker, _ name: String) throws -> MQTTClient {
        var options = MQTTClient.Options(clientID: "\(name)-\(UInt32.random(in: 0...UInt32.max))", host: "127.0.0.1", port: broker.port)
        options.caFile = broker.directory + "/ca.pem"
        options.certificateFile = broker.directory + "/publisher.crt"
        options.keyFile = broker.directory + "/publisher.key"
        let client = try MQTTClient(options: options)
        var connected = false
        client.onConnect = { rc in connected = rc == 0 }
        try client.connect()
        try pump(client) { connected }
        return client
    }

    /// Drives `client` with poll(2) until `done` (or 30 s: a stuck broker).
    static func pump(_ client: MQTTClient, seconds: Double = 30, until done: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !done() {
            guard Date() < deadline, let fd = client.socket else { throw BrokerError("the MQTT client is stuck") }
            var p = pollfd(fd: fd, events: Int16(POLLIN) | (client.wantsWrite ? Int16(POLLOUT) : 0), revents: 0)
            _ = poll(&p, 1, 100)
            if p.revents & Int16(POLLOUT) != 0 { try client.writeReady() }
            if p.revents & Int16(POLLIN) != 0 { try client.readReady() }
            try client.housekeeping()
        }
    }

    /// Subscribes to `topic`, calls `ready`, and counts messages until `count` arrived (or 30 s
    /// without progress); returns how many did.
    public static func receive(broker: MosquittoBroker, topic: String, count: Int, ready: () -> Void) throws -> Int {
        let client = try connected(broker, "counter")
        var received = 0
        client.onMessage = { _, _ in received += 1 }
        try client.subscribe(topic)
        try pump(client) { !client.wantsWrite }
        // The SUBACK: one round trip before the broker routes to the new subscription.
        var acknowledged = false
        client.onPublish = { _ in acknowledged = true }
        try client.publish("vigil/bench/probe", payload: [1], qos: 1)
        try pump(client) { acknowledged }
        ready()
        var last = received
        while received < count {
            try? pump(client, seconds: 30) { received > last || received >= count }
            guard received > last else { break }
            last = received
        }
        client.disconnect()
        return received
    }

    /// Publishes `count` PSMs (QoS 0) as fast as the socket takes them, or at `perSecond` (in
    /// batches of 200, paced by the wall clock), cycling over `distinctIDs` pedestrians walking
    /// north near Phoenix's reference point.
    public static func flood(broker: MosquittoBroker, count: Int, distinctIDs: Int, perSecond: Int? = nil) throws {
        let start = Date()
        let client = try connected(broker, "flood")
        func pump(until done: () -> Bool) throws { try Self.pump(client, until: done) }
        var sent = 0
        while sent < count {
            for _ in 0 ..< min(200, count - sent) {
                let id = UInt32(sent % distinctIDs)
                let psm = PersonalSafetyMessage(userType: .pedestrian, secondMark: UInt16(sent % 60_000), messageCount: UInt8(sent % 128),
                                                temporaryID: withUnsafeBytes(of: id.bigEndian, Array.init),
                                                latitude: 334_351_000 + Int32(sent % 1_000) * 100, longitude: -1_120_108_000,
                                                speed: 70, heading: 7_200)
                let frame = MessageFrame(messageID: MessageFrame.personalSafetyMessage, value: psm.encode()).encode()
                try client.publish("vzimp/1/GeoRelevance/az/12/Public/j2735/PSM/\(id)", payload: frame)
                sent += 1
            }
            try pump { !client.wantsWrite }
            if let perSecond {
                // A publisher's pace, not a test's wait: the next batch when its time comes.
                let due = start.addingTimeInterval(Double(sent) / Double(perSecond))
                let ahead = due.timeIntervalSinceNow
                if ahead > 0 { usleep(UInt32(ahead * 1e6)) }
            }
        }
        client.disconnect()
        try? pump { !client.wantsWrite }
    }
}
