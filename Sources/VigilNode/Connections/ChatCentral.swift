import VigilCore
import VigilEvents
import VigilGATT
import VigilRadio
import VigilSystem

/// The box as a GATT central for chat, as BTFinder is: `vigil chat connect ADDR` opens one LE link
/// to a phone or another box (choosing another device closes the first), finds the chat service,
/// subscribes to its TX characteristic, and `vigil chat send` writes RX. Notifications on TX are
/// logged as incoming `ChatMessage`s, the link's opening and closing as `LinkChanged` (role
/// central), exactly as on the links peers open to the box (`GATTLinks`).
///
/// Bounded as those are: one link, one message in parts (`MessageAssembler`), the same message
/// rate and violation limit; a link not ready within `setupTimeout` (the kernel's own connect
/// attempt included) is closed. Sends are Write Commands: like notifications, ATT does not
/// acknowledge them, so "delivered" means handed to the link.
final class ChatCentral: NodeComponent {
    unowned let context: any NodeContext
    let adapter: LinkAdapter
    /// Counts and logs the link (shared with the GATT server's links).
    let ledger: LinkLedger
    let settings: ConnectionSettings
    private var link: Link?
    /// The peer's messages logged but not durable yet (one link: its descriptor is the key).
    private var pending: PendingWrites
    static let setupTimer = Scheduler.Timer("chat link setup")
    /// From `connect` to subscribed: the kernel gives up connecting after 20 s (its LE
    /// connection timeout); discovery then has ATT's 30 s for any one request, far more than a
    /// peer in range needs.
    static let setupTimeoutNanoseconds: UInt64 = 45_000_000_000

    struct Link {
        let socket: ATTSocket
        let peer: LEAddress
        var phase: Phase = .connecting
        var bearer = ATTBearer(server: nil)
        var rx: UInt16 = 0
        var tx: UInt16 = 0
        var assembler = MessageAssembler(limit: BoxServices.maximumChatBytes)
        var rate: MessageRate
        var strikes = 0
    }

    enum Phase: Equatable { case connecting, exchangingMTU, discovering, subscribing, ready }

    init(context: any NodeContext, settings: ConnectionSettings, adapter: LinkAdapter, ledger: LinkLedger) {
        self.context = context
        self.settings = settings
        self.adapter = adapter
        self.ledger = ledger
        pending = PendingWrites(limitPerLink: settings.maximumPendingWrites)
    }

    func applied(_ event: Event) { _ = pending.settle(event.sequence) }
    func refused(_ event: Event) { _ = pending.settle(event.sequence) }

    func start() throws(NodeError) {
        context.scheduler.register(Self.setupTimer) { [unowned self] in
            if let link, link.phase != .ready { close(reason: "no chat link within \(Self.setupTimeoutNanoseconds / 1_000_000_000) s") }
        }
    }

    func stop() { close(reason: "the box stopped") }

    /// The peer of the link, and whether it is ready for `send`.
    var peer: (address: LEAddress, ready: Bool)? { link.map { ($0.peer, $0.phase == .ready) } }

    enum ConnectOutcome: Equatable { case connecting, alreadyLinked, failed(String) }

    /// Opens a link to `peer`, closing any other first (one chat link at a time).
    func connect(to peer: LEAddress) -> ConnectOutcome {
        if let link {
            if link.peer == peer { return .alreadyLinked }
            close(reason: "another device was chosen")
        }
        guard settings.enabled else { return .failed("connections are off (connections.enabled)") }
        guard adapter.canLink else {
            return .failed("GATT connections need a BlueZ adapter on the raw channel")
        }
        let socket: ATTSocket
        do {
            guard let adapter = try self.adapter.find() else {
                return .failed("no adapter \(self.adapter.radio)")
            }
            socket = try ATTSocket.connect(from: LEAddress(value: adapter.address, kind: .public), to: peer)
        } catch {
            return .failed("\(error)")
        }
        let fd = socket.fd
        guard context.watch(fd, "a chat link", events: Epoll.writable | Epoll.readable, handler: { [unowned self] events in ready(fd, events) }) else {
            socket.close()
            return .failed("cannot watch the link")
        }
        link = Link(socket: socket, peer: peer,
                    rate: MessageRate(burst: settings.messageBurst, intervalMicroseconds: settings.messageIntervalMicroseconds,
                                      nowNanoseconds: context.monotonic.nowNanoseconds()))
        context.scheduler.schedule(Self.setupTimer, afterNanoseconds: Self.setupTimeoutNanoseconds)
        context.logger.info("connecting for chat", metadata: ["peer": "\(peer)"])
        return .connecting
    }

    /// Closes the link to `peer`; false when there is none.
    func disconnect(_ peer: UInt64) -> Bool {
        guard link?.peer.value == peer else { return false }
        close(reason: "closed by staff")
        return true
    }

    // MARK: - The link

    private func ready(_ fd: Int32, _ events: UInt32) {
        guard var current = link, current.socket.fd == fd else { return }
        if current.phase == .connecting {
            if let error = current.socket.connectionError() {
                return close(reason: "could not connect: \(error)")
            }
            guard events & Epoll.writable != 0 else { return }
            // Up: from now on only input matters.
            context.unwatch(fd, "a chat link")
            guard context.watch(fd, "a chat link", handler: { [unowned self] _ in ready(fd, Epoll.readable) }) else {
                return close(reason: "cannot watch the link")
            }
            current.phase = .exchangingMTU
            link = current
            ledger.appendLink(peer: current.peer, open: true, reason: "", role: .central)
            start(.exchangeMTU(UInt16(ATTPDU.maximumMTU)))
            return
        }
        for _ in 0 ..< 64 {   // a fair share of the loop per wake-up
            guard let current = link, current.socket.fd == fd else { return }
            switch current.socket.receive() {
            case .nothing:
                return
            case .truncated:
                strike("a PDU over \(ATTSocket.receiveCapacity) bytes")
            case .closed(let error):
                return close(reason: error.map { "the link ended: \($0)" } ?? "the peer disconnected")
            case .pdu(let bytes):
                var bearer = current.bearer
                let outputs = bearer.receive(bytes)
                link?.bearer = bearer
                for output in outputs { handle(output) }
            }
        }
    }

    private func start(_ procedure: GATTClient.Procedure) {
        guard var bearer = link?.bearer, let started = bearer.start(procedure) else {
            return close(reason: "too many requests queued on the link")
        }
        link?.bearer = bearer
        for output in started.outputs { handle(.client(output)) }
    }

    private func handle(_ output: ATTBearer.Output) {
        switch output {
        case .server(.send(let pdu)), .client(.send(let pdu)):
            send(pdu)
        case .server(.violation(let what)), .client(.violation(let what)):
            strike(what)
        case .client(.completed(_, let result)):
            advance(result)
        case .client(.value(let handle, let value, _)):
            guard let link, link.phase == .ready, handle == link.tx else { return }
            received(value)
        case .server, .client(.mtuChanged):
            break
        }
    }

    /// Setup, one step per completed procedure: MTU, the chat service, the TX subscription.
    private func advance(_ result: GATTClient.Result) {
        guard let current = link else { return }
        switch (current.phase, result) {
        case (.exchangingMTU, _):
            // A peer that refuses the exchange keeps the default MTU; chat works with it.
            link?.phase = .discovering
            start(.discover(service: BoxServices.chat))
        case (.discovering, .services(let services)):
            let characteristics = services.flatMap(\.characteristics)
            guard let tx = characteristics.first(where: { $0.uuid == BoxServices.chatTX }), let cccd = tx.configurationHandle,
                  let rx = characteristics.first(where: { $0.uuid == BoxServices.chatRX }) else {
                return close(reason: "the device has no chat service")
            }
            link?.tx = tx.valueHandle
            link?.rx = rx.valueHandle
            link?.phase = .subscribing
            start(.configure(handle: cccd, bits: 1))
        case (.subscribing, .done):
            link?.phase = .ready
            context.scheduler.cancel(Self.setupTimer)
            context.logger.info("chat link ready", metadata: ["peer": "\(current.peer)"])
        case (.discovering, _), (.subscribing, _):
            close(reason: "chat setup failed: \(result)")
        default:
            break
        }
    }

    private func received(_ value: [UInt8]) {
        guard var current = link else { return }
        let outcome = current.assembler.add(value)
        link?.assembler = current.assembler
        switch outcome {
        case .partial, .empty:
            return
        case .tooLong:
            ledger.countRefusedMessage()
            return strike("a message over the limit")
        case .message(let bytes):
            // A notification cannot be refused: past the limit it is dropped and counted.
            guard pending.hasRoom(current.socket.fd) else { return ledger.countRefusedPending() }
            guard link?.rate.take(nowNanoseconds: context.monotonic.nowNanoseconds()) == true else {
                ledger.countRefusedMessage()
                return strike("messages faster than the rate")
            }
            var chat = ChatMessage()
            chat.peer = current.peer.value
            chat.peerType = current.peer.kind == .random ? .addressRandom : .addressPublic
            chat.channel = .chat
            chat.text = String(decoding: bytes, as: UTF8.self)
            ledger.countReceivedMessage()
            if let sequence = context.append(.chatMessage(chat), time: nil) {
                pending.add(sequence: sequence, link: current.socket.fd, completion: nil)
            }
        }
    }

    /// Writes `text` to the peer's chat RX, in parts when longer than one value; nil when the
    /// link is not to `peer` or not ready. Returns the outgoing event's sequence (nil: the log
    /// refused it) and whether every part went out.
    func send(to peer: UInt64, text: String) -> (sequence: UInt64?, delivered: Bool)? {
        guard let current = link, current.peer.value == peer, current.phase == .ready else { return nil }
        // The message's time is when it went out, not when its event was made after.
        let sentAt = context.clock.nowMicroseconds()
        var delivered = true
        for part in MessageFrames.split(Array(text.utf8), valueLength: current.bearer.mtu - 3) {
            guard let pdu = current.bearer.client.writeCommand(handle: current.rx, value: part), sendReporting(pdu) else {
                delivered = false
                break
            }
        }
        var chat = ChatMessage()
        chat.peer = peer
        chat.peerType = current.peer.kind == .random ? .addressRandom : .addressPublic
        chat.channel = .chat
        chat.outgoing = true
        chat.text = text
        chat.delivered = delivered
        if delivered { ledger.countSentMessage() }
        return (context.append(.chatMessage(chat), time: sentAt), delivered)
    }

    private func send(_ pdu: [UInt8]) { _ = sendReporting(pdu) }

    private func sendReporting(_ pdu: [UInt8]) -> Bool {
        link?.socket.send(pdu, logger: context.logger) ?? false
    }

    private func strike(_ what: String) {
        guard let current = link else { return }
        link?.strikes += 1
        ledger.countViolation()
        context.logger.notice("a chat peer broke the rules", metadata: ["peer": "\(current.peer)", "what": "\(what)", "strikes": "\(current.strikes + 1)"])
        if current.strikes + 1 >= settings.violationLimit {
            ledger.countClosedForMisbehaviour()
            close(reason: "closed by the box: \(what)")
        }
    }

    /// Ends the link, logged with its reason (also for one that never came up, so the chat shows
    /// why).
    private func close(reason: String) {
        guard let current = link else { return }
        link = nil
        context.scheduler.cancel(Self.setupTimer)
        context.unwatch(current.socket.fd, "a chat link")
        pending.forget(link: current.socket.fd)
        current.socket.close()
        context.logger.info("chat link closed", metadata: ["peer": "\(current.peer)", "reason": "\(reason)"])
        ledger.appendLink(peer: current.peer, open: false, reason: reason, role: .central)
    }
}
