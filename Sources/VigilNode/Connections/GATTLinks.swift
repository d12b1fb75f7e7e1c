import Logging
import VigilCore
import VigilEvents
import VigilGATT
import VigilRadio
import VigilSystem

/// The box as a GATT server: LE links peers open to the radio's adapter, each with the box's
/// services (`BoxServices`), messages written to chat RX, UART RX and the message characteristic
/// logged as `ChatMessage`s, link changes as `LinkChanged`. A Write Request is answered once its
/// event is durable, so a phone that saw its write succeed knows the box has it.
///
/// Bounded per peer: `maximumLinks` links, one message in parts per characteristic
/// (`MessageAssembler`), a token bucket of messages, and `violationLimit` strikes before the box
/// closes the link. Nothing a peer sends can stall the loop: sockets are non-blocking, a send
/// the kernel cannot queue is counted and dropped.
final class GATTLinks: NodeComponent {
    unowned let context: any NodeContext
    let settings: ConnectionSettings
    let adapter: LinkAdapter
    /// Counts and logs links; shared with the chat central and the sensors.
    let ledger: LinkLedger
    /// The box's own link to a peer (`vigil chat connect`): chat goes there first, and status
    /// names it.
    let chatCentral: ChatCentral
    /// A link opened or closed, or the listener came or went: what the box advertises
    /// connectable follows (`AirAlerts`).
    private let connectionsChanged: () -> Void
    private(set) var database: GATTDatabase?
    /// GAP's name, also in the connectable advert.
    private var deviceName = ""
    /// What phones may cost the box across links and addresses.
    private lazy var budgets = PhoneBudgets(PhoneBudgets.Limits(settings), nowNanoseconds: context.monotonic.nowNanoseconds())
    private var listener: ATTSocket?
    var links: [Int32: Link] = [:]
    /// The public warnings changed since phones were last told.
    var warningsChanged = false
    /// Messages logged but not durable yet, per link, with the writes to answer when they are.
    private var awaiting: PendingWrites

    struct Link {
        let socket: ATTSocket
        let peer: LEAddress
        var server: GATTServer
        var assemblers: [Int: MessageAssembler] = [:]
        var strikes = 0
        /// Its opening was logged (`LinkChanged`), so its close is.
        var logged: Bool
        /// The public warnings notified on this link (`GATTLinks.warningKey`): each once.
        var warningsTold: Set<String> = []
    }

    init(context: any NodeContext, settings: ConnectionSettings, adapter: LinkAdapter, ledger: LinkLedger, chatCentral: ChatCentral,
         connectionsChanged: @escaping () -> Void) {
        self.context = context
        self.settings = settings
        self.adapter = adapter
        self.ledger = ledger
        self.chatCentral = chatCentral
        self.connectionsChanged = connectionsChanged
        awaiting = PendingWrites(limitPerLink: settings.maximumPendingWrites)
    }

    var status: ConnectionsStatus? {
        guard settings.enabled else { return nil }
        return ConnectionsStatus(serving: listener != nil,
                                 links: links.values.map(\.peer.description).sorted(),
                                 maximumLinks: settings.maximumLinks,
                                 chatLink: chatCentral.peer.map { "\($0.address) (\($0.ready ? "ready" : "connecting"))" },
                                 counters: ledger.counters)
    }

    /// What the radio advertises connectable, and answers scan requests with, while another
    /// link fits (nil: nothing).
    var connectableAdvertisement: (advert: [UInt8], scanResponse: [UInt8])? {
        guard listener != nil, links.count < settings.maximumLinks, database != nil else { return nil }
        return (BoxServices.connectableAdvertisement(name: deviceName), BoxServices.scanResponse(name: deviceName))
    }

    func start() throws(NodeError) {
        // Links of the last run are gone: say so, so no conversation shows a link that is not there.
        for conversation in context.projections.conversations.connected {
            for role in conversation.openRoles {
                ledger.appendLink(peer: LEAddress(value: conversation.peer, kind: conversation.random ? .random : .public), open: false,
                           reason: "the box restarted", role: LinkRole(rawValue: role) ?? .peripheral)
            }
        }
        guard settings.enabled else { return }
        deviceName = settings.deviceName.isEmpty ? "Vigil \(String(String(context.nodeID, radix: 16).suffix(4)).uppercased())" : settings.deviceName
        database = BoxServices.database(name: deviceName)
        listen()
    }

    func stop() {
        for fd in Array(links.keys) { close(fd, reason: "the box stopped") }
        if let listener {
            context.unwatch(listener.fd, "the ATT listener")
            listener.close()
            self.listener = nil
            connectionsChanged()
        }
    }

    /// Listens on the radio's adapter; a failure (no adapter yet, bluetoothd holding the
    /// channel) is logged and tried again when the radio next comes on.
    private func listen() {
        guard listener == nil, database != nil else { return }
        guard adapter.canLink else {
            context.logger.warning("GATT connections need a BlueZ adapter on the raw channel; not serving",
                                metadata: ["radio": "\(adapter.radio)", "channel": "\(adapter.channel.rawValue)"])
            return
        }
        do {
            guard let adapter = try self.adapter.find() else {
                ledger.countListenFailure()
                return
            }
            let socket = try ATTSocket.listen(on: LEAddress(value: adapter.address, kind: .public), backlog: Int32(settings.maximumLinks))
            guard context.watch(socket.fd, "the ATT listener", handler: { [unowned self] _ in acceptAll() }) else {
                ledger.countListenFailure()
                return
            }
            listener = socket
            connectionsChanged()
            context.logger.info("serving GATT", metadata: ["adapter": "\(adapter.name)", "address": "\(adapter.addressText)"])
        } catch {
            ledger.countListenFailure()
            context.logger.warning("cannot serve GATT", metadata: ["error": "\(error)"])
        }
    }

    func applied(_ event: Event) {
        if case .radioStateChanged(let change) = event.body, change.state == .on { listen() }
        switch event.body {
        case .warningReceived, .warningDeadline, .warningHeard: warningsChanged = true
        case .hubReceived(let item) where item.kind == EventKind.warningReceived.rawValue: warningsChanged = true
        default: break
        }
        if let write = awaiting.settle(event.sequence), let completion = write.completion { answerWrite(write.link, completion, error: nil) }
    }

    func refused(_ event: Event) {
        if let write = awaiting.settle(event.sequence), let completion = write.completion {
            answerWrite(write.link, completion, error: .insufficientResources)
        }
    }

    // MARK: - Links

    private func acceptAll() {
        guard let listener, let database else { return }
        while true {
            let accepted: ATTSocket?
            do { accepted = try listener.accept() } catch {
                // Not a transient error (those return nil): the listener stays readable and would
                // wake the loop every turn. Close it; the radio coming on again listens anew.
                context.logger.error("ATT accept failed: no longer serving until the radio comes on again", metadata: ["error": "\(error)"])
                ledger.countListenFailure()
                context.unwatch(listener.fd, "the ATT listener")
                listener.close()
                self.listener = nil
                connectionsChanged()
                return
            }
            guard let socket = accepted, let peer = socket.peer else { return }
            guard links.count < settings.maximumLinks else {
                ledger.countLinkRefused()
                socket.close()
                continue
            }
            let fd = socket.fd
            guard context.watch(fd, "an ATT link", handler: { [unowned self] _ in readable(fd) }) else {
                socket.close()
                continue
            }
            let logged = budgets.linkEvent(nowNanoseconds: context.monotonic.nowNanoseconds())
            links[fd] = Link(socket: socket, peer: peer, server: GATTServer(database: database), logged: logged)
            ledger.countLinkOpened()
            if logged { ledger.appendLink(peer: peer, open: true, reason: "") } else { ledger.countLinkEventShed() }
            connectionsChanged()
        }
    }

    private func readable(_ fd: Int32) {
        for _ in 0 ..< 64 {   // a fair share of the loop per wake-up; the descriptor stays readable
            guard let link = links[fd] else { return }
            switch link.socket.receive() {
            case .nothing:
                return
            case .truncated:
                strike(fd, "a PDU over \(ATTSocket.receiveCapacity) bytes")
            case .closed(let error):
                close(fd, reason: error.map { "the link ended: \($0)" } ?? "the peer disconnected")
                return
            case .pdu(let bytes):
                guard ATTRole.of(opcode: bytes.first ?? 0) == .server else {
                    strike(fd, "a response or notification the box did not ask for")
                    continue
                }
                guard var server = links[fd]?.server else { return }
                let outputs = server.receive(bytes)
                links[fd]?.server = server
                for output in outputs { handle(output, fd) }
            }
        }
    }

    private func handle(_ output: GATTServerOutput, _ fd: Int32) {
        switch output {
        case .send(let pdu):
            send(pdu, fd)
        case .written(let index, let value, let completion):
            written(index, value, completion: completion, fd)
        case .violation(let what):
            strike(fd, what)
        case .subscriptionChanged(let index, let notify, _):
            if notify, index == database?.characteristicIndex(of: BoxServices.message, in: BoxServices.messages) { tellWarnings(fd) }
        case .indicationConfirmed, .mtuChanged:
            break
        }
    }

    private func written(_ index: Int, _ value: [UInt8], completion: WriteCompletion?, _ fd: Int32) {
        guard let database, var link = links[fd] else { return }
        let uuid = database.characteristics[index].uuid
        let channel: ChatChannel
        switch uuid {
        case BoxServices.chatRX: channel = .chat
        case BoxServices.uartRX: channel = .uart
        case BoxServices.message: channel = .message
        default:
            if let completion { answerWrite(fd, completion, error: .writeNotPermitted) }
            return
        }
        var assembler = link.assemblers[index]
            ?? MessageAssembler(limit: channel == .message ? BoxServices.maximumMessageBytes : BoxServices.maximumChatBytes)
        let outcome = assembler.add(value)
        link.assemblers[index] = assembler
        links[fd] = link
        switch outcome {
        case .partial, .empty:
            if let completion { answerWrite(fd, completion, error: nil) }
        case .tooLong:
            refuse(fd, completion, .messageTooLong, "a message over the limit")
        case .message(let bytes):
            // Before the rate's token: a message the card cannot take yet costs the peer nothing.
            guard awaiting.hasRoom(fd) else {
                ledger.countRefusedPending()
                if let completion { answerWrite(fd, completion, error: .insufficientResources) }
                return
            }
            var phoneMessage: PhoneMessage?
            var chat = ChatMessage()
            chat.peer = link.peer.value
            chat.peerType = link.peer.kind == .random ? .addressRandom : .addressPublic
            chat.channel = channel
            chat.outgoing = false
            if channel == .message {
                let message: PhoneMessage
                do { message = try PhoneMessage.parse(bytes) } catch {
                    return refuse(fd, completion, .valueNotAllowed, "a message that is not EchoAlert's JSON: \(error)")
                }
                phoneMessage = message
                // The same message again (the phone retried, or another phone relays it): taken once.
                if context.projections.conversations.seenMessageIDs[message.id] != nil || pendingMessageID(message.id) {
                    if let completion { answerWrite(fd, completion, error: nil) }
                    return
                }
                chat.text = message.content
                chat.messageID = message.id
                chat.category = message.category
            } else {
                chat.text = String(decoding: bytes, as: UTF8.self)
            }
            // Same address: its own rate across reconnects; every phone together: the box's.
            let asksForHelp = phoneMessage.map { PhoneBudgets.asksForHelp($0.category) } ?? false
            switch budgets.message(from: link.peer.value, asksForHelp: asksForHelp, nowNanoseconds: context.monotonic.nowNanoseconds()) {
            case .taken: break
            case .phoneOverRate: return refuse(fd, completion, .rateExceeded, "messages faster than the rate")
            case .boxBusy:
                ledger.countRefusedBusy()
                if let completion { answerWrite(fd, completion, error: .insufficientResources) }
                return
            }
            ledger.countReceivedMessage()
            guard let sequence = context.append(.chatMessage(chat), time: nil) else {
                if let completion { answerWrite(fd, completion, error: .insufficientResources) }
                return
            }
            awaiting.add(sequence: sequence, link: fd, completion: completion)
            if asksForHelp {
                // The call book opens (or takes it into) a phone's call for staff from the event.
                ledger.countCallFromPhone()
                context.logger.notice("a phone asked for help (unverified): logged for the call book", metadata: ["category": "\(chat.category)"])
                context.logger.debug("the phone's call", metadata: ["peer": "\(formatAddress(chat.peer))", "message": "\(chat.messageID.prefix(64))"])
            }
        }
    }

    private func pendingMessageID(_ id: String) -> Bool {
        context.pending.elements.contains { if case .chatMessage(let m) = $0.body { m.messageID == id && !m.outgoing } else { false } }
    }

    private func refuse(_ fd: Int32, _ completion: WriteCompletion?, _ code: ATTErrorCode, _ why: String) {
        ledger.countRefusedMessage()
        if let completion { answerWrite(fd, completion, error: code) }
        strike(fd, why)
    }

    private func answerWrite(_ fd: Int32, _ completion: WriteCompletion, error code: ATTErrorCode?) {
        guard var server = links[fd]?.server else { return }
        let pdu = server.completeWrite(completion, error: code)
        links[fd]?.server = server
        if let pdu { send(pdu, fd) }
    }

    private func strike(_ fd: Int32, _ what: String) {
        guard var link = links[fd] else { return }
        ledger.countViolation()
        link.strikes += 1
        links[fd] = link
        context.logger.notice("a GATT peer broke the rules", metadata: ["peer": "\(link.peer)", "what": "\(what)", "strikes": "\(link.strikes)"])
        if link.strikes >= settings.violationLimit {
            ledger.countClosedForMisbehaviour()
            close(fd, reason: "closed by the box: \(what)")
        }
    }

    private func send(_ pdu: [UInt8], _ fd: Int32) { _ = sendReporting(pdu, fd) }

    func sendReporting(_ pdu: [UInt8], _ fd: Int32) -> Bool {
        links[fd]?.socket.send(pdu, logger: context.logger) ?? false
    }

    private func close(_ fd: Int32, reason: String) {
        guard let link = links.removeValue(forKey: fd) else { return }
        context.unwatch(fd, "an ATT link")
        link.socket.close()
        awaiting.forget(link: fd)
        if link.logged { ledger.appendLink(peer: link.peer, open: false, reason: reason) }
        connectionsChanged()
    }

    // MARK: - Sending

    /// How a chat message went: sent, or logged as not delivered and why; the sequence of its
    /// event (nil: the log refused it).
    enum SendOutcome: Equatable { case sent(sequence: UInt64?), notConnected, notDelivered(sequence: UInt64?, why: String) }

    /// Sends `text` to a connected peer: on chat TX if it subscribed, else UART TX, in parts when
    /// longer than one value; logged as an outgoing `ChatMessage` with whether it went out.
    func sendChat(to peer: UInt64, text: String) -> SendOutcome {
        // The box's own link to the peer (`vigil chat connect`) first: there it writes RX.
        if let (sequence, delivered) = chatCentral.send(to: peer, text: text) {
            return delivered ? .sent(sequence: sequence) : .notDelivered(sequence: sequence, why: "the link would not take it")
        }
        guard let database, let entry = links.first(where: { $0.value.peer.value == peer }) else { return .notConnected }
        let (fd, link) = (entry.key, entry.value)
        // The message's time is when it went out, not when its event was made after.
        let sentAt = context.clock.nowMicroseconds()
        let bytes = Array(text.utf8)
        var sentParts: Int?
        var channel = ChatChannel.chat
        for (uuid, service, via) in [(BoxServices.chatTX, BoxServices.chat, ChatChannel.chat), (BoxServices.uartTX, BoxServices.uart, ChatChannel.uart)] {
            guard let index = database.characteristicIndex(of: uuid, in: service) else { continue }
            let parts = MessageFrames.split(bytes, valueLength: link.server.mtu - 3)
            var pdus: [[UInt8]] = []
            for part in parts {
                guard let pdu = try? link.server.notification(index, part) else { break }
                pdus.append(pdu)
            }
            guard pdus.count == parts.count else { continue }
            // Every part or the message is not delivered (a full queue on the link: EAGAIN).
            sentParts = pdus.allSatisfy { sendReporting($0, fd) } ? pdus.count : 0
            channel = via
            break
        }
        var chat = ChatMessage()
        chat.peer = peer
        chat.peerType = link.peer.kind == .random ? .addressRandom : .addressPublic
        chat.channel = channel
        chat.outgoing = true
        chat.text = text
        chat.delivered = (sentParts ?? 0) > 0
        if chat.delivered { ledger.countSentMessage() }
        let sequence = context.append(.chatMessage(chat), time: sentAt)
        switch sentParts {
        case nil: return .notDelivered(sequence: sequence, why: "the device subscribed to neither chat TX nor UART TX")
        case 0?: return .notDelivered(sequence: sequence, why: "the link would not take it")
        default: return .sent(sequence: sequence)
        }
    }
}

extension ATTSocket {
    /// Sends one PDU on the link; false (logged, with the peer) when the kernel would not take
    /// it (a full queue, a link going down). Both roles' links send through this.
    func send(_ pdu: [UInt8], logger: Logger) -> Bool {
        do {
            try send(pdu)
            return true
        } catch {
            logger.notice("ATT send failed", metadata: ["peer": "\(peer.map(\.description) ?? "-")", "error": "\(error)"])
            return false
        }
    }
}
