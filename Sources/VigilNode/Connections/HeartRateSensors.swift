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

    // Internal, not private: HeartRateSensorLinks.swift (the link's steps) shares them. Loop-confined.
    var sensors: [String: Sensor] = [:]
    var residentByFD: [Int32: String] = [:]
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
    func pump() {
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
