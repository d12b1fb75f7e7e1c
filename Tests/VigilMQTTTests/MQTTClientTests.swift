import Testing
@testable import VigilMQTT

/// The MQTT client's own rules, without a broker: its defaults, how its errors read and which of
/// them mean "reconnect", and the requests libmosquitto refuses before anything reaches a socket.
/// libmosquitto 2.0's codes (mosquitto.h): 3 MOSQ_ERR_INVAL, 4 MOSQ_ERR_NO_CONN, 7 MOSQ_ERR_CONN_LOST,
/// 9 MOSQ_ERR_PAYLOAD_SIZE.
@Suite struct MQTTClientTests {
    static let options = MQTTClient.Options(clientID: "vigil-test", host: "127.0.0.1", port: 1883)

    /// The error `body` threw, or nil.
    private func failure(_ body: () throws(MQTTError) -> Void) -> MQTTError? {
        do throws(MQTTError) {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test func optionsDefaultToPlainTCPAndAThirtySecondKeepAlive() {
        let options = Self.options
        #expect(options.keepAliveSeconds == 30)
        #expect(options.caFile == nil && options.certificateFile == nil && options.keyFile == nil)
        let tls = MQTTClient.Options(clientID: "box", host: "feed.example", port: 8883, caFile: "/etc/vigil/ca.pem",
                                     certificateFile: "/etc/vigil/box.crt", keyFile: "/etc/vigil/box.key")
        #expect(tls != options && tls.caFile == "/etc/vigil/ca.pem" && tls.port == 8883)
    }

    @Test func anErrorNamesTheCallAndLibmosquittosWords() {
        let own = MQTTError("mosquitto_lib_init", message: "libmosquitto did not initialise")
        #expect(own.code == -1)
        #expect(own.description == "mosquitto_lib_init: libmosquitto did not initialise")
        #expect(!own.isConnectionLost)
        let lost = MQTTError("mosquitto_loop_read", code: 7, errno: nil)
        #expect(!lost.message.isEmpty)
        #expect(lost.description == "mosquitto_loop_read: \(lost.message)")
    }

    @Test func onlyALostConnectionAsksForAReconnect() {
        for code: Int32 in [4, 5, 7, 8, 2, 19] {   // no connection, refused, lost, TLS, protocol, keep-alive
            #expect(MQTTError("op", code: code, errno: nil).isConnectionLost, "\(code)")
        }
        for code: Int32 in [0, 1, 3, 9, 12, 18] {   // success, no memory, invalid, payload size, ACL, UTF-8
            #expect(!MQTTError("op", code: code, errno: nil).isConnectionLost, "\(code)")
        }
    }

    @Test func aTopicWithWildcardsOrNothingIsRefusedBeforeItIsSent() throws {
        let client = try MQTTClient(options: Self.options)
        for topic in ["feed/+", "feed/#", "+", ""] {
            let error = failure { () throws(MQTTError) in try client.publish(topic, payload: [1]) }
            #expect(error?.code == 3, "\(topic.debugDescription)")
            #expect(error?.operation == "mosquitto_publish(\(topic))")
            #expect(error?.isConnectionLost == false)
        }
        let qos = failure { () throws(MQTTError) in try client.publish("feed/ok", payload: [1], qos: 3) }
        #expect(qos?.code == 3, "QoS is 0, 1 or 2")
    }

    @Test func publishingOrSubscribingBeforeConnectingAsksForAConnection() throws {
        let client = try MQTTClient(options: Self.options)
        #expect(client.socket == nil && !client.wantsWrite)
        let publish = failure { () throws(MQTTError) in try client.publish("feed/ok", payload: []) }
        #expect(publish?.code == 4 && publish?.isConnectionLost == true)
        let subscribe = failure { () throws(MQTTError) in _ = try client.subscribe("feed/#") }
        #expect(subscribe?.code == 4 && subscribe?.isConnectionLost == true)
    }
}
