import VigilCore
import VigilEvents
import VigilSystem

/// Commands: what each completion means for the life cycle, advertising, and the deadlines.
extension HCIRadio {
    func finished(_ pending: HCICommandQueue.Pending, status: UInt8, parameters: [UInt8]) {
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
    func advertisingRefused(_ command: HCICommand, status: UInt8) {
        for problem in advertising.refused(command, status: status, now: now, adapter: name, counters: &counters) {
            pendingOutputs.append(.problem(problem))
        }
        // The rest of the sequence is moot.
        queue.discardQueued()
    }

    func scanDisableCommand() -> HCICommand {
        usingExtendedCommands ? .leSetExtendedScanEnable(false) : .leSetScanEnable(false)
    }

    func advertiseDisableCommand() -> HCICommand {
        usingExtendedCommands ? .leSetExtendedAdvertisingEnable(false) : .leSetAdvertiseEnable(false)
    }

    /// Queues the commands that take the controller from what it advertises to the plan (the
    /// scheduler decides them). Called when idle; idempotent.
    func reconcileAdvertising() {
        guard phase == .running, queue.isIdle else { return }
        let commands = advertising.reconcile(now: now, extended: usingExtendedCommands, scanning: { random in
            (disable: self.scanDisableCommand(), parameters: self.scanParametersCommand(randomAddress: random), enable: self.scanEnableCommand())
        }, counters: &counters)
        for (command, step) in commands { queue.enqueue(command, tag: step.rawValue) }
    }

    /// Writes queued commands while credits allow.
    func pump() {
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

    func handleDeadlines() {
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

    func rearm() throws {
        var deadlines = [queue.nextDeadline, retryAt, reassertAt].compactMap { $0 } + advertising.deadlines
        if !pendingOutputs.isEmpty { deadlines.append(0) } // something for the node: wake it now
        guard let next = deadlines.min() else {
            try timer.disarm()
            return
        }
        // Microseconds to the clock's nanoseconds; a past deadline (0: "now") fires at once.
        try timer.arm(atNanoseconds: next > UInt64.max / 1_000 ? UInt64.max : next * 1_000)
    }
}
