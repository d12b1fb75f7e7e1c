import VigilCore
import VigilEvents
import VigilGATT
import VigilRadio
import VigilSystem

/// A sensor's link, step by step (connect, encrypt, MTU, discovery, subscription, readings),
/// and what the bonds report of it: the half of `HeartRateSensors` that speaks to the sensor.
extension HeartRateSensors {
    // MARK: - The link

    func ready(_ fd: Int32, _ events: UInt32) {
        guard let resident = residentByFD[fd], var sensor = sensors[resident], let socket = sensor.socket else { return }
        if sensor.phase == .connecting || sensor.phase == .encrypting {
            if let error = socket.connectionError() {
                // The kernel ends a link whose encryption failed with EACCES (authentication failure).
                if sensor.linkBond == .bonded && error == .accessDenied { bondFailed(resident) }
                // Only the box's own link counts as the sensor's: up and asked to encrypt.
                if sensor.linkBond == .pairing && sensor.phase == .encrypting { pairingUnanswered(resident) }
                return drop(resident, reason: "could not connect: \(error)", retry: true)
            }
            guard events & Epoll.writable != 0 else {
                if events & Epoll.hangup != 0 { drop(resident, reason: "the link ended while it was set up", retry: true) }
                return
            }
            var encrypted = socket.encryption()?.encrypted ?? false
            if sensor.phase == .connecting && sensor.linkBond != .unbonded && !encrypted {
                // Up at low: now the encryption (the socket is writable again once it is done).
                let started: Bool
                do { started = try socket.startEncryption() } catch {
                    return drop(resident, reason: "could not ask for encryption: \(error)", retry: true)
                }
                if started {
                    sensors[resident]?.phase = .encrypting
                    // Writable again when done; a PDU the peer sent meanwhile is read later, so
                    // it must not wake the loop now (level-triggered, it would spin).
                    if !context.changeWatch(fd, "a heart-rate sensor", events: Epoll.writable) {
                        drop(resident, reason: "cannot watch the link", retry: true)
                    }
                    return
                }
                encrypted = socket.encryption()?.encrypted ?? false
            }
            // Encrypted when asked: checked, not assumed.
            if sensor.linkBond != .unbonded && !encrypted {
                // The link is closed first: a power-down tearing down a link whose socket is being
                // released was seen to corrupt the kernel's connection list (Debian's 6.1).
                let restart = bonds.mayRestartForSecurityManager(adapter: sensor.adapterIndex)
                drop(resident, reason: restart ? "the adapter had no security manager: powered off and on" : "the link is not encrypted", retry: true)
                if restart { bonds.restartForSecurityManager(adapter: sensor.adapterIndex) }
                return
            }
            sensor.encrypted = encrypted
            context.unwatch(fd, "a heart-rate sensor")
            guard context.watch(fd, "a heart-rate sensor", handler: { [unowned self] _ in ready(fd, Epoll.readable) }) else {
                return drop(resident, reason: "cannot watch the link", retry: true)
            }
            sensor.phase = .exchangingMTU
            sensors[resident] = sensor
            start(resident, .exchangeMTU(UInt16(ATTPDU.maximumMTU)))
            pump() // the next sensor may try now
            return
        }
        for _ in 0 ..< 64 {   // a fair share of the loop per wake-up
            guard let current = sensors[resident], let socket = current.socket, socket.fd == fd else { return }
            switch socket.receive() {
            case .nothing:
                return
            case .truncated:
                strike(resident, "a PDU over \(ATTSocket.receiveCapacity) bytes")
            case .closed(let error):
                return drop(resident, reason: error.map { "the link ended: \($0)" } ?? "the sensor disconnected", retry: true)
            case .pdu(let bytes):
                var bearer = current.bearer
                let outputs = bearer.receive(bytes)
                sensors[resident]?.bearer = bearer
                for output in outputs { handle(resident, output) }
            }
        }
    }

    func start(_ resident: String, _ procedure: GATTClient.Procedure) {
        guard var bearer = sensors[resident]?.bearer, let started = bearer.start(procedure) else {
            return drop(resident, reason: "too many requests queued on the link", retry: true)
        }
        sensors[resident]?.bearer = bearer
        for output in started.outputs { handle(resident, .client(output)) }
    }

    func handle(_ resident: String, _ output: ATTBearer.Output) {
        switch output {
        case .server(.send(let pdu)), .client(.send(let pdu)):
            _ = sensors[resident]?.socket?.send(pdu, logger: context.logger)
        case .server(.violation(let what)), .client(.violation(let what)):
            strike(resident, what)
        case .client(.completed(_, let result)):
            advance(resident, result)
        case .client(.value(let handle, let value, _)):
            guard let sensor = sensors[resident], sensor.phase == .linked, handle == sensor.measurement else { return }
            reading(resident, value)
        case .server, .client(.mtuChanged):
            break
        }
    }

    /// Setup, one step per completed procedure: MTU, the Heart Rate service, the subscription.
    func advance(_ resident: String, _ result: GATTClient.Result) {
        guard let sensor = sensors[resident] else { return }
        switch (sensor.phase, result) {
        case (.exchangingMTU, _):
            // A sensor that refuses the exchange keeps the default MTU: a measurement fits it.
            sensors[resident]?.phase = .discovering
            start(resident, .discover(service: .heartRateService))
        case (.discovering, .services(let services)):
            guard let measurement = services.flatMap(\.characteristics).first(where: { $0.uuid == .heartRateMeasurement }),
                  let cccd = measurement.configurationHandle else {
                return drop(resident, reason: "the device has no heart-rate measurement to subscribe to", retry: true)
            }
            sensors[resident]?.measurement = measurement.valueHandle
            sensors[resident]?.phase = .subscribing
            start(resident, .configure(handle: cccd, bits: 1))
        case (.subscribing, .done):
            sensors[resident]?.phase = .linked
            sensors[resident]?.lastError = ""
            sensors[resident]?.loggedOpen = true
            sensors[resident]?.linkedAtNanoseconds = context.monotonic.nowNanoseconds()
            sensors[resident]?.lastLoggedNanoseconds = nil
            let bonded = sensor.encrypted && bonds.isBonded(sensor.peer) && !bonds.isSuspect(sensor.peer)
            if bonded { sensors[resident]?.bondProblem = "" }
            appendLink(resident: resident, peer: sensor.peer, open: true, reason: "", bonded: bonded)
            context.logger.info("heart-rate sensor linked", metadata: ["resident": "\(resident)", "sensor": "\(sensor.peer)", "bonded": "\(bonded)"])
            pump()
        case (.discovering, _), (.subscribing, _):
            drop(resident, reason: "setting up the sensor failed: \(result)", retry: true)
        default:
            break
        }
    }

    /// A measurement: logged as a check-in from the heart rate when it is the first on this
    /// link, when it changes between a sign of life and none, or when the last logged one is
    /// `heartRateLogInterval` old (or a third of the resident's interval, if shorter); otherwise
    /// only counted.
    func reading(_ resident: String, _ value: [UInt8]) {
        let measurement: HeartRateMeasurement
        do {
            measurement = try HeartRateMeasurement.parse(value)
        } catch {
            sensors[resident]?.readingsMalformed += 1
            return strike(resident, "a heart-rate measurement that does not parse (\(error))")
        }
        guard var sensor = sensors[resident], let flags = value.first else { return }
        sensor.readingsHeard += 1
        var checkIn = CheckIn()
        checkIn.resident = resident
        checkIn.source = .checkInHeartRate
        checkIn.value = Double(measurement.beatsPerMinute)
        checkIn.heartRateFlags = UInt32(flags)
        let positive = EscalationBook.isPositive(checkIn)
        let now = context.monotonic.nowNanoseconds()
        let ladderInterval = context.projections.escalations.residents[resident]?.intervalMicroseconds ?? UInt64.max
        let interval = min(settings.heartRateLogIntervalMicroseconds, ladderInterval / 3)
        if Self.logs(positive: positive, atNanoseconds: now,
                     after: sensor.lastLoggedNanoseconds.map { ($0, sensor.lastLoggedPositive) },
                     intervalNanoseconds: interval &* 1_000) {
            sensor.lastLoggedNanoseconds = now
            sensor.lastLoggedPositive = positive
            if context.append(.checkIn(checkIn), time: nil) != nil { sensor.readingsLogged += 1 }
        }
        sensors[resident] = sensor
    }

    /// Whether a reading is logged: the first on a link; one that turns a sign of life into
    /// none or back, unless the last logged one is under a second old (a sensor flapping at
    /// 10 Hz is logged once a second); any once the last logged one is `interval` old.
    static func logs(positive: Bool, atNanoseconds now: UInt64, after last: (nanoseconds: UInt64, positive: Bool)?,
                     intervalNanoseconds: UInt64) -> Bool {
        guard let last else { return true }
        let since = now >= last.nanoseconds ? now - last.nanoseconds : 0
        return since >= intervalNanoseconds || (positive != last.positive && since >= changeGapNanoseconds)
    }

    func strike(_ resident: String, _ what: String) {
        // What followed a drop in the same batch is not held against the next link.
        guard var sensor = sensors[resident], sensor.socket != nil else { return }
        sensor.strikes += 1
        sensors[resident] = sensor
        ledger.countViolation()
        context.logger.notice("a heart-rate sensor broke the rules", metadata: ["resident": "\(resident)", "sensor": "\(sensor.peer)", "what": "\(what)", "strikes": "\(sensor.strikes)"])
        if sensor.strikes >= settings.violationLimit {
            ledger.countClosedForMisbehaviour()
            drop(resident, reason: "closed by the box: \(what)", retry: true, byTheBox: true)
        }
    }

    /// Ends the sensor's link or attempt; its closing is logged if its opening was. With `retry`
    /// it waits its back-off (from its base again after a link that stayed up
    /// `stableLinkNanoseconds` and was not closed `byTheBox`), else it is forgotten.
    func drop(_ resident: String, reason: String, retry: Bool, byTheBox: Bool = false) {
        guard var sensor = sensors[resident] else { return }
        if let socket = sensor.socket {
            context.unwatch(socket.fd, "a heart-rate sensor")
            residentByFD[socket.fd] = nil
            socket.close()
            if sensor.linkBond == .pairing { bonds.endPairing(sensor.peer) }
        }
        if sensor.loggedOpen {
            appendLink(resident: resident, peer: sensor.peer, open: false, reason: reason)
            context.logger.info("heart-rate sensor link closed", metadata: ["resident": "\(resident)", "sensor": "\(sensor.peer)", "reason": "\(reason)"])
            let upFor = context.monotonic.nowNanoseconds() &- sensor.linkedAtNanoseconds
            if upFor >= Self.stableLinkNanoseconds && !byTheBox { sensor.backoff.reset() }
        }
        guard retry, !context.stopping else {
            sensors[resident] = nil
            return pump()
        }
        if sensor.backoff.isFresh && !sensor.loggedOpen {
            context.logger.notice("cannot link to a heart-rate sensor; trying again with back-off", metadata: ["resident": "\(resident)", "sensor": "\(sensor.peer)", "why": "\(reason)"])
        }
        sensor.socket = nil
        sensor.phase = .waiting
        sensor.loggedOpen = false
        sensor.linkedAtNanoseconds = 0
        sensor.measurement = 0
        sensor.lastError = reason
        sensor.dueNanoseconds = context.monotonic.nowNanoseconds() &+ sensor.backoff.next()
        sensors[resident] = sensor
        pump()
    }

    func appendLink(resident: String, peer: LEAddress, open: Bool, reason: String, bonded: Bool = false) {
        ledger.appendLink(peer: peer, open: open, reason: reason, role: .sensor, resident: resident, bonded: bonded)
    }

    // MARK: - Bonds

    func resident(with peer: LEAddress) -> String? {
        sensors.values.first { $0.peer == peer }?.resident
    }

    func heard(_ news: SensorBonds.News) {
        switch news {
        case .ready:
            pump()
        case .bonded(let peer):
            // The pairing is over once its outcome is known: the adapter stops being bondable
            // and deferred key reloads run (a legacy pairing's second key is then evicted).
            bonds.endPairing(peer)
            guard let resident = resident(with: peer) else { return }
            sensors[resident]?.bondProblem = ""
            context.logger.info("heart-rate sensor bonded", metadata: ["resident": "\(resident)", "sensor": "\(peer)"])
        case .notBonded(let peer):
            bonds.endPairing(peer)
            guard let resident = resident(with: peer) else { return }
            // Encrypted with a key for this link only: anyone could pair the same way.
            sensors[resident]?.cannotBond = true
            sensors[resident]?.bondProblem = "the sensor pairs but does not bond: unbonded"
            context.logger.notice("a heart-rate sensor does not bond: its readings count, shown unbonded",
                               metadata: ["resident": "\(resident)", "sensor": "\(peer)"])
        case .pairingFailed(let peer, let status):
            bonds.endPairing(peer)
            guard let resident = resident(with: peer), sensors[resident]?.linkBond == .pairing else { return }
            sensors[resident]?.cannotBond = true
            sensors[resident]?.bondProblem = "pairing failed (management status \(status)): linked without encryption, unbonded"
            context.logger.notice("a heart-rate sensor could not pair: linked without encryption, shown unbonded",
                               metadata: ["resident": "\(resident)", "sensor": "\(peer)", "status": "\(status)"])
            // The kernel keeps a link whose pairing failed but never resumes its socket (it waits
            // for an encryption that will not come): linked again, at low, after the first back-off.
            if sensors[resident]?.phase == .encrypting { drop(resident, reason: "pairing failed: linking again without encryption", retry: true) }
        case .authenticationFailed(let peer):
            // SensorBonds tells it only while the box's own link to the sensor is being
            // encrypted: a device that connects to the box under the sensor's address and fails
            // must not tell staff the strap lost its bond (re-enrolling it would pair with
            // whoever answers). The socket's EACCES tells the rest.
            guard let resident = resident(with: peer) else { return }
            bondFailed(resident)
        case .rekeyRefused(let peer):
            guard let resident = resident(with: peer) else { return }
            sensors[resident]?.bondFailures += 1
            sensors[resident]?.bondProblem = "the kernel paired afresh with a device at the sensor's address: its key was refused"
            // A link of the box's that came up meanwhile may be the one that paired afresh (the
            // kernel lacked the key): it proves nothing, so it goes.
            if sensors[resident]?.socket != nil { drop(resident, reason: "paired afresh, not with the bond key", retry: true, byTheBox: true) }
        }
    }

    /// A pairing link came up and ended without encryption or a refusal: the sensor ignored the
    /// pairing (the kernel gives up after 30 s). Twice, and it is linked without encryption.
    func pairingUnanswered(_ resident: String) {
        guard var sensor = sensors[resident] else { return }
        sensor.pairingUnanswered += 1
        if sensor.pairingUnanswered >= 2 {
            sensor.cannotBond = true
            sensor.bondProblem = "the sensor did not answer pairing: linked without encryption, unbonded"
            context.logger.notice("a heart-rate sensor did not answer pairing: linked without encryption, shown unbonded",
                               metadata: ["resident": "\(resident)", "sensor": "\(sensor.peer)"])
        }
        sensors[resident] = sensor
    }

    /// The device at a bonded sensor's address failed to prove the bond on this attempt.
    func bondFailed(_ resident: String) {
        guard var sensor = sensors[resident], !sensor.bondFailureCounted else { return }
        sensor.bondFailureCounted = true
        sensor.bondFailures += 1
        sensor.bondProblem = "the device at the sensor's address did not prove the bond: a spoofer, or the strap lost its bond "
            + "(to pair it again, remove the sensor from the resident and add it back)"
        sensors[resident] = sensor
        if sensor.bondFailures == 1 || sensor.bondFailures.isMultiple(of: 100) {
            context.logger.warning("the device at a bonded heart-rate sensor's address did not prove the bond: its readings do not count",
                                metadata: ["resident": "\(resident)", "sensor": "\(sensor.peer)", "failures": "\(sensor.bondFailures)"])
        }
    }
}
