import VigilEvents
import VigilSystem

/// Settings of the BlueZ radio (config section `radio:`).
public struct HCIRadioSettings: Sendable, Equatable {
    /// "hci0", or the adapter's address "AA:BB:CC:DD:EE:FF" (stable across re-plugging).
    public var adapter = "hci0"
    public var channel: HCIChannel = .raw
    /// Active scanning asks advertisers for their scan response (names often live there); it
    /// also transmits, so passive is the default.
    public var activeScan = false
    /// Scan interval and window: window = interval means the receiver listens all the time.
    public var scanIntervalMicroseconds: UInt64 = 100_000
    public var scanWindowMicroseconds: UInt64 = 100_000
    /// Use the extended scanning and advertising commands when the controller has them. Only on
    /// the user channel: on the raw channel the kernel may send legacy commands of its own, and a
    /// controller refuses a mix of the two.
    public var extended = true
    /// How often each advertisement goes out.
    public var advertisingIntervalMicroseconds: UInt64 = 100_000
    /// With several payloads (presence, alerts), each is on the air for this long in turn.
    public var rotationSlotMicroseconds: UInt64 = 500_000
    /// A command not answered in this time means the controller has failed.
    public var commandTimeoutMicroseconds: UInt64 = 2_000_000
    /// Recovery retries: the delay doubles from min to max while the adapter stays unusable.
    public var backoffMinMicroseconds: UInt64 = 250_000
    public var backoffMaxMicroseconds: UInt64 = 30_000_000
    /// Power the adapter up when it is down (raw channel), or down before taking it (user
    /// channel). Off leaves the adapter's power to the operator.
    public var managePower = true
    /// Packets handled per wake-up; more wait for the next turn of the loop, so a flood of
    /// reports cannot starve the button or the log's acknowledgements.
    public var readBudget = 256
    /// btsnoop capture of every HCI packet; nil = off.
    public var snoopPath: String?
    public var snoopMaxFileBytes = 8 << 20
    public var snoopKeepFiles = 3

    public init() {}
}

/// What the node wants on the air: the payloads (each ≤ 31 bytes of AD structures) shown in
/// turn, sent from `address` (a random address, rotated with the presence identity).
public struct AdvertisingPlan: Sendable, Equatable {
    public var address: UInt64
    public var payloads: [[UInt8]]

    public init(address: UInt64, payloads: [[UInt8]]) {
        self.address = address
        self.payloads = payloads
    }

    public static let off = AdvertisingPlan(address: 0, payloads: [])
    public var isOff: Bool { payloads.isEmpty || address == 0 }
}

/// What the BlueZ radio counts, for `vigil status`.
public struct HCIRadioCounters: Sendable, Codable, Equatable {
    public var packetsIn: UInt64 = 0
    public var packetsOut: UInt64 = 0
    public var reports: UInt64 = 0
    public var commandsFailed: UInt64 = 0
    public var commandTimeouts: UInt64 = 0
    public var recoveries: UInt64 = 0
    public var controllerResets: UInt64 = 0
    public var hardwareErrors: UInt64 = 0
    /// Packets left unread past the budget are not lost: they wait in the socket. These are
    /// packets the parser could not use.
    public var malformedPackets: UInt64 = 0
    public var snoopErrors: UInt64 = 0
    public init() {}
}

/// The radio on a real controller through BlueZ's HCI socket.
///
/// The event loop watches one descriptor, an epoll of this adapter's own: the HCI socket, a
/// socket that hears adapters come and go, and a timerfd for command deadlines, recovery
/// back-off and advertising rotation. Nothing sleeps.
///
/// Life cycle: find the adapter → open its socket → set it up (event masks, features) → scan →
/// advertise the node's plan. Any failure — a command refused or unanswered, a hardware error, a
/// reset by someone else, the adapter powered down or gone — reports the radio off, closes what
/// is open and retries with back-off; an adapter appearing or powering up retries at once.
public final class HCIRadio: RadioAdapter {
    public let name: String
    public var descriptor: Int32 { epoll.fd }
    public private(set) var counters = HCIRadioCounters()
    public private(set) var parser = HCIEventParser()
    /// The controller's address, once read.
    public private(set) var controllerAddress: UInt64?
    public private(set) var usingExtendedCommands = false

    private let settings: HCIRadioSettings
    private let clock: any WallClock
    private let epoll: Epoll
    private let timer: TimerFD
    private var notifications: HCISocketHandle?
    private var socket: HCISocketHandle?
    private var adapter: HCIAdapterInfo?
    private var queue: HCICommandQueue
    private var phase = Phase.stopped
    /// The state last reported to the node (nil: nothing yet), so a retry loop logs once.
    private var reportedState: RadioState?
    private var backoff: UInt64
    private var retryAt: UInt64?
    private var snoop: BTSnoopWriter?

    // Advertising: what the node wants, and what the controller has.
    private var plan = AdvertisingPlan.off
    private var onAir = OnAir()
    private var rotation = 0
    private var rotateAt: UInt64?

    /// One HCI packet at most: 1 type byte, 2 header bytes, 255 parameter bytes for an event;
    /// ACL data (not used, but delivered on the user channel) can be larger.
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4_096, alignment: 8)
    private var pendingOutputs: [RadioOutput] = []

    private enum Phase: Equatable {
        case stopped
        /// Waiting for the adapter (absent, down, or backing off after a failure).
        case waiting
        /// Socket open, setup commands queued or in flight.
        case settingUp
        /// Scanning; advertising follows the plan.
        case running
    }

    private struct OnAir: Equatable {
        var address: UInt64 = 0
        var payload: [UInt8]?
        var enabled = false
        var parametersSet = false
    }

    /// Steps, carried as command tags so a completion says what it finished.
    private enum Step: UInt32 {
        case reset = 1, eventMask, leEventMask, readAddress, leFeatures
        case scanDisable, scanParameters, scanEnable
        case advertiseDisable, advertiseAddress, advertiseParameters, advertiseData, advertiseEnable
    }

    private enum Token: UInt64 { case socket = 1, notifications, timer }

    public init(settings: HCIRadioSettings, clock: any WallClock) throws {
        self.settings = settings
        self.clock = clock
        self.name = settings.adapter
        epoll = try Epoll()
        timer = try TimerFD()
        queue = HCICommandQueue(timeoutMicroseconds: settings.commandTimeoutMicroseconds)
        backoff = settings.backoffMinMicroseconds
        try epoll.add(timer.fd, token: Token.timer.rawValue)
    }

    deinit {
        stop()
        buffer.deallocate()
    }

    // MARK: RadioAdapter

    /// Starts looking for the adapter. Throws only when this kernel has no Bluetooth at all or
    /// the capture file cannot be created; an absent or failing adapter is retried, not an error.
    public func start() throws {
        if let path = settings.snoopPath {
            snoop = try BTSnoopWriter(path: path, maxFileBytes: settings.snoopMaxFileBytes, keepFiles: settings.snoopKeepFiles)
        }
        do {
            let n = try HCI.openNotifications()
            try epoll.add(n.fd, token: Token.notifications.rawValue)
            notifications = n
        } catch let error as HCIError where error.noBluetooth {
            throw error
        } catch {
            // Without notifications, recovery still happens, at the back-off's pace.
            pendingOutputs.append(.captureFailed(reason: "no adapter notifications: \(error)"))
        }
        phase = .waiting
        connect()
        pump()
        try rearm()
    }

    /// The BlueZ radio reports its own state (on once scanning runs), unlike the simulation.
    public var reportsState: Bool { true }

    public func stop() {
        if socket != nil, phase == .running || phase == .settingUp, let fd = socket?.fd, let adapter {
            // Leave the air quiet: nothing advertises for a box that is off. Best effort, no wait.
            for command in [advertiseDisableCommand(), scanDisableCommand()] {
                if (try? HCI.write(fd, adapter: adapter.name, packet: command.packet)) != nil {
                    record(command.packet, sent: true)
                }
            }
        }
        closeSocket()
        if let n = notifications {
            try? epoll.remove(n.fd)
            n.close()
            notifications = nil
        }
        try? snoop?.close()
        snoop = nil
        phase = .stopped
        try? timer.disarm()
    }

    public func readReady(into outputs: inout [RadioOutput]) throws {
        let ready = try epoll.wait(timeoutMilliseconds: 0)
        for event in ready {
            switch Token(rawValue: event.token) {
            case .socket: readSocket(events: event.events)
            case .notifications: readNotifications()
            case .timer: timer.drain(); handleDeadlines()
            case nil: break
            }
        }
        pump()
        do { try snoop?.flush() } catch { snoopFailed(error) }
        try rearm()
        outputs.append(contentsOf: pendingOutputs)
        pendingOutputs.removeAll(keepingCapacity: true)
    }

    public func advertise(_ newPlan: AdvertisingPlan) {
        guard newPlan != plan else { return }
        let addressChanged = newPlan.address != plan.address
        plan = newPlan
        if addressChanged || rotation >= plan.payloads.count { rotation = 0 }
        guard phase == .running else { return }
        reconcileAdvertising()
        pump()
        try? rearm()
    }

    // MARK: Opening and recovery

    private func connect() {
        retryAt = nil
        let found: HCIAdapterInfo?
        do {
            found = try HCI.find(settings.adapter)
        } catch {
            fail("cannot list adapters: \(error)", state: .unknown)
            return
        }
        guard var info = found else {
            fail("adapter \(settings.adapter) not found", state: .off)
            return
        }
        do {
            switch settings.channel {
            case .raw where !info.isUp:
                guard settings.managePower else {
                    fail("adapter \(info.name) is powered down", state: .off)
                    return
                }
                try HCI.setPower(info, up: true)
                info = HCIAdapterInfo(id: info.id, name: info.name, address: info.address, isUp: true)
            case .user where info.isUp:
                guard settings.managePower else {
                    fail("adapter \(info.name) is up; the user channel needs it down", state: .off)
                    return
                }
                try HCI.setPower(info, up: false)
            default:
                break
            }
            let s = try HCI.open(info, channel: settings.channel)
            try epoll.add(s.fd, token: Token.socket.rawValue)
            socket = s
            adapter = info
        } catch {
            fail("\(error)", state: .off)
            return
        }
        phase = .settingUp
        onAir = OnAir()
        usingExtendedCommands = false
        enqueueSetup()
    }

    private func enqueueSetup() {
        if settings.channel == .user { queue.enqueue(.reset, tag: Step.reset.rawValue) }
        // A reset (ours, or someone's `hciconfig reset`) leaves LE events masked: set them always.
        queue.enqueue(.setEventMask(), tag: Step.eventMask.rawValue)
        queue.enqueue(.leSetEventMask(), tag: Step.leEventMask.rawValue)
        queue.enqueue(.readBDAddress, tag: Step.readAddress.rawValue)
        queue.enqueue(.leReadLocalFeatures, tag: Step.leFeatures.rawValue)
        // Scanning commands follow once the features say which set to use.
    }

    /// Scanning, after the features said which command set to use. Advertising and scanning are
    /// off first (a controller refuses a new random address while either runs), the random
    /// address is set, then scanning starts; advertising follows once it runs.
    private func enqueueScanning() {
        queue.enqueue(advertiseDisableCommand(), tag: Step.advertiseDisable.rawValue)
        queue.enqueue(scanDisableCommand(), tag: Step.scanDisable.rawValue)
        if !plan.isOff, !usingExtendedCommands {
            queue.enqueue(.leSetRandomAddress(plan.address), tag: Step.advertiseAddress.rawValue)
            onAir.address = plan.address
        }
        queue.enqueue(scanParametersCommand(), tag: Step.scanParameters.rawValue)
        queue.enqueue(scanEnableCommand(), tag: Step.scanEnable.rawValue)
    }

    private func scanParametersCommand() -> HCICommand {
        let interval = Self.units(settings.scanIntervalMicroseconds)
        let window = min(Self.units(settings.scanWindowMicroseconds), interval)
        let random = settings.activeScan && onAir.address != 0 && !usingExtendedCommands
        return usingExtendedCommands
            ? .leSetExtendedScanParameters(active: settings.activeScan, intervalUnits: interval, windowUnits: window, randomAddress: random)
            : .leSetScanParameters(active: settings.activeScan, intervalUnits: interval, windowUnits: window, randomAddress: random)
    }

    private func scanEnableCommand() -> HCICommand {
        usingExtendedCommands ? .leSetExtendedScanEnable(true) : .leSetScanEnable(true)
    }

    /// 0.625 ms units, within the range the specification allows (2.5 ms ... 10.24 s).
    static func units(_ microseconds: UInt64) -> UInt16 {
        UInt16(min(max(microseconds * 10 / 6_250, 4), 0x4000))
    }

    /// Something went wrong: report the radio `state` (once), close the socket, retry later.
    private func fail(_ reason: String, state: RadioState) {
        let now = monotonicNanoseconds() / 1_000
        closeSocket()
        if reportedState != state || phase == .running || phase == .settingUp {
            pendingOutputs.append(.stateChanged(state, reason: reason))
            reportedState = state
        }
        if phase != .stopped { phase = .waiting }
        retryAt = now + backoff
        backoff = min(backoff * 2, settings.backoffMaxMicroseconds)
    }

    private func closeSocket() {
        // Whatever was queued or in flight ends here; a retry sets up again from the start.
        _ = queue.failAll()
        if let s = socket {
            try? epoll.remove(s.fd)
            s.close()
        }
        socket = nil
        onAir = OnAir()
        rotateAt = nil
    }

    // MARK: Reading

    private func readSocket(events: UInt32) {
        guard let s = socket, let adapter else { return }
        var handled = 0
        while handled < settings.readBudget, socket != nil {
            let n: Int?
            do {
                n = try HCI.read(s.fd, adapter: adapter.name, into: buffer)
            } catch {
                counters.recoveries += 1
                fail(error.adapterVanished ? "adapter \(adapter.name) vanished (\(error.errno))" : "\(error)",
                     state: error.adapterVanished ? .off : .unknown)
                return
            }
            guard let count = n else { break }
            if count == 0 {
                counters.recoveries += 1
                fail("adapter \(adapter.name) closed its socket", state: .off)
                return
            }
            handled += 1
            let packet = Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            record(packet, sent: false)
            process(packet)
        }
        if handled == 0, events & Epoll.hangup != 0 {
            counters.recoveries += 1
            fail("adapter \(adapter.name) hung up", state: .off)
        }
    }

    /// Handles one packet from the controller. Also the entry point of `vigil radio replay`.
    func process(_ packet: [UInt8]) {
        counters.packetsIn += 1
        let time = clock.nowMicroseconds()
        guard let event = parser.parse(packet, timeMicroseconds: time) else {
            counters.malformedPackets += 1
            return
        }
        switch event {
        case .advertisingReports(let reports):
            counters.reports += UInt64(reports.count)
            for r in reports { pendingOutputs.append(.report(r)) }
        case .commandComplete(let opcode, let credits, let parameters):
            if let done = queue.complete(opcode: opcode, credits: credits, parameters: parameters),
               case .complete(let pending, let p) = done {
                finished(pending, status: p.first ?? 0xFF, parameters: p)
            } else if opcode == HCICommand.Opcode.reset, phase == .running || phase == .settingUp {
                // Someone else reset the controller (`hciconfig reset`, the kernel after a
                // hardware error): scanning and advertising are gone. Set up again on this socket.
                counters.controllerResets += 1
                pendingOutputs.append(.stateChanged(.off, reason: "controller \(name) was reset"))
                reportedState = .off
                _ = queue.failAll()
                onAir = OnAir()
                rotateAt = nil
                phase = .settingUp
                enqueueSetup()
            }
        case .commandStatus(let opcode, let credits, let status):
            if let done = queue.status(opcode: opcode, credits: credits, status: status), case .status(let pending, let s) = done {
                finished(pending, status: s, parameters: [s])
            }
        case .hardwareError(let code):
            counters.hardwareErrors += 1
            counters.recoveries += 1
            fail("controller \(name) reported hardware error 0x\(String(code, radix: 16))", state: .unknown)
        case .other:
            break
        }
    }

    /// Stack notifications: evt_stack_internal { u16 type = EVT_SI_DEVICE (1); u16 event; u16 dev }.
    private func readNotifications() {
        guard let n = notifications else { return }
        while true {
            let count: Int?
            do {
                count = try HCI.read(n.fd, adapter: "-", into: buffer)
            } catch {
                // Losing the notifications only slows recovery down to the back-off; say so once.
                try? epoll.remove(n.fd)
                notifications = nil
                return
            }
            guard let c = count, c >= 9 else { return }
            guard buffer[0] == 0x04, buffer[1] == 0xFD, buffer[3] == 0x01, buffer[4] == 0x00 else { continue }
            let event = UInt16(buffer[5]) | UInt16(buffer[6]) << 8
            let device = UInt16(buffer[7]) | UInt16(buffer[8]) << 8
            adapterNotification(event: event, device: device)
        }
    }

    /// HCI_DEV_REG 1, UNREG 2, UP 3, DOWN 4.
    private func adapterNotification(event: UInt16, device: UInt16) {
        let ours = adapter?.id == device
        switch event {
        case 2 where ours:
            // The stack says DOWN before UNREG: the radio may already be off, for a reason that
            // turned out to be less than the truth. Say what happened.
            let reason = "adapter \(adapter?.name ?? name) vanished"
            if phase == .waiting {
                pendingOutputs.append(.stateChanged(.off, reason: reason))
                reportedState = .off
            } else {
                counters.recoveries += 1
                fail(reason, state: .off)
            }
            adapter = nil
        case 4 where ours && settings.channel == .raw:
            counters.recoveries += 1
            fail("adapter \(adapter?.name ?? name) was powered down", state: .off)
        case 1, 3:
            // An adapter appeared or powered up: if it may be ours, try now, not at the back-off.
            if phase == .waiting {
                backoff = settings.backoffMinMicroseconds
                retryAt = monotonicNanoseconds() / 1_000
            }
        default:
            break
        }
    }

    // MARK: Commands

    private func finished(_ pending: HCICommandQueue.Pending, status: UInt8, parameters: [UInt8]) {
        guard let step = Step(rawValue: pending.tag) else { return }
        if status != 0 {
            switch step {
            case .scanDisable, .advertiseDisable:
                return // "already disabled" is fine
            default:
                counters.commandsFailed += 1
                counters.recoveries += 1
                fail("\(pending.command) failed with status 0x\(String(status, radix: 16)) on \(name)", state: .unknown)
                return
            }
        }
        switch step {
        case .readAddress where parameters.count >= 7:
            controllerAddress = parameters[1...6].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        case .leFeatures:
            // LE feature bit 12: LE Extended Advertising.
            let supported = parameters.count >= 3 && parameters[2] & 0x10 != 0
            usingExtendedCommands = supported && settings.extended && settings.channel == .user
            enqueueScanning()
        case .scanEnable:
            phase = .running
            backoff = settings.backoffMinMicroseconds
            if reportedState != .on {
                let how = usingExtendedCommands ? "extended" : "legacy"
                pendingOutputs.append(.stateChanged(.on, reason: "scanning on \(name) (\(settings.channel.rawValue) channel, \(how) commands)"))
                reportedState = .on
            }
            reconcileAdvertising()
        case .advertiseEnable:
            if let payload = onAir.payload { pendingOutputs.append(.onAir(payload)) }
        default:
            break
        }
    }

    private func scanDisableCommand() -> HCICommand {
        usingExtendedCommands ? .leSetExtendedScanEnable(false) : .leSetScanEnable(false)
    }

    private func advertiseDisableCommand() -> HCICommand {
        usingExtendedCommands ? .leSetExtendedAdvertisingEnable(false) : .leSetAdvertiseEnable(false)
    }

    /// Queues the commands that take the controller from what it advertises to the plan. Called
    /// when idle; idempotent (nothing is sent when the air already matches).
    ///
    /// A new payload goes out by switching advertising off and on around the data: the new frame
    /// is on the air at once, and controllers that report only on enable (BlueZ's emulator) still
    /// deliver every frame.
    private func reconcileAdvertising() {
        guard phase == .running, queue.isIdle else { return }
        if plan.isOff {
            if onAir.enabled { queue.enqueue(advertiseDisableCommand(), tag: Step.advertiseDisable.rawValue) }
            onAir.enabled = false
            onAir.payload = nil
            rotateAt = nil
            return
        }
        let payload = plan.payloads[rotation % plan.payloads.count]
        if onAir.address != plan.address {
            if onAir.enabled { queue.enqueue(advertiseDisableCommand(), tag: Step.advertiseDisable.rawValue) }
            onAir.enabled = false
            onAir.payload = nil
            if usingExtendedCommands {
                if !onAir.parametersSet { enqueueAdvertisingParameters() }
                queue.enqueue(.leSetAdvertisingSetRandomAddress(plan.address), tag: Step.advertiseAddress.rawValue)
            } else {
                // Legacy: the controller-wide random address, which scanning must stop for.
                queue.enqueue(scanDisableCommand(), tag: Step.scanDisable.rawValue)
                queue.enqueue(.leSetRandomAddress(plan.address), tag: Step.advertiseAddress.rawValue)
                queue.enqueue(scanParametersCommand(), tag: Step.scanParameters.rawValue)
                queue.enqueue(scanEnableCommand(), tag: Step.scanEnable.rawValue)
            }
            onAir.address = plan.address
        }
        if !onAir.parametersSet { enqueueAdvertisingParameters() }
        if onAir.payload != payload {
            if onAir.enabled { queue.enqueue(advertiseDisableCommand(), tag: Step.advertiseDisable.rawValue) }
            onAir.enabled = false
            queue.enqueue(usingExtendedCommands ? .leSetExtendedAdvertisingData(payload) : .leSetAdvertisingData(payload),
                          tag: Step.advertiseData.rawValue)
            onAir.payload = payload
        }
        if !onAir.enabled {
            queue.enqueue(usingExtendedCommands ? .leSetExtendedAdvertisingEnable(true) : .leSetAdvertiseEnable(true),
                          tag: Step.advertiseEnable.rawValue)
            onAir.enabled = true
        }
        let now = monotonicNanoseconds() / 1_000
        rotateAt = plan.payloads.count > 1 ? (rotateAt ?? now + settings.rotationSlotMicroseconds) : nil
    }

    private func enqueueAdvertisingParameters() {
        let interval = max(Self.units(settings.advertisingIntervalMicroseconds), 160) // ≥ 100 ms when non-connectable
        queue.enqueue(usingExtendedCommands ? .leSetExtendedAdvertisingParameters(intervalUnits: UInt32(interval))
                                            : .leSetAdvertisingParameters(intervalUnits: interval),
                      tag: Step.advertiseParameters.rawValue)
        onAir.parametersSet = true
    }

    /// Writes queued commands while credits allow.
    private func pump() {
        guard let s = socket, let adapter else { return }
        if phase == .running { reconcileAdvertising() }
        let now = monotonicNanoseconds() / 1_000
        while let pending = queue.next(now: now) {
            do {
                try HCI.write(s.fd, adapter: adapter.name, packet: pending.command.packet)
                counters.packetsOut += 1
                record(pending.command.packet, sent: true)
            } catch {
                counters.recoveries += 1
                fail(error.adapterDown ? "adapter \(adapter.name) is down" : "\(error)", state: error.adapterVanished || error.adapterDown ? .off : .unknown)
                return
            }
        }
    }

    private func handleDeadlines() {
        let now = monotonicNanoseconds() / 1_000
        if let expired = queue.expired(now: now) {
            counters.commandTimeouts += 1
            counters.recoveries += 1
            fail("controller \(name) did not answer \(expired.command) within \(settings.commandTimeoutMicroseconds / 1_000) ms", state: .unknown)
        }
        if let at = retryAt, at <= now, phase == .waiting {
            connect()
        }
        if let at = rotateAt, at <= now, phase == .running, plan.payloads.count > 1 {
            rotation = (rotation + 1) % plan.payloads.count
            rotateAt = now + settings.rotationSlotMicroseconds
            reconcileAdvertising()
        }
        if phase == .running { reconcileAdvertising() }
    }

    private func rearm() throws {
        let deadlines = [queue.nextDeadline, retryAt, rotateAt].compactMap { $0 }
        guard let next = deadlines.min() else {
            try timer.disarm()
            return
        }
        let now = monotonicNanoseconds() / 1_000
        try timer.arm(afterNanoseconds: next > now ? (next - now) * 1_000 : 1)
    }

    // MARK: Capture

    private func record(_ packet: [UInt8], sent: Bool) {
        guard let writer = snoop else { return }
        do {
            try writer.write(packet: packet, direction: sent ? .sent : .received, timeMicroseconds: clock.nowMicroseconds())
        } catch {
            snoopFailed(error)
        }
    }

    /// A capture that cannot be written (disk full) is dropped; the radio goes on.
    private func snoopFailed(_ error: any Error) {
        counters.snoopErrors += 1
        try? snoop?.close()
        snoop = nil
        pendingOutputs.append(.captureFailed(reason: "\(error)"))
    }
}
