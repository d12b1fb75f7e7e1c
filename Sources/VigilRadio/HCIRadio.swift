import VigilCore
import VigilEvents
import VigilSystem

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
    public var maximumAdvertisingDataLength: Int { advertising.maximumDataLength }

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

    /// Advertising: what the node wants, what the controller has, and the commands between.
    private var advertising: AdvertisingScheduler
    static let connectableRetryDelay = AdvertisingScheduler.connectableRetryDelay
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

    private typealias Step = HCIRadioStep

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
        advertising = AdvertisingScheduler(settings: .init(intervalMicroseconds: settings.advertisingIntervalMicroseconds,
                                                           rotationSlotMicroseconds: settings.rotationSlotMicroseconds,
                                                           backoffMinMicroseconds: settings.backoffMinMicroseconds,
                                                           backoffMaxMicroseconds: settings.backoffMaxMicroseconds))
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
        guard advertising.setPlan(newPlan) else { return }
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
        advertising.controllerFresh() // a new socket on a controller that may have been reset
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
        if let address = advertising.scanningAddress(extended: usingExtendedCommands) {
            queue.enqueue(.leSetRandomAddress(address), tag: Step.scanAddress.rawValue)
        }
        queue.enqueue(scanParametersCommand(randomAddress: advertising.randomAddressSet), tag: Step.scanParameters.rawValue)
        queue.enqueue(scanEnableCommand(), tag: Step.scanEnable.rawValue)
    }

    /// `randomAddress`: the controller-wide random address is set (legacy), so scan requests
    /// come from it rather than the controller's public address.
    private func scanParametersCommand(randomAddress: Bool) -> HCICommand {
        let interval = Self.units(settings.scanIntervalMicroseconds)
        let window = min(Self.units(settings.scanWindowMicroseconds), interval)
        let random = settings.activeScan && randomAddress && !usingExtendedCommands
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
        advertising.airUnknown()
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
            if peripheral { counters.incomingLinks += 1 }
            advertising.linkOpened(handle, peripheral: peripheral)
        case .advertisingSetTerminated(let status, let set, _):
            if status == 0, set == 0 { advertising.advertisingEnded() }
        case .disconnectionComplete(let status, let handle, _):
            guard status == 0 else { break }
            advertising.linkClosed(handle)
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
            advertising.controllerFresh() // a reset controller holds no link
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
            if advertising.connectableRefused(step, now: now, counters: &counters) {
                // Connectable advertising (with a link, most likely) is more than this controller
                // does now: the payloads go out non-connectable, at once, never off the air,
                // until the link ends or a minute passes (links the radio did not see open).
                queue.discardQueued()
                return
            }
            switch step {
            case .scanDisable, .advertiseDisable:
                return // "already disabled" is fine
            case .maximumAdvertisingData:
                // Mandatory with extended advertising, yet not every controller answers it
                // (BlueZ's emulator before 5.8x): try what one command carries, and learn 31 if
                // the controller refuses a long advert (`advertisingRefused`).
                advertising.maximumDataLengthRead(nil)
                enqueueScanning()
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
            advertising.featuresRead()
            if usingExtendedCommands {
                queue.enqueue(.leReadMaximumAdvertisingDataLength, tag: Step.maximumAdvertisingData.rawValue)
            } else {
                enqueueScanning()
            }
        case .maximumAdvertisingData:
            if parameters.count >= 3 {
                advertising.maximumDataLengthRead(Int(parameters[1]) | Int(parameters[2]) << 8)
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
            if let payload = advertising.enabled() { pendingOutputs.append(.onAir(payload)) }
        default:
            break
        }
    }

    /// The controller refused an advertising command: scanning goes on and the radio stays on;
    /// advertising is retried on its own back-off (`AdvertisingScheduler.refused`).
    private func advertisingRefused(_ command: HCICommand, status: UInt8) {
        for problem in advertising.refused(command, status: status, now: now, adapter: name, counters: &counters) {
            pendingOutputs.append(.problem(problem))
        }
        // The rest of the sequence is moot.
        queue.discardQueued()
    }

    private func scanDisableCommand() -> HCICommand {
        usingExtendedCommands ? .leSetExtendedScanEnable(false) : .leSetScanEnable(false)
    }

    private func advertiseDisableCommand() -> HCICommand {
        usingExtendedCommands ? .leSetExtendedAdvertisingEnable(false) : .leSetAdvertiseEnable(false)
    }

    /// Queues the commands that take the controller from what it advertises to the plan (the
    /// scheduler decides them). Called when idle; idempotent.
    private func reconcileAdvertising() {
        guard phase == .running, queue.isIdle else { return }
        let commands = advertising.reconcile(now: now, extended: usingExtendedCommands, scanning: { random in
            (disable: self.scanDisableCommand(), parameters: self.scanParametersCommand(randomAddress: random), enable: self.scanEnableCommand())
        }, counters: &counters)
        for (command, step) in commands { queue.enqueue(command, tag: step.rawValue) }
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
        advertising.deadlinesPassed(now: now, running: phase == .running, idle: queue.isIdle)
    }

    private func rearm() throws {
        var deadlines = [queue.nextDeadline, retryAt, reassertAt].compactMap { $0 } + advertising.deadlines
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
