import ArgumentParser
import Foundation
import VigilGATT
import VigilRadio
import VigilSystem

/// `vigil debug gatt-serve`: the box's GATT database served on an adapter's ATT channel, outside
/// the node, so the real-kernel tests can hold the ATT and GATT code against an independent
/// client (BlueZ's gatttool). Prints what peers do, one line each; a line `notify TEXT` on stdin
/// notifies TEXT (in parts when it is longer than one value) on the chat and UART TX of every
/// peer that subscribed. With `--profile heart-rate` it plays a resident's heart-rate sensor
/// instead (the Heart Rate service, 0x180D): a line `hr BPM contact|no-contact|unsupported`
/// notifies that measurement (0x2A37) to every subscribed peer. With `--accept-pairing` it
/// answers the kernel's pairing confirmations on the adapter with yes, as a strap without a
/// display does (Just Works; the kernel asks user space even then, and no bluetoothd runs here).
struct DebugGATTServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "gatt-serve")

    @Option(help: "The adapter (hci1, or its address).")
    var adapter: String

    @Option(help: "The device name GAP serves.")
    var name = "Vigil"

    @Option(help: "What to serve: box (the box's services) or heart-rate (a heart-rate sensor).")
    var profile = "box"

    @Flag(help: "Accept every pairing the kernel asks to confirm on this adapter (a strap without a display).")
    var acceptPairing = false

    func run() async throws {
        try await reportingErrors {
            let adapters = try listBluetoothAdapters()
            guard let info = adapters.first(where: { $0.name == adapter || $0.addressText == adapter.uppercased() }) else {
                throw CLIError("no adapter \(adapter)", code: 69)
            }
            let heartRate = profile == "heart-rate"
            guard heartRate || profile == "box" else { throw CLIError("--profile must be box or heart-rate", code: 64) }
            let database = heartRate
                ? GATTDatabase(deviceName: name, services: [
                    GATTService(uuid: .heartRateService, characteristics: [
                        GATTCharacteristic(uuid: .heartRateMeasurement, properties: [.notify], maximumWriteLength: 0),
                    ]),
                ])
                : BoxServices.database(name: name)
            let listener = try ATTSocket.listen(on: LEAddress(value: info.address, kind: .public))
            let epoll = try Epoll()
            try epoll.add(listener.fd, token: 0)
            try epoll.add(STDIN_FILENO, token: 1)
            let management = acceptPairing ? try ManagementChannel.open() : nil
            if let management { try epoll.add(management.fd, token: UInt64.max) }
            let out = FileOutput.standardOutput
            out.write("listening on \(info.addressText)\n")

            func send(_ pdu: [UInt8], _ socket: ATTSocket, _ token: UInt64) {
                do { try socket.send(pdu) } catch { out.write("send failed on link \(token): \(error)\n") }
            }
            struct Link { var socket: ATTSocket; var server: GATTServer; var assemblers: [Int: MessageAssembler] }
            var links: [UInt64: Link] = [:]
            var nextToken: UInt64 = 2
            let notified = (heartRate
                ? [database.characteristicIndex(of: .heartRateMeasurement, in: .heartRateService)]
                : [database.characteristicIndex(of: BoxServices.chatTX, in: BoxServices.chat),
                   database.characteristicIndex(of: BoxServices.uartTX, in: BoxServices.uart)]).compactMap { $0 }
            var pendingInput: [UInt8] = []
            var discardingLine = false
            while true {
                for ready in try epoll.wait() {
                    switch ready.token {
                    case UInt64.max:
                        while let management, let packet = try management.receive() {
                            switch try? ManagementEvent.parse(packet) {
                            case .confirmationRequested(let index, let peer) where index == info.id:
                                try management.send(.confirmPairing(peer, accept: true), index: index)
                                out.write("pairing confirmed with \(peer)\n")
                            case .newLongTermKey(let index, let storeHint, let key) where index == info.id:
                                out.write("key for \(key.peer)\(storeHint ? " (bonded)" : "")\n")
                            default:
                                break
                            }
                        }
                    case 0:
                        while let socket = try listener.accept() {
                            guard links.count < 8 else { out.write("refused \(socket.peer?.description ?? "?"): 8 links\n"); continue }
                            try epoll.add(socket.fd, token: nextToken)
                            links[nextToken] = Link(socket: socket, server: GATTServer(database: database), assemblers: [:])
                            out.write("connected \(socket.peer?.description ?? "?")\n")
                            nextToken += 1
                        }
                    case 1:
                        let chunk: [UInt8]
                        do {
                            guard let available = try readAvailable(STDIN_FILENO, upTo: 4_096) else { continue }
                            chunk = available
                        } catch {
                            out.write("stdin: \(error)\n")
                            try epoll.remove(STDIN_FILENO)
                            continue
                        }
                        guard !chunk.isEmpty else { try epoll.remove(STDIN_FILENO); continue }
                        // Operator input, one line at a time; a line over 8 KiB is dropped whole
                        // (what is left of it, up to its newline, too).
                        if discardingLine {
                            guard let newline = chunk.firstIndex(of: 0x0A) else { continue }
                            discardingLine = false
                            pendingInput += chunk[(newline + 1)...]
                        } else {
                            pendingInput += chunk
                        }
                        if pendingInput.count > 8_192, !pendingInput.contains(0x0A) {
                            pendingInput.removeAll()
                            discardingLine = true
                        }
                        while let newline = pendingInput.firstIndex(of: 0x0A) {
                            let line = String(decoding: pendingInput[..<newline], as: UTF8.self)
                            pendingInput.removeSubrange(...newline)
                            let text: [UInt8]
                            if heartRate {
                                let words = line.split(separator: " ")
                                let contacts: [String: HeartRateMeasurement.Contact] = ["contact": .detected, "no-contact": .notDetected, "unsupported": .unsupported]
                                guard words.count == 3, words[0] == "hr", let bpm = UInt16(words[1]), let contact = contacts[String(words[2])] else {
                                    out.write("ignored: \(line) (hr BPM contact|no-contact|unsupported)\n")
                                    continue
                                }
                                text = HeartRateMeasurement(beatsPerMinute: bpm, contact: contact).encode()
                            } else {
                                guard line.hasPrefix("notify ") else { continue }
                                text = Array(line.dropFirst(7).utf8)
                            }
                            for (token, link) in links {
                                for characteristic in notified {
                                    for part in heartRate ? [text] : MessageFrames.split(text, valueLength: link.server.mtu - 3) {
                                        guard let pdu = try? link.server.notification(characteristic, part) else { continue }
                                        send(pdu, link.socket, token)
                                    }
                                }
                            }
                            out.write("notified \(text.count) bytes\n")
                        }
                    default:
                        guard var link = links[ready.token] else { continue }
                        let peer = link.socket.peer?.description ?? "?"
                        var closed = false
                        readLoop: while true {
                            switch link.socket.receive() {
                            case .nothing: break readLoop
                            case .truncated: out.write("\(peer): a PDU over \(ATTSocket.receiveCapacity) bytes\n")
                            case .closed(let reason):
                                out.write("disconnected \(peer)\(reason.map { " (\($0))" } ?? "")\n")
                                closed = true
                                break readLoop
                            case .pdu(let bytes):
                                guard ATTRole.of(opcode: bytes.first ?? 0) == .server else { continue }
                                // Said, so the VM test can tell a long write from a plain one.
                                if bytes.first == 0x16 { out.write("prepare-write \(peer) \(max(0, bytes.count - 5)) bytes\n") }
                                for output in link.server.receive(bytes) {
                                    switch output {
                                    case .send(let pdu):
                                        send(pdu, link.socket, ready.token)
                                    case .written(let index, let value, let completion):
                                        let entry = database.characteristics[index]
                                        let limit = entry.uuid == BoxServices.message ? BoxServices.maximumMessageBytes : BoxServices.maximumChatBytes
                                        var assembler = link.assemblers[index] ?? MessageAssembler(limit: limit)
                                        var refusal: ATTErrorCode?
                                        switch assembler.add(value) {
                                        case .message(let message):
                                            out.write("written \(peer) \(entry.uuid) \(String(decoding: message, as: UTF8.self))\n")
                                        case .tooLong:
                                            out.write("too long \(peer) \(entry.uuid)\n")
                                            refusal = .messageTooLong
                                        case .partial, .empty: break
                                        }
                                        link.assemblers[index] = assembler
                                        if let completion, let pdu = link.server.completeWrite(completion, error: refusal) { send(pdu, link.socket, ready.token) }
                                    case .subscriptionChanged(let index, let notify, let indicate):
                                        out.write("subscribed \(peer) \(database.characteristics[index].uuid) notify=\(notify) indicate=\(indicate)\n")
                                    case .mtuChanged(let mtu):
                                        out.write("mtu \(peer) \(mtu)\n")
                                    case .violation(let what):
                                        out.write("violation \(peer): \(what)\n")
                                    case .indicationConfirmed:
                                        break
                                    }
                                }
                            }
                        }
                        if closed {
                            try? epoll.remove(link.socket.fd)
                            link.socket.close()
                            links[ready.token] = nil
                        } else {
                            links[ready.token] = link
                        }
                    }
                }
            }
        }
    }
}
