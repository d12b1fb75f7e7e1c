import VigilCore
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
    /// Use the extended scanning and advertising commands when the controller has them (LE
    /// feature bit 12), as the kernel does: once a controller has seen an extended advertising
    /// command it may refuse legacy ones, so on the raw channel Vigil follows the kernel's choice.
    public var extended = true
    /// How often each advertisement goes out.
    public var advertisingIntervalMicroseconds: UInt64 = 100_000
    /// With several payloads (presence, alerts), each is on the air for this long in turn.
    public var rotationSlotMicroseconds: UInt64 = 500_000
    /// A command not answered in this time means the controller has failed.
    public var commandTimeoutMicroseconds: UInt64 = 2_000_000
    /// Recovery retries: the delay doubles from min to max while the adapter stays unusable, and
    /// goes back to min only once the radio has run this long without failing (a controller that
    /// fails right after setup must not be restarted four times a second).
    public var backoffMinMicroseconds: UInt64 = 250_000
    public var backoffMaxMicroseconds: UInt64 = 30_000_000
    public var stableAfterMicroseconds: UInt64 = 60_000_000
    /// Ask the kernel (management channel, asynchronous) to power the adapter up when it is down
    /// (raw channel), or down before taking it (user channel). Off leaves power to the operator.
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
    /// Payloads (by index) sent connectable (ADV_IND) from the controller's public address, for
    /// phones and boxes to open a GATT link to; the others are non-connectable from `address`.
    public var connectable: Set<Int>
    /// The answer to a scan request for a connectable payload (the box's full name, which the
    /// advert has no room for); empty: none.
    public var scanResponse: [UInt8]

    public init(address: UInt64, payloads: [[UInt8]], connectable: Set<Int> = [], scanResponse: [UInt8] = []) {
        self.address = address
        self.payloads = payloads
        self.connectable = connectable
        self.scanResponse = scanResponse
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
    /// Centrals that connected to the box's connectable advertising (the controller stops
    /// advertising then; the radio starts it again).
    public var incomingLinks: UInt64 = 0
    /// Connectable advertising refused (a controller that cannot advertise connectable and hold a
    /// link at once): those payloads go out non-connectable until the link ends or a minute passes.
    public var connectableRefusals: UInt64 = 0
    /// Advertising commands the controller refused (scanning goes on; advertising retries).
    public var advertisingRefusals: UInt64 = 0
    /// Payloads of a plan longer than the controller advertises (signed frames, without extended
    /// advertising or a controller that carries under 251 bytes): left out, counted once per plan.
    public var longPayloadsSkipped: UInt64 = 0
    /// Scanning/advertising commands someone else sent on the raw channel (the kernel, bluetoothd).
    public var foreignChanges: UInt64 = 0
    public init() {}
}

/// The radio on a real controller through BlueZ's HCI socket.
///
/// The event loop watches one descriptor, an epoll of this adapter's own: the HCI socket, a
/// socket that hears adapters come and go, and a timer for command deadlines, recovery
/// back-off and advertising rotation. Nothing sleeps.
///
/// Every wait and deadline is measured on the injected monotonic clock (a `ManualClock` in
/// tests, which then drive the radio's time without sleeping); the wall clock only stamps what
/// the radio hears and captures.
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
    /// The longest advertising data the controller sends (31 without extended advertising): longer
    /// payloads of a plan are skipped, and counted (`counters.longPayloadsSkipped`).
    public private(set) var maximumAdvertisingDataLength = AdvertisingPayload.legacyMaximumLength
    /// The controller did not answer LE Read Maximum Advertising Data Length: the length is a guess.
    private var maximumAdvertisingDataLengthUnconfirmed = false
    private var longAdvertRefusals = 0
    static let longAdvertRefusalsToGiveUp = 3

    private let settings: HCIRadioSettings
    private let clock: any WallClock
    private let monotonic: any MonotonicClock
    private let transport: any HCITransport
    private let epoll: Epoll
    private let timer: ClockTimer
    private var notifications: Int32?
    private var socket: Int32?
    private var adapter: HCIAdapterInfo?
    private var queue: HCICommandQueue
    private var phase = Phase.stopped
    /// The state last reported to the node (nil: nothing yet), so a retry loop logs once.
    private var reportedState: RadioState?
    /// Recovery retries: grows while the adapter stays unusable (see `stableAfterMicroseconds`).
    private var recovery: Backoff
    private var retryAt: UInt64?
    private var runningSince: UInt64?
    private var snoop: BTSnoopWriter?

    // Advertising: what the node wants, and what the controller has.
    private var plan = AdvertisingPlan.off
    private var onAir = OnAir()
    /// LE links open on the controller (handles), for the connectable fallback below.
    private var openLinks: Set<UInt16> = []
    /// The controller refused connectable advertising (while it holds a link, most likely):
    /// connectable payloads go out non-connectable until no link is open, or `connectableRetryAt`.
    private var connectableBlocked = false
    private var connectableRetryAt: UInt64?
    /// How long payloads stay non-connectable after a refusal when no link end is seen (an
    /// event lost on a busy socket, a link the radio did not see open).
    static let connectableRetryDelay: UInt64 = 60_000_000
    private var rotation = 0
    /// The last plan whose long payloads were counted as skipped (counted once per plan).
    private var skippedPlan: AdvertisingPlan?
    private var rotateAt: UInt64?
    /// After the controller refused an advertising command: no advertising until then.
    private var advertisingBlockedUntil: UInt64?
    private var advertisingRetry: Backoff
    /// Someone else changed scanning or advertising (raw channel): re-assert at this time.
    private var reassertAt: UInt64?
    /// nil: never. (Not 0: on a clock that started less than the minimum gap ago, as the
    /// system's does at boot, 0 would hold the first re-assertion back.)
    private var lastReassert: UInt64?
    private static let reassertDelay: UInt64 = 1_000_000
    private static let reassertMinimumGap: UInt64 = 5_000_000

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
        /// Whether the parameters set are ADV_IND's (connectable) or ADV_NONCONN_IND's.
        var connectable = false
        /// Whether the parameters set are for an extended PDU (a payload over 31 bytes).
        var extendedPDU = false
        var scanResponse: [UInt8]?
    }

    /// Steps, carried as command tags so a completion says what it finished.
    private enum Step: UInt32 {
        case reset = 1, eventMask, leEventMask, readAddress, leFeatures, maximumAdvertisingData
        case scanDisable, scanAddress, scanParameters, scanEnable
        case advertiseDisable, advertiseAddress, advertiseParameters, advertiseData, advertiseEnable
    }

    private enum Token: UInt64 { case socket = 1, notifications, timer }

    /// LE commands whose completion, when someone else sent them, means scanning or advertising
    /// may no longer be what Vigil set.
    private static let scanAndAdvertisingOpcodes: Set<UInt16> = [
        HCICommand.Opcode.leSetScanEnable, HCICommand.Opcode.leSetScanParameters,
        HCICommand.Opcode.leSetAdvertiseEnable, HCICommand.Opcode.leSetAdvertisingData,
        HCICommand.Opcode.leSetAdvertisingParameters, HCICommand.Opcode.leSetRandomAddress,
        HCICommand.Opcode.leSetExtendedScanEnable, HCICommand.Opcode.leSetExtendedScanParameters,
        HCICommand.Opcode.leSetExtendedAdvertisingEnable, HCICommand.Opcode.leSetExtendedAdvertisingData,
        HCICommand.Opcode.leSetExtendedAdvertisingParameters, HCICommand.Opcode.leSetAdvertisingSetRandomAddress,
    ]

    /// `clock` stamps reports and the capture; `monotonic` times every wait (command deadlines,
    /// back-off, rotation, re-assertion).
    public init(settings: HCIRadioSettings, clock: any WallClock, monotonic: any MonotonicClock = SystemMonotonicClock(),
                transport: any HCITransport = BlueZTransport()) throws {
        self.settings = settings
        self.clock = clock
        self.monotonic = monotonic
        self.transport = transport
        self.name = settings.adapter
        epoll = try Epoll()
        timer = try ClockTimer(clock: monotonic)
        queue = HCICommandQueue(timeoutMicroseconds: settings.commandTimeoutMicroseconds)
        recovery = Backoff(base: settings.backoffMinMicroseconds, max: settings.backoffMaxMicroseconds)
        advertisingRetry = Backoff(base: settings.backoffMinMicroseconds, max: settings.backoffMaxMicroseconds)
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
            if let n = try transport.openNotifications() {
                try epoll.add(n, token: Token.notifications.rawValue)
                notifications = n
            }
        } catch let error as HCIError where error.noBluetooth {
            throw error
        } catch {
            pendingOutputs.append(.problem("no adapter notifications (recovery waits for the back-off): \(error)"))
        }
        phase = .waiting
        connect()
        pump()
        try rearm()
    }

    /// The BlueZ radio reports its own state (on once scanning runs), unlike the simulation.
    public var reportsState: Bool { true }

    public func stop() {
        if let fd = socket, phase == .running || phase == .settingUp, let adapter {
            // Leave the air quiet: nothing advertises for a box that is off. Best effort, no wait.
            for command in [advertiseDisableCommand(), scanDisableCommand()] {
                if (try? transport.write(fd, adapter: adapter.name, packet: command.packet)) != nil {
                    record(command.packet, sent: true)
                }
            }
        }
        closeSocket()
        if let n = notifications {
            try? epoll.remove(n)
            transport.close(n)
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
            case .timer: timer.drain()
            case nil: break
            }
        }
        // Deadlines are checked on every wake-up, not only the timer's: a notification may just
        // have made a retry due now.
        handleDeadlines()
        pump()
        do { try snoop?.flush() } catch { snoopFailed(error) }
        outputs.append(contentsOf: pendingOutputs)
        pendingOutputs.removeAll(keepingCapacity: true)
        try rearm()
    }

    public func advertise(_ newPlan: AdvertisingPlan) {
        guard newPlan != plan else { return }
        let addressChanged = newPlan.address != plan.address
        plan = newPlan
        if addressChanged || rotation >= plan.payloads.count { rotation = 0 }
        if plan.payloads.count <= 1 { rotateAt = nil }
        guard phase == .running else { return }
        pump()
        // Anything `pump` produced (a failed write) reaches the node at once: rearm sees it.
        try? rearm()
    }

    // MARK: Opening and recovery

    /// Microseconds on the injected monotonic clock: every deadline below is in these.
    private var now: UInt64 { monotonic.nowNanoseconds() / 1_000 }

    private func connect() {
        retryAt = nil
        let found: HCIAdapterInfo?
        do {
            found = try transport.find(settings.adapter)
        } catch {
            fail("cannot list adapters: \(error)", state: .unknown)
            return
        }
        guard let info = found else {
            fail("adapter \(settings.adapter) not found", state: .off)
            return
        }
        adapter = info
        let wantUp = settings.channel == .raw
        if info.isUp != wantUp {
            guard settings.managePower else {
                fail(wantUp ? "adapter \(info.name) is powered down" : "adapter \(info.name) is up; the user channel needs it down",
                     state: .off)
                return
            }
            do {
                try transport.requestPower(info, up: wantUp)
            } catch {
                fail("\(error)", state: .off)
                return
            }
            // The UP/DOWN notification retries at once; the back-off is the fallback.
            fail(wantUp ? "adapter \(info.name) is powered down (power-up requested)"
                        : "adapter \(info.name) is up (power-down requested for the user channel)", state: .off)
            return
        }
        do {
            let fd = try transport.open(info, channel: settings.channel)
            do {
                try epoll.add(fd, token: Token.socket.rawValue)
            } catch {
                transport.close(fd)
                throw HCIError(operation: "watch the socket of", adapter: info.name, errno: error.errno)
            }
            socket = fd
        } catch {
            fail("\(error)", state: .off)
            return
        }
        phase = .settingUp
        onAir = OnAir()
        openLinks = []          // a new socket on a controller that may have been reset
        connectableBlocked = false
        connectableRetryAt = nil
        usingExtendedCommands = false
        enqueueSetup()
    }

    private func enqueueSetup() {
        if settings.channel == .user {
            // Vigil owns the controller: reset it and unmask the LE events a reset leaves masked.
            // On the raw channel the kernel has set the masks (with bits bluetoothd needs).
            queue.enqueue(.reset, tag: Step.reset.rawValue)
            queue.enqueue(.setEventMask(), tag: Step.eventMask.rawValue)
            queue.enqueue(.leSetEventMask(), tag: Step.leEventMask.rawValue)
        }
        queue.enqueue(.readBDAddress, tag: Step.readAddress.rawValue)
        queue.enqueue(.leReadLocalFeatures, tag: Step.leFeatures.rawValue)
        // Scanning commands follow once the features say which set to use.
    }

    /// Scanning, after the features said which command set to use (and again to re-assert it).
    /// Advertising and scanning are off first (a controller refuses a new random address while
    /// either runs), the random address is set, then scanning starts; advertising follows.
    private func enqueueScanning() {
        queue.enqueue(advertiseDisableCommand(), tag: Step.advertiseDisable.rawValue)
        queue.enqueue(scanDisableCommand(), tag: Step.scanDisable.rawValue)
        onAir = OnAir()
        if !plan.isOff, !usingExtendedCommands {
            queue.enqueue(.leSetRandomAddress(plan.address), tag: Step.scanAddress.rawValue)
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

    /// Something went wrong: report the radio `state` (when it changes, or when it was running),
    /// close the socket, retry after the back-off.
    private func fail(_ reason: String, state: RadioState) {
        let wasRunning = phase == .running
        if let since = runningSince, now &- since >= settings.stableAfterMicroseconds {
            recovery.reset() // it had been fine for a while: a fresh failure
        }
        runningSince = nil
        closeSocket()
        if reportedState != state || wasRunning {
            pendingOutputs.append(.stateChanged(state, reason: reason))
            reportedState = state
        }
        if phase != .stopped { phase = .waiting }
        retryAt = now + recovery.next()
    }

    private func closeSocket() {
        // Whatever was queued or in flight ends here; a retry sets up again from the start.
        _ = queue.failAll()
        if let fd = socket {
            try? epoll.remove(fd)
            transport.close(fd)
        }
        socket = nil
        onAir = OnAir()
        rotateAt = nil
        reassertAt = nil
    }

    // MARK: Reading

    private func readSocket(events: UInt32) {
        guard let fd = socket, let adapter else { return }
        var handled = 0
        while handled < settings.readBudget, socket != nil {
            let n: Int?
            do {
                n = try transport.read(fd, adapter: adapter.name, into: buffer)
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

    /// Handles one packet from the controller.
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
            } else {
                foreignCompletion(opcode)
            }
        case .commandStatus(let opcode, let credits, let status):
            if let done = queue.status(opcode: opcode, credits: credits, status: status), case .status(let pending, let s) = done {
                finished(pending, status: s, parameters: [s])
            } else {
                foreignCompletion(opcode)
            }
        case .connectionComplete(let status, let handle, let peripheral, _, _):
            guard status == 0 else { break }
            openLinks.insert(handle)
            if peripheral {
                // The controller stopped advertising for the link (legacy advertising always
                // does): reconciling starts it again.
                counters.incomingLinks += 1
                onAir.enabled = false
            }
        case .advertisingSetTerminated(let status, let set, _):
            if status == 0, set == 0 { onAir.enabled = false }
        case .disconnectionComplete(let status, let handle, _):
            guard status == 0 else { break }
            openLinks.remove(handle)
            if openLinks.isEmpty {
                connectableBlocked = false
                connectableRetryAt = nil
            }
        case .hardwareError(let code):
            counters.hardwareErrors += 1
            counters.recoveries += 1
            fail("controller \(name) reported hardware error 0x\(String(code, radix: 16))", state: .unknown)
        case .other:
            break
        }
    }

    /// A completion of a command Vigil did not send (raw channel: the kernel's, bluetoothd's).
    private func foreignCompletion(_ opcode: UInt16) {
        guard phase == .running || phase == .settingUp else { return }
        if opcode == HCICommand.Opcode.reset {
            // Someone reset the controller (the HCIDEVRESET ioctl, a tool): scanning, advertising
            // and the LE event mask are gone. Set up again on this socket, restoring the masks
            // with every bit the kernel and bluetoothd use.
            counters.controllerResets += 1
            pendingOutputs.append(.stateChanged(.off, reason: "controller \(name) was reset"))
            reportedState = .off
            _ = queue.failAll()
            onAir = OnAir()
            openLinks = []      // a reset controller holds no link
            connectableBlocked = false
            connectableRetryAt = nil
            rotateAt = nil
            reassertAt = nil
            phase = .settingUp
            queue.enqueue(.setEventMask(HCICommand.fullEventMask), tag: Step.eventMask.rawValue)
            queue.enqueue(.leSetEventMask(HCICommand.fullLEEventMask), tag: Step.leEventMask.rawValue)
            enqueueSetup()
        } else if Self.scanAndAdvertisingOpcodes.contains(opcode), phase == .running {
            // Scanning or advertising may no longer be what Vigil set: re-assert both soon, at most
            // every few seconds, so two owners cannot make the controller flap.
            counters.foreignChanges += 1
            if reassertAt == nil {
                reassertAt = max(now + Self.reassertDelay, lastReassert.map { $0 + Self.reassertMinimumGap } ?? 0)
            }
        }
    }

    /// Stack notifications: evt_stack_internal { u16 type = EVT_SI_DEVICE (1); u16 event; u16 dev }.
    private func readNotifications() {
        guard let n = notifications else { return }
        while true {
            let count: Int?
            do {
                count = try transport.read(n, adapter: "-", into: buffer)
            } catch {
                try? epoll.remove(n)
                transport.close(n)
                notifications = nil
                pendingOutputs.append(.problem("adapter notifications lost (recovery waits for the back-off): \(error)"))
                return
            }
            guard let c = count else { return }
            guard c >= 9, buffer[0] == 0x04, buffer[1] == 0xFD, buffer[3] == 0x01, buffer[4] == 0x00 else { continue }
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
        case 4 where ours && settings.channel == .raw && phase != .waiting:
            counters.recoveries += 1
            fail("adapter \(adapter?.name ?? name) was powered down", state: .off)
        case 1, 3, 4:
            // An adapter appeared or changed power: if it may be ours, try now, not at the back-off.
            // (DOWN matters to the user channel, which waits for it.)
            if phase == .waiting, event != 4 || settings.channel == .user {
                retryAt = now
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
            case .maximumAdvertisingData:
                // Mandatory with extended advertising, yet not every controller answers it
                // (BlueZ's emulator before 5.8x): try what one command carries, and learn 31 if
                // the controller refuses a long advert (`advertisingRefused`).
                maximumAdvertisingDataLength = HCICommand.maximumExtendedAdvertisingData
                maximumAdvertisingDataLengthUnconfirmed = true
                enqueueScanning()
                return
            case .advertiseParameters where onAir.connectable && !connectableBlocked,
                 .advertiseEnable where onAir.connectable && !connectableBlocked:
                // Connectable advertising (with a link, most likely) is more than this controller
                // does now: the payloads go out non-connectable, at once, never off the air,
                // until the link ends or a minute passes (links the radio did not see open).
                counters.connectableRefusals += 1
                connectableBlocked = true
                connectableRetryAt = now + Self.connectableRetryDelay
                queue.discardQueued()
                onAir = OnAir()
                rotateAt = nil
                return
            case .advertiseAddress, .advertiseParameters, .advertiseData, .advertiseEnable:
                advertisingRefused(pending.command, status: status)
                return
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
            // LE feature bit 12: LE Extended Advertising. The kernel uses the extended commands
            // then, and a controller may refuse legacy ones after it has seen them.
            let supported = parameters.count >= 3 && parameters[2] & 0x10 != 0
            usingExtendedCommands = supported && settings.extended
            maximumAdvertisingDataLength = AdvertisingPayload.legacyMaximumLength
            maximumAdvertisingDataLengthUnconfirmed = false
            if usingExtendedCommands {
                queue.enqueue(.leReadMaximumAdvertisingDataLength, tag: Step.maximumAdvertisingData.rawValue)
            } else {
                enqueueScanning()
            }
        case .maximumAdvertisingData:
            if parameters.count >= 3 {
                let length = Int(parameters[1]) | Int(parameters[2]) << 8
                maximumAdvertisingDataLength = min(max(length, AdvertisingPayload.legacyMaximumLength), HCICommand.maximumExtendedAdvertisingData)
                maximumAdvertisingDataLengthUnconfirmed = false
            }
            enqueueScanning()
        case .scanEnable:
            if phase != .running { runningSince = now }
            phase = .running
            if reportedState != .on {
                let how = usingExtendedCommands ? "extended" : "legacy"
                pendingOutputs.append(.stateChanged(.on, reason: "scanning on \(name) (\(settings.channel.rawValue) channel, \(how) commands)"))
                reportedState = .on
            }
        case .advertiseEnable:
            advertisingRetry.reset()
            if let payload = onAir.payload { pendingOutputs.append(.onAir(payload)) }
        default:
            break
        }
    }

    /// The controller refused an advertising command (one that cannot scan and advertise at
    /// once; the kernel's own advertising on the raw channel). Scanning goes on and the radio stays
    /// on; advertising is retried on its own back-off, and the node is told once per streak.
    private func advertisingRefused(_ command: HCICommand, status: UInt8) {
        counters.advertisingRefusals += 1
        if maximumAdvertisingDataLengthUnconfirmed, onAir.extendedPDU || (onAir.payload?.count ?? 0) > AdvertisingPayload.legacyMaximumLength {
            longAdvertRefusals += 1
        }
        if longAdvertRefusals >= Self.longAdvertRefusalsToGiveUp {
            // A controller that did not say how long its adverts may be refused long ones again
            // and again (one refusal may be a passing "command disallowed"): 31 until it restarts.
            longAdvertRefusals = 0
            maximumAdvertisingDataLength = AdvertisingPayload.legacyMaximumLength
            maximumAdvertisingDataLengthUnconfirmed = false
            pendingOutputs.append(.problem("the controller refused a \(onAir.payload?.count ?? 0)-byte extended advert: signed frames stay off the air on \(name)"))
        }
        if advertisingRetry.isFresh {
            pendingOutputs.append(.problem("the controller refused \(command) (status 0x\(String(status, radix: 16))): not advertising; retrying"))
        }
        advertisingBlockedUntil = now + advertisingRetry.next()
        // The rest of the sequence is moot, and what is on the air is unknown: set it all again.
        queue.discardQueued()
        onAir = OnAir()
        rotateAt = nil
        // Legacy: the random address (controller-wide) is set with scanning stopped, so a retry
        // goes through the whole sequence, scanning included.
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
    /// A new payload goes out by switching advertising off and on around the new data: the new frame
    /// is on the air at once, and controllers that report only on enable (BlueZ's emulator) still
    /// deliver every frame.
    private func reconcileAdvertising() {
        guard phase == .running, queue.isIdle else { return }
        if let until = advertisingBlockedUntil {
            guard now >= until else { return }
            advertisingBlockedUntil = nil
        }
        if plan.isOff {
            if onAir.enabled { queue.enqueue(advertiseDisableCommand(), tag: Step.advertiseDisable.rawValue) }
            onAir.enabled = false
            onAir.payload = nil
            rotateAt = nil
            return
        }
        // Payloads longer than the controller sends (signed frames without extended advertising)
        // are left out of the rotation.
        let eligible = plan.payloads.indices.filter { plan.payloads[$0].count <= maximumAdvertisingDataLength }
        if eligible.count < plan.payloads.count, skippedPlan != plan {
            skippedPlan = plan
            counters.longPayloadsSkipped += UInt64(plan.payloads.count - eligible.count)
        }
        guard !eligible.isEmpty else {
            if onAir.enabled { queue.enqueue(advertiseDisableCommand(), tag: Step.advertiseDisable.rawValue) }
            onAir.enabled = false
            onAir.payload = nil
            rotateAt = nil
            return
        }
        let index = eligible[rotation % eligible.count]
        let payload = plan.payloads[index]
        let extendedPDU = payload.count > AdvertisingPayload.legacyMaximumLength
        let connectable = plan.connectable.contains(index) && !connectableBlocked && !extendedPDU
        if onAir.parametersSet, onAir.connectable != connectable || onAir.extendedPDU != extendedPDU {
            // The PDU type changes only with advertising off.
            if onAir.enabled { queue.enqueue(advertiseDisableCommand(), tag: Step.advertiseDisable.rawValue) }
            onAir.enabled = false
            onAir.parametersSet = false
        }
        if onAir.address != plan.address {
            if onAir.enabled { queue.enqueue(advertiseDisableCommand(), tag: Step.advertiseDisable.rawValue) }
            onAir.enabled = false
            onAir.payload = nil
            if usingExtendedCommands {
                if !onAir.parametersSet { enqueueAdvertisingParameters(connectable: connectable, extendedPDU: extendedPDU) }
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
        if !onAir.parametersSet { enqueueAdvertisingParameters(connectable: connectable, extendedPDU: extendedPDU) }
        if connectable, !plan.scanResponse.isEmpty, onAir.scanResponse != plan.scanResponse {
            if onAir.enabled { queue.enqueue(advertiseDisableCommand(), tag: Step.advertiseDisable.rawValue) }
            onAir.enabled = false
            queue.enqueue(usingExtendedCommands ? .leSetExtendedScanResponseData(plan.scanResponse) : .leSetScanResponseData(plan.scanResponse),
                          tag: Step.advertiseData.rawValue)
            onAir.scanResponse = plan.scanResponse
        }
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
        rotateAt = eligible.count > 1 ? (rotateAt ?? now + settings.rotationSlotMicroseconds) : nil
    }

    private func enqueueAdvertisingParameters(connectable: Bool, extendedPDU: Bool) {
        let interval = max(Self.units(settings.advertisingIntervalMicroseconds), 160) // ≥ 100 ms when non-connectable
        queue.enqueue(usingExtendedCommands ? .leSetExtendedAdvertisingParameters(intervalUnits: UInt32(interval), connectable: connectable,
                                                                                  extendedPDU: extendedPDU)
                                            : .leSetAdvertisingParameters(intervalUnits: interval, connectable: connectable),
                      tag: Step.advertiseParameters.rawValue)
        onAir.parametersSet = true
        onAir.connectable = connectable
        onAir.extendedPDU = extendedPDU
    }

    /// Writes queued commands while credits allow.
    private func pump() {
        guard let fd = socket, let adapter else { return }
        if phase == .running { reconcileAdvertising() }
        while let pending = queue.next(now: now) {
            do {
                try transport.write(fd, adapter: adapter.name, packet: pending.command.packet)
                counters.packetsOut += 1
                record(pending.command.packet, sent: true)
            } catch {
                counters.recoveries += 1
                fail(error.adapterDown ? "adapter \(adapter.name) is down" : "\(error)",
                     state: error.adapterVanished || error.adapterDown ? .off : .unknown)
                return
            }
        }
    }

    private func handleDeadlines() {
        if let expired = queue.expired(now: now) {
            counters.commandTimeouts += 1
            counters.recoveries += 1
            fail("controller \(name) did not answer \(expired.command) within \(settings.commandTimeoutMicroseconds / 1_000) ms", state: .unknown)
        }
        if let at = retryAt, at <= now, phase == .waiting {
            connect()
        }
        if let at = reassertAt, at <= now {
            reassertAt = nil
            if phase == .running, queue.isIdle {
                lastReassert = now
                enqueueScanning() // scanning again; advertising follows (the air state was reset)
            } else if phase == .running {
                reassertAt = now + Self.reassertDelay
            }
        }
        if let at = connectableRetryAt, at <= now {
            connectableRetryAt = nil
            connectableBlocked = false   // try connectable again; a refusal blocks it once more
        }
        if let at = rotateAt, at <= now {
            if phase != .running || plan.payloads.count <= 1 {
                rotateAt = nil
            } else if queue.isIdle {
                rotation = (rotation + 1) % plan.payloads.count
                rotateAt = now + settings.rotationSlotMicroseconds
            } else {
                rotateAt = now + settings.rotationSlotMicroseconds / 4 // a command is in flight: soon
            }
        }
    }

    private func rearm() throws {
        var deadlines = [queue.nextDeadline, retryAt, rotateAt, reassertAt, advertisingBlockedUntil, connectableRetryAt].compactMap { $0 }
        if !pendingOutputs.isEmpty { deadlines.append(0) } // something for the node: wake it now
        guard let next = deadlines.min() else {
            try timer.disarm()
            return
        }
        // Microseconds to the clock's nanoseconds; a past deadline (0: "now") fires at once.
        try timer.arm(atNanoseconds: next > UInt64.max / 1_000 ? UInt64.max : next * 1_000)
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
        pendingOutputs.append(.problem("the HCI capture failed and is off: \(error)"))
    }
}
