import VigilCore
import VigilEvents
import VigilGATT
import VigilRadio
import VigilSystem

/// Residents' heart-rate sensors (`vigil resident set ID --hr-sensor ADDR`): the box links to
/// each as a GATT central, finds the Heart Rate service (0x180D), subscribes to its measurement
/// (0x2A37) and logs readings as check-ins from the heart rate, with the value and the flags
/// byte, which the ladder judges (`EscalationBook.isPositive`: in pulse mode, a plausible reading
/// with skin contact, or from a sensor that cannot sense contact, postpones it).
///
/// A sensor that drops or cannot be reached is tried again with back-off (2 s doubling to 5 min;
/// from 2 s again only after a link that stayed up a minute and was not closed by the box, so
/// a device that links and drops at once, or misbehaves, cannot make the box write its link and
/// first reading to the card every few seconds). Silence tells the ladder nothing: no event is
/// made for a sensor that says nothing, so a resident whose sensor fell off is escalated like
/// one whose pulse stopped. Links opening and closing are `LinkChanged` events (role sensor);
/// failed attempts are not logged (a vanished sensor would write the card every few minutes
/// for nothing), they are shown by `vigil status`.
///
/// Bonds (decision 0005, `SensorBonds`): a sensor is paired at its first link after enrolment
/// (Just Works, the kernel's security manager) and its key kept; afterwards only a link encrypted
/// with that key counts, so a device that only copies the sensor's address cannot feed the
/// ladder calm readings. A sensor that cannot pair is linked without encryption and shown
/// "unbonded" (its readings still count: many straps never bond, and a resident without readings
/// is worse off). Each sensor link's event says whether it was bonded.
///
/// Bounded: at most `maximumSensors` sensors linked (residents sorted by id); one connection
/// attempt at a time (the kernel makes LE connections one by one); a sensor notifies about once
/// a second, and a reading is logged at most every `heartRateLogInterval` (or a third of the
/// resident's interval, if shorter: steady readings always keep a live pulse's ladder quiet), or
/// at once (but not more than once a second) when it changes from a sign of life to none or back; a link gets at
/// most 64 PDUs per wake-up; a sensor breaking the protocol `violationLimit` times is dropped.
final class HeartRateSensors: NodeComponent {
    unowned let context: any NodeContext
    let adapter: LinkAdapter
    /// Counts what sensors break (shared with the other links).
    let ledger: LinkLedger
    /// Where the sensors' bond keys are kept.
    let dataDirectory: String
    let settings: ConnectionSettings
    static let timer = Scheduler.Timer("heart-rate sensors")
    /// From the connect to the subscription (the kernel gives up connecting after 20 s).
    static let setupTimeoutNanoseconds: UInt64 = 45_000_000_000
    /// The same while pairing: 20 s to connect and the security manager's 30 s.
    static let pairingTimeoutNanoseconds: UInt64 = 75_000_000_000
    static let retryBaseNanoseconds: UInt64 = 2_000_000_000
    static let retryMaximumNanoseconds: UInt64 = 300_000_000_000
    /// Readings that change between a sign of life and none are logged at most this often.
    static let changeGapNanoseconds: UInt64 = 1_000_000_000
    /// A link up this long, not closed by the box, starts the back-off again from its base.
    static let stableLinkNanoseconds: UInt64 = 60_000_000_000

    enum Phase: String { case waiting, connecting, encrypting, exchangingMTU = "exchanging MTU", discovering, subscribing, linked }

    /// What a link to the sensor must prove.
    enum Bond: String {
        /// No key yet: the next link pairs (and keeps the key if the sensor bonds).
        case pairing
        /// The box holds the sensor's key: only a link encrypted with it counts.
        case bonded
        /// The sensor could not pair or does not bond: linked without encryption.
        case unbonded
    }

    struct Sensor {
        let resident: String
        let peer: LEAddress
        var phase = Phase.waiting
        var socket: ATTSocket?
        var bearer = ATTBearer(server: nil)
        var measurement: UInt16 = 0
        var backoff = Backoff(base: HeartRateSensors.retryBaseNanoseconds, max: HeartRateSensors.retryMaximumNanoseconds)
        /// Waiting: when to try again; setting up: when to give up (monotonic ns).
        var dueNanoseconds: UInt64 = 0
        var lastError = ""
        /// Its opening was logged, so its closing must be.
        var loggedOpen = false
        var lastLoggedNanoseconds: UInt64?
        var lastLoggedPositive = false
        var strikes = 0
        var readingsHeard: UInt64 = 0
        var readingsLogged: UInt64 = 0
        var readingsMalformed: UInt64 = 0
        var attempts: UInt64 = 0
        /// When the link came up (monotonic ns; 0: not up).
        var linkedAtNanoseconds: UInt64 = 0
        /// The sensor could not pair, or paired without bonding: linked without encryption
        /// from now on (until the box restarts or staff enrol the sensor again).
        var cannotBond = false
        /// What the link being set up asked for, and whether the kernel says it is encrypted.
        var linkBond = Bond.pairing
        var encrypted = false
        /// Why the device at the sensor's address is not trusted (empty: nothing wrong), and
        /// how many times it failed to prove the bond.
        var bondProblem = ""
        var bondFailures: UInt64 = 0
        /// The adapter the attempt uses.
        var adapterIndex: UInt16 = 0
        var pairingUnanswered = 0
        /// This attempt's failure to prove the bond is counted (the channel's news and the
        /// socket's error may both tell it).
        var bondFailureCounted = false

        var isSettingUp: Bool { phase != .waiting && phase != .linked }
    }

    private var sensors: [String: Sensor] = [:]
    private var residentByFD: [Int32: String] = [:]
    /// Residents' sensors changed in the log: compared with the links on the next reconcile.
    private var wantedChanged = true
    /// Residents whose sensor is not linked because `maximumSensors` are.
    private(set) var overLimit: [String] = []
    private var pumping = false
    let bonds: SensorBonds
    /// The management channel could not be opened: nothing is linked (a link at MEDIUM without
    /// the keys loaded would pair with whoever answers).
    private var bondsUnavailable: String?

    /// Whether sensors are bonded (`connections.sensor_bonds`, `auto` asking the kernel).
    let bonding: Bool
    /// Why `auto` links sensors without bonds (status shows it), nil when it bonds.
    let bondsOff: String?
    /// Why this kernel must not bond (`KernelBondSupport`), asked once; nil when bonds are off.
    private let kernelProblem: String?

    init(context: any NodeContext, settings: ConnectionSettings, adapter: LinkAdapter, ledger: LinkLedger, dataDirectory: String) {
        self.context = context
        self.settings = settings
        self.adapter = adapter
        self.ledger = ledger
        self.dataDirectory = dataDirectory
        bonds = SensorBonds(context: context, dataDirectory: dataDirectory)
        kernelProblem = settings.sensorBonds == .off ? nil : KernelBondSupport.problem(release: kernelRelease())
        switch settings.sensorBonds {
        case .on: (bonding, bondsOff) = (true, nil)
        case .off: (bonding, bondsOff) = (false, nil)
        case .auto: (bonding, bondsOff) = (kernelProblem == nil, kernelProblem.map { "not bonded: \($0) (connections.sensor_bonds: auto)" })
        }
    }

    /// Why sensors cannot be linked on this box at all (nil: they can).
    private var unavailable: String? {
        if !settings.heartRateSensors { return "heart-rate sensors are off (connections.heart_rate_sensors)" }
        if !adapter.canLink {
            return "heart-rate sensors need a BlueZ adapter on the raw channel"
        }
        return nil
    }

    func start() throws(NodeError) {
        // Links of the last run are gone: the log says so, so nothing shows a sensor linked.
        for sensor in context.projections.sensors.sorted where sensor.linked {
            appendLink(resident: sensor.resident, peer: sensor.address,
                       open: false, reason: "the box restarted")
        }
        context.scheduler.register(Self.timer) { [unowned self] in pump() }
        if let why = unavailable, !context.projections.sensors.byResident.isEmpty {
            context.logger.warning("residents have heart-rate sensors, but the box will not link to them", metadata: ["why": "\(why)"])
        }
        if let bondsOff, unavailable == nil, !context.projections.sensors.byResident.isEmpty {
            context.logger.warning("heart-rate sensors are linked without bonds: any device at a sensor's address is believed", metadata: ["why": "\(bondsOff)"])
        }
        guard unavailable == nil, bonding else { return }
        if let problem = kernelProblem {
            // Staff asked for bonds outright: linking without them would be a silent downgrade.
            bondsUnavailable = "cannot bond sensors: \(problem) (connections.sensor_bonds: auto or false links them without bonds)"
            context.logger.error("heart-rate sensors cannot be bonded on this kernel, so none is linked", metadata: ["why": "\(problem)"])
            return
        }
        bonds.news = { [unowned self] news in heard(news) }
        bonds.ownLink = { [unowned self] peer in
            guard let sensor = sensors.values.first(where: { $0.peer == peer }), sensor.socket != nil else { return .none }
            switch sensor.phase {
            case .waiting, .connecting: return .none
            case .encrypting: return .encrypting
            case .exchangingMTU, .discovering, .subscribing, .linked: return .up
            }
        }
        do { try bonds.open() } catch {
            bondsUnavailable = "cannot bond sensors: \(error)"
            context.logger.error("heart-rate sensors cannot be bonded, so none is linked", metadata: ["error": "\(error)"])
        }
    }

    func stop() {
        for resident in Array(sensors.keys) { drop(resident, reason: "the box stopped", retry: false) }
        context.scheduler.cancel(Self.timer)
        bonds.close()
    }

    func applied(_ event: Event) {
        switch event.body {
        case .residentEnrolled, .residentUpdated, .residentRemoved: wantedChanged = true
        default: break
        }
    }

    func reconcile() {
        // A stopping node links to nothing more (events are still applied until it finishes).
        guard wantedChanged, !context.stopping else { return }
        wantedChanged = false
        let enrolled = context.projections.sensors.sorted
        // Keys of sensors no longer enrolled go (one enrolled again pairs afresh), whether or
        // not this box bonds now: a key left while bonds were off would be trusted once they
        // are on again.
        let enrolledPeers = Set(enrolled.map(\.address))
        if bonding && unavailable == nil && bondsUnavailable == nil {
            bonds.keep(enrolledPeers)
        } else {
            do { _ = try StoredSensorKeys.delete(notIn: enrolledPeers, dataDirectory: dataDirectory) } catch {
                context.logger.error("cannot delete the bond keys of sensors no longer enrolled", metadata: ["error": "\(error)"])
            }
        }
        guard unavailable == nil, bondsUnavailable == nil else { return }
        let wanted = enrolled.prefix(settings.maximumSensors)
        overLimit = enrolled.dropFirst(settings.maximumSensors).map(\.resident)
        var keep: Set<String> = []
        for w in wanted {
            let peer = w.address
            keep.insert(w.resident)
            if let current = sensors[w.resident], current.peer == peer { continue }
            if sensors[w.resident] != nil { drop(w.resident, reason: "the resident's sensor changed", retry: false) }
            sensors[w.resident] = Sensor(resident: w.resident, peer: peer, dueNanoseconds: context.monotonic.nowNanoseconds())
        }
        for resident in Array(sensors.keys) where !keep.contains(resident) {
            drop(resident, reason: "the resident no longer has this sensor", retry: false)
        }
        pump()
    }

    // MARK: - Attempts and timers

    /// Starts the attempt that is due (one at a time), gives up setups past their time, and arms
    /// the timer for the next of either.
    private func pump() {
        // A drop below pumps too; the outer pump goes on and arms the timer once.
        guard !pumping, !context.stopping else { return }
        pumping = true
        defer { pumping = false }
        let now = context.monotonic.nowNanoseconds()
        for (resident, sensor) in sensors where sensor.isSettingUp && sensor.dueNanoseconds <= now {
            drop(resident, reason: "no link within \((sensor.linkBond == .pairing ? Self.pairingTimeoutNanoseconds : Self.setupTimeoutNanoseconds) / 1_000_000_000) s", retry: true)
        }
        if !sensors.values.contains(where: { $0.phase == .connecting }),
           let next = sensors.values.filter({ $0.phase == .waiting && $0.dueNanoseconds <= now })
               .min(by: { ($0.dueNanoseconds, $0.resident) < ($1.dueNanoseconds, $1.resident) }) {
            connect(next.resident)
        }
        // Waiting ones behind a connection attempt start when it ends (its end pumps again).
        let connecting = sensors.values.contains { $0.phase == .connecting }
        var due = sensors.values.filter { $0.isSettingUp || ($0.phase == .waiting && !connecting) }.map(\.dueNanoseconds).min()
        // Waiting for the kernel to take the keys: its answer pumps, or the setup is sent again.
        // Only while it is ahead: one past is sent again by the next connect (which sets that
        // sensor's due time), so counting it would arm the timer at "now" again and again.
        if let retry = bonds.retryDueNanoseconds, retry > now { due = min(due ?? retry, retry) }
        if let due { context.scheduler.schedule(Self.timer, atNanoseconds: max(due, now)) } else { context.scheduler.cancel(Self.timer) }
    }

    private func connect(_ resident: String) {
        guard var sensor = sensors[resident] else { return }
        sensor.attempts += 1
        let socket: ATTSocket
        do {
            guard let adapter = try self.adapter.find() else {
                sensors[resident] = sensor
                return drop(resident, reason: "no adapter \(self.adapter.radio)", retry: true)
            }
            // The kernel must hold the stored keys first: a link asked to be encrypted to a sensor
            // whose key it lacks pairs afresh with whoever answers. `.ready` pumps again.
            guard !bonding || bonds.ready(adapter: adapter.id) else {
                sensor.attempts -= 1
                sensor.dueNanoseconds = bonds.retryDueNanoseconds ?? context.monotonic.nowNanoseconds() &+ Self.retryBaseNanoseconds
                sensors[resident] = sensor
                return
            }
            if bonding && bonds.isSuspect(sensor.peer) {
                sensor.attempts -= 1
                sensor.dueNanoseconds = context.monotonic.nowNanoseconds() &+ Self.retryBaseNanoseconds
                sensors[resident] = sensor
                return
            }
            sensor.adapterIndex = adapter.id
            sensor.linkBond = !bonding ? .unbonded : bonds.isBonded(sensor.peer) ? .bonded : sensor.cannotBond ? .unbonded : .pairing
            if sensor.linkBond == .pairing { bonds.expectPairing(sensor.peer) }
            // Linked at low, then encrypted (`startEncryption`): the kernel pairs or uses the key.
            socket = try ATTSocket.connect(from: LEAddress(value: adapter.address, kind: .public), to: sensor.peer)
        } catch {
            bonds.endPairing(sensor.peer)
            sensors[resident] = sensor
            return drop(resident, reason: "could not connect: \(error)", retry: true)
        }
        let fd = socket.fd
        guard context.watch(fd, "a heart-rate sensor", events: Epoll.writable | Epoll.readable, handler: { [unowned self] events in ready(fd, events) }) else {
            socket.close()
            bonds.endPairing(sensor.peer)
            sensors[resident] = sensor
            return drop(resident, reason: "cannot watch the link", retry: true)
        }
        sensor.socket = socket
        sensor.phase = .connecting
        sensor.bearer = ATTBearer(server: nil)
        sensor.strikes = 0
        sensor.encrypted = false
        sensor.bondFailureCounted = false
        sensor.dueNanoseconds = context.monotonic.nowNanoseconds()
            &+ (sensor.linkBond == .pairing ? Self.pairingTimeoutNanoseconds : Self.setupTimeoutNanoseconds)
        sensors[resident] = sensor
        residentByFD[fd] = resident
    }

    // MARK: - The link

    private func ready(_ fd: Int32, _ events: UInt32) {
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

    private func start(_ resident: String, _ procedure: GATTClient.Procedure) {
        guard var bearer = sensors[resident]?.bearer, let started = bearer.start(procedure) else {
            return drop(resident, reason: "too many requests queued on the link", retry: true)
        }
        sensors[resident]?.bearer = bearer
        for output in started.outputs { handle(resident, .client(output)) }
    }

    private func handle(_ resident: String, _ output: ATTBearer.Output) {
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
    private func advance(_ resident: String, _ result: GATTClient.Result) {
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
    private func reading(_ resident: String, _ value: [UInt8]) {
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

    private func strike(_ resident: String, _ what: String) {
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
    private func drop(_ resident: String, reason: String, retry: Bool, byTheBox: Bool = false) {
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

    private func appendLink(resident: String, peer: LEAddress, open: Bool, reason: String, bonded: Bool = false) {
        var change = LinkChanged()
        change.bonded = bonded
        change.peer = peer.value
        change.peerType = peer.kind == .random ? .addressRandom : .addressPublic
        change.open = open
        change.role = .sensor
        change.reason = reason
        change.resident = resident
        context.append(.linkChanged(change), time: nil)
    }

    // MARK: - Bonds

    private func resident(with peer: LEAddress) -> String? {
        sensors.values.first { $0.peer == peer }?.resident
    }

    private func heard(_ news: SensorBonds.News) {
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
    private func pairingUnanswered(_ resident: String) {
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
    private func bondFailed(_ resident: String) {
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

    // MARK: - Status

    var status: [SensorStatus] {
        let now = context.monotonic.nowNanoseconds()
        var out = sensors.values.sorted { $0.resident < $1.resident }.map { s in
            SensorStatus(resident: s.resident, sensor: s.peer.description, state: s.phase.rawValue,
                         retryInSeconds: s.phase == .waiting ? Double(s.dueNanoseconds > now ? s.dueNanoseconds - now : 0) / 1e9 : nil,
                         lastError: s.lastError, attempts: s.attempts, readingsHeard: s.readingsHeard, readingsLogged: s.readingsLogged,
                         readingsMalformed: s.readingsMalformed, bond: bondText(s),
                         bondProblem: bondsUnavailable ?? bondsOff ?? (s.bondProblem.isEmpty ? bonds.problem : s.bondProblem),
                         bondFailures: s.bondFailures)
        }
        let why = unavailable
        for sensor in context.projections.sensors.sorted where sensors[sensor.resident] == nil {
            out.append(SensorStatus(resident: sensor.resident, sensor: sensor.address.description,
                                    state: "not linked", retryInSeconds: nil,
                                    lastError: why ?? (overLimit.contains(sensor.resident) ? "over connections.max_sensors" : ""),
                                    attempts: 0, readingsHeard: 0, readingsLogged: 0, readingsMalformed: 0,
                                    bond: !bonding ? "unbonded" : bonds.isBonded(sensor.address) ? "bonded" : "not bonded yet",
                                    bondProblem: bondsUnavailable ?? bondsOff ?? "", bondFailures: 0))
        }
        return out
    }

    /// "bonded" (a link counts only when encrypted with the stored key), "unbonded" (linked, or
    /// to be linked, without encryption), or "not bonded yet" (the next link pairs).
    private func bondText(_ s: Sensor) -> String {
        guard bonding else { return "unbonded" }
        if bonds.isSuspect(s.peer) { return "bonded, key in doubt (reloading)" }
        if s.phase == .linked { return s.encrypted && bonds.isBonded(s.peer) ? "bonded" : "unbonded" }
        if bonds.isBonded(s.peer) { return "bonded" }
        return s.cannotBond ? "unbonded" : "not bonded yet"
    }
}

/// A resident's heart-rate sensor as `vigil status` shows it.
public struct SensorStatus: Sendable, Codable, Equatable {
    public var resident: String
    public var sensor: String
    /// waiting, connecting, exchanging MTU, discovering, subscribing, linked, or not linked.
    public var state: String
    /// Waiting: seconds until the next attempt.
    public var retryInSeconds: Double?
    /// Why the last attempt or link ended (empty: nothing went wrong).
    public var lastError: String
    public var attempts: UInt64
    /// Measurements received, and those logged as check-ins (the rest were within
    /// `connections.heart_rate_every` of a logged one and said the same).
    public var readingsHeard: UInt64
    public var readingsLogged: UInt64
    /// Measurements that did not parse (each a violation).
    public var readingsMalformed: UInt64
    /// "bonded", "unbonded" or "not bonded yet" (decision 0005).
    public var bond: String
    /// Why the device at the sensor's address is not trusted, or the sensor is unbonded (empty:
    /// nothing wrong), and how often it failed to prove the bond.
    public var bondProblem: String
    public var bondFailures: UInt64
}
