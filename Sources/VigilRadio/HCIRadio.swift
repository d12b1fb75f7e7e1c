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
///
/// Its state is internal rather than private only so that its steps can live in files by concern
/// (`HCIRadio+Reading`, `HCIRadio+Commands`): nothing else in VigilRadio touches it, and every
/// member is used on the loop that owns the radio.
public final class HCIRadio: RadioAdapter {
    public let name: String
    public var descriptor: Int32 { epoll.fd }
    public internal(set) var counters = HCIRadioCounters()
    public internal(set) var parser = HCIEventParser()
    /// The controller's address, once read.
    public internal(set) var controllerAddress: UInt64?
    public internal(set) var usingExtendedCommands = false
    /// The longest advertising data the controller sends (31 without extended advertising): longer
    /// payloads of a plan are skipped, and counted (`counters.longPayloadsSkipped`).
    public var maximumAdvertisingDataLength: Int { advertising.maximumDataLength }

    let settings: HCIRadioSettings
    let clock: any WallClock
    let monotonic: any MonotonicClock
    let transport: any HCITransport
    let epoll: Epoll
    let timer: ClockTimer
    var notifications: Int32?
    var socket: Int32?
    var adapter: HCIAdapterInfo?
    var queue: HCICommandQueue
    var phase = Phase.stopped
    /// The state last reported to the node (nil: nothing yet), so a retry loop logs once.
    var reportedState: RadioState?
    /// Recovery retries: grows while the adapter stays unusable (see `stableAfterMicroseconds`).
    var recovery: Backoff
    var retryAt: UInt64?
    var runningSince: UInt64?
    var snoop: BTSnoopWriter?

    /// Advertising: what the node wants, what the controller has, and the commands between.
    var advertising: AdvertisingScheduler
    static let connectableRetryDelay = AdvertisingScheduler.connectableRetryDelay
    /// Someone else changed scanning or advertising (raw channel): re-assert at this time.
    var reassertAt: UInt64?
    /// nil: never. (Not 0: on a clock that started less than the minimum gap ago, as the
    /// system's does at boot, 0 would hold the first re-assertion back.)
    var lastReassert: UInt64?
    static let reassertDelay: UInt64 = 1_000_000
    static let reassertMinimumGap: UInt64 = 5_000_000

    /// One HCI packet at most: 1 type byte, 2 header bytes, 255 parameter bytes for an event;
    /// ACL data (not used, but delivered on the user channel) can be larger.
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4_096, alignment: 8)
    var pendingOutputs: [RadioOutput] = []

    enum Phase: Equatable {
        case stopped
        /// Waiting for the adapter (absent, down, or backing off after a failure).
        case waiting
        /// Socket open, setup commands queued or in flight.
        case settingUp
        /// Scanning; advertising follows the plan.
        case running
    }

    typealias Step = HCIRadioStep

    enum Token: UInt64 { case socket = 1, notifications, timer }

    /// LE commands whose completion, when someone else sent them, means scanning or advertising
    /// may no longer be what Vigil set.
    static let scanAndAdvertisingOpcodes: Set<UInt16> = [
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
    var now: UInt64 { monotonic.nowNanoseconds() / 1_000 }

    func connect() {
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

    func enqueueSetup() {
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
    func enqueueScanning() {
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
    func scanParametersCommand(randomAddress: Bool) -> HCICommand {
        let interval = Self.units(settings.scanIntervalMicroseconds)
        let window = min(Self.units(settings.scanWindowMicroseconds), interval)
        let random = settings.activeScan && randomAddress && !usingExtendedCommands
        return usingExtendedCommands
            ? .leSetExtendedScanParameters(active: settings.activeScan, intervalUnits: interval, windowUnits: window, randomAddress: random)
            : .leSetScanParameters(active: settings.activeScan, intervalUnits: interval, windowUnits: window, randomAddress: random)
    }

    func scanEnableCommand() -> HCICommand {
        usingExtendedCommands ? .leSetExtendedScanEnable(true) : .leSetScanEnable(true)
    }

    /// 0.625 ms units, within the range the specification allows (2.5 ms ... 10.24 s).
    static func units(_ microseconds: UInt64) -> UInt16 {
        UInt16(min(max(microseconds * 10 / 6_250, 4), 0x4000))
    }

    /// Something went wrong: report the radio `state` (when it changes, or when it was running),
    /// close the socket, retry after the back-off.
    func fail(_ reason: String, state: RadioState) {
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

    func closeSocket() {
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

    // MARK: Capture

    func record(_ packet: [UInt8], sent: Bool) {
        guard let writer = snoop else { return }
        do {
            try writer.write(packet: packet, direction: sent ? .sent : .received, timeMicroseconds: clock.nowMicroseconds())
        } catch {
            snoopFailed(error)
        }
    }

    /// A capture that cannot be written (disk full) is dropped; the radio goes on.
    func snoopFailed(_ error: any Error) {
        counters.snoopErrors += 1
        try? snoop?.close()
        snoop = nil
        pendingOutputs.append(.problem("the HCI capture failed and is off: \(error)"))
    }
}
