import VigilGATT

/// `att_pdu_cpu_us`: CPU time per ATT PDU handled by the box's GATT server, on one core: the
/// PDUs of chat sessions as a phone runs them (MTU exchange, discovery of every service,
/// characteristic and CCCD, a subscription, then messages written with and without response,
/// each answered by a notification of the same size) — every PDU in parsed and answered, every
/// PDU out built. Value = thread CPU / (PDUs in + PDUs out). Baseline in the same run:
/// `ATTPDU.parse` alone over the same incoming PDUs, per PDU, so the ratio is what answering
/// costs beyond reading the bytes.
struct ATTBench {
    static let metric = "att_pdu_cpu_us"
    let plan: Plan
    let options: Options
    let reporter: Reporter

    static let chat = GATTUUID("7E57C000-2C8F-4F3C-9F91-8577E1891234")!
    static let database = GATTDatabase(deviceName: "Vigil bench", services: [
        GATTService(uuid: chat, characteristics: [
            GATTCharacteristic(uuid: GATTUUID("7E57C001-2C8F-4F3C-9F91-8577E1891234")!, properties: [.notify], maximumWriteLength: 0),
            GATTCharacteristic(uuid: GATTUUID("7E57C002-2C8F-4F3C-9F91-8577E1891234")!, properties: [.write, .writeWithoutResponse]),
        ]),
    ])

    /// One session's PDUs from the phone: discovery as the client role produces it against the
    /// same database, then `messages` writes.
    static func session(messages: Int) -> [[UInt8]] {
        var server = GATTServer(database: database)
        var client = GATTClient()
        var incoming: [[UInt8]] = []
        func pump(_ outputs: [GATTClientOutput]) {
            for case .send(let bytes) in outputs {
                incoming.append(bytes)
                for case .send(let answer) in server.receive(bytes) { pump(client.receive(answer)) }
            }
        }
        if let started = client.start(.exchangeMTU(185)) { pump(started.outputs) }
        if let started = client.start(.discover(service: nil)) { pump(started.outputs) }
        incoming.append(ATTPDU.writeRequest(handle: database.characteristics[3].configurationHandle ?? 0, value: [1, 0]).encode())
        let rx = database.characteristics[4].valueHandle
        for i in 0..<messages {
            let text = Array("message \(i): water at the north door, 40 cots left".utf8)
            incoming.append(i % 2 == 0 ? ATTPDU.writeRequest(handle: rx, value: text).encode() : ATTPDU.writeCommand(handle: rx, value: text).encode())
        }
        return incoming
    }

    func run() throws {
        let sessions = options.quick ? 2_000 : 10_000
        let pdus = Self.session(messages: 20)
        progress("\(Self.metric): \(sessions) sessions of \(pdus.count) PDUs from the phone")
        var values: [Double] = []
        var baselines: [Double] = []
        var handled = 0
        for run in 1...plan.runs {
            var outgoing = 0, incoming = 0
            let start = threadCPUNanoseconds()
            for _ in 0..<sessions {
                var server = GATTServer(database: Self.database)
                for bytes in pdus {
                    incoming += 1
                    for output in server.receive(bytes) {
                        switch output {
                        case .send: outgoing += 1
                        case .written(_, let value, let completion):
                            if let completion, server.completeWrite(completion) != nil { outgoing += 1 }
                            if (try? server.notification(3, Array(value.prefix(server.mtu - 3)))) != nil { outgoing += 1 }
                        default: break
                        }
                    }
                }
            }
            let cpu = threadCPUNanoseconds() - start
            handled = incoming + outgoing
            values.append(Double(cpu) / 1_000 / Double(max(handled, 1)))

            let baseStart = threadCPUNanoseconds()
            var parsed = 0
            for _ in 0..<sessions {
                for bytes in pdus where (try? ATTPDU.parse(bytes)) != nil { parsed += 1 }
            }
            let baseCPU = threadCPUNanoseconds() - baseStart
            guard parsed == sessions * pdus.count else { throw BenchError("att: \(sessions * pdus.count - parsed) PDUs did not parse") }
            baselines.append(Double(baseCPU) / 1_000 / Double(max(parsed, 1)))
            progress("\(Self.metric) run \(run)/\(plan.runs): \(values.last ?? 0) µs/PDU over \(handled) PDUs; parse alone \(baselines.last ?? 0) µs")
        }
        reporter.emit(MetricLine(
            metric: Self.metric, value: median(values) ?? 0, unit: "µs/PDU", baseline: median(baselines),
            context: [
                ("baseline_is", .string("ATTPDU.parse alone over the same incoming PDUs, µs per PDU")),
                ("definition", .string("thread CPU per ATT PDU (in and out) through GATTServer: a phone's chat sessions (MTU, discovery, "
                                       + "subscription, 20 messages of 51 bytes, half with response, each notified back)")),
                ("sessions", .int(sessions)),
                ("pdus_per_run", .int(handled)),
                ("runs", .int(values.count)),
                ("value_min", .optional(values.min())),
                ("value_max", .optional(values.max())),
            ]))
    }
}
