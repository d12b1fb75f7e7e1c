import VigilCore
import VigilEvents
import VigilSystem

/// Reading the HCI socket and the adapters' notifications: events, completions, reports.
extension HCIRadio {
    func readSocket(events: UInt32) {
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
    func foreignCompletion(_ opcode: UInt16) {
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
    func readNotifications() {
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
    func adapterNotification(event: UInt16, device: UInt16) {
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
}
