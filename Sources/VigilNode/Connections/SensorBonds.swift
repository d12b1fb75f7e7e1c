import VigilCore
import VigilRadio
import VigilSystem

/// The bonds between the box and residents' heart-rate sensors (decision 0005): the keys, the
/// kernel's management channel that makes and uses them, and what it says about pairing.
///
/// The kernel's security manager pairs and encrypts; no bluetoothd runs on the box, so this does
/// what bluetoothd would: it sets the adapter up (LE on, NoInputNoOutput, Secure Connections), keeps the
/// keys pairing makes in `DATA/sensor-keys` (0600, never in the log, which may go to a hub), and
/// loads them all into the kernel before any sensor is linked — again whenever the adapter
/// reappears, since the kernel holds keys in memory only.
///
/// The adapter is bondable only while the box pairs a sensor: a bondable adapter would also let
/// any phone in range bond with the box (as a peripheral) and leave its key in the kernel's
/// memory. A key the box did not ask for is evicted (the kernel's list replaced by the stored
/// one) once no pairing is under way.
///
/// The contract with `HeartRateSensors`:
/// - `ready(adapter:)` before every connect: false until the kernel has the keys (the commands
///   are answered on the channel; a connect before that would pair afresh with whoever answers);
/// - `expectPairing(peer)` before linking to a sensor without a key, `endPairing(peer)` when that
///   link ends: a key for such a sensor is its bond; a new key for a sensor already bonded, made
///   outside such a link, is a re-pair nobody asked for: it is refused (the kernel's copy replaced
///   by the stored one) and reported;
/// - `keep(_:)` with the enrolled sensors: keys of the others are deleted (a sensor removed from
///   its resident and enrolled again pairs afresh: that is how staff re-enrol a strap whose bond
///   was lost).
final class SensorBonds {
    enum News: Equatable {
        /// Pairing made a key and the box stored it: the sensor is bonded.
        case bonded(LEAddress)
        /// Pairing worked but the sensor does not bond (or gave a debug key): the key lasts one link.
        case notBonded(LEAddress)
        /// Pairing failed (the sensor refused it, or timed out).
        case pairingFailed(LEAddress, status: UInt8)
        /// The link ended because authentication failed: the device at a bonded sensor's address
        /// does not hold the bond's key (a spoofer, or the strap lost its bond).
        case authenticationFailed(LEAddress)
        /// A bonded sensor's key was replaced outside a pairing the box started: refused.
        case rekeyRefused(LEAddress)
        /// The kernel has the keys now: connects may start.
        case ready
    }

    private unowned let context: any NodeContext
    let path: String
    private var channel: ManagementChannel?
    private(set) var keys: [LEAddress: [LongTermKey]] = [:]
    /// Sensors being paired on a link the box opened.
    private var pairing: Set<LEAddress> = []
    /// The adapter whose kernel holds the keys and settings.
    private var preparedIndex: UInt16?
    /// Commands sent to this adapter, Load Long Term Keys not answered yet (since when, monotonic ns).
    private var preparing: (index: UInt16, sinceNanoseconds: UInt64)?
    /// A key came that the box did not ask for: the kernel's list is replaced when no pairing runs.
    private var evictPending = false
    /// Bonded sensors whose key in the kernel may not be the stored one (a re-key was refused and
    /// the reload is not confirmed yet): not linked, and never counted bonded, until it is.
    private var suspect: Set<LEAddress> = []
    /// Adapters powered off and on again because their security manager was missing.
    private var restarted: Set<UInt16> = []
    /// What went wrong last (status shows it).
    private(set) var problem = ""
    var news: (News) -> Void = { _ in }
    /// The box's own link to a sensor (HeartRateSensors): the management channel names only an
    /// address, and a device may connect to the box (it advertises for phones) under a sensor's
    /// address. Its news counts only while the box's own link is at the matching stage.
    enum OwnLink { case none, encrypting, up }
    var ownLink: (LEAddress) -> OwnLink = { _ in .none }

    /// An answer to the setup not come in this long: sent again.
    static let answerTimeoutNanoseconds: UInt64 = 5_000_000_000

    init(context: any NodeContext, dataDirectory: String) {
        self.context = context
        path = StoredSensorKeys.path(in: dataDirectory)
    }

    /// Reads the stored keys and opens the management channel.
    func open() throws(NodeError) {
        try readKeys()
        try openChannel()
    }

    private func readKeys() throws(NodeError) {
        if FileSystem.exists(path) {
            let bytes: [UInt8]
            do { bytes = try FileSystem.readSmallFile(path, limit: SensorKeyFile.maximumBytes) } catch {
                throw .unsupported("cannot read the sensors' keys (\(error)): move \(path) away to pair every sensor afresh")
            }
            let (stored, problems) = SensorKeyFile.parse(String(decoding: bytes, as: UTF8.self))
            for problem in problems {
                context.logger.error("a stored sensor key does not parse: that sensor pairs afresh", metadata: ["file": "\(path)", "problem": "\(problem)"])
            }
            for key in stored where !key.isDebugKey { keys[key.peer, default: []].append(key) }
        }
    }

    private func openChannel() throws(NodeError) {
        let channel: ManagementChannel
        do { channel = try ManagementChannel.open() } catch {
            throw .radio("heart-rate sensors: \(error)")
        }
        guard context.watch(channel.fd, "the management channel", handler: { [unowned self] _ in readEvents() }) else {
            channel.close()
            throw .radio("heart-rate sensors: cannot watch the management channel")
        }
        self.channel = channel
    }

    func close() {
        if let channel {
            context.unwatch(channel.fd, "the management channel")
            channel.close()
        }
        channel = nil
        preparedIndex = nil
        preparing = nil
    }

    /// Whether the box holds a key the kernel uses when the box links to the sensor as central.
    func isBonded(_ peer: LEAddress) -> Bool { keys[peer]?.contains(where: \.servesTheBoxAsCentral) == true }
    /// Whether the kernel's key for the peer may not be the stored one.
    func isSuspect(_ peer: LEAddress) -> Bool { suspect.contains(peer) }

    /// Whether the kernel holds the keys for the adapter with this index; starts setting it up
    /// (or again, when the last try was not answered) when it does not.
    func ready(adapter index: UInt16) -> Bool {
        if preparedIndex == index { return true }
        let now = context.monotonic.nowNanoseconds()
        if let preparing, preparing.index == index, now &- preparing.sinceNanoseconds < Self.answerTimeoutNanoseconds { return false }
        if channel == nil {
            // Closed after a failure: opened again (the caller retries with its back-off).
            do { try openChannel() } catch {
                problem = "the management channel cannot be opened: \(error)"
                return false
            }
        }
        guard let channel else { return false }
        do {
            try channel.send(.setLowEnergy(true), index: index)
            try channel.send(.setBondable(!pairing.isEmpty), index: index)
            try channel.send(.setIOCapabilityNoInputNoOutput, index: index)
            try channel.send(.setSecureConnections(true), index: index)
            try channel.send(.loadLongTermKeys(allKeys), index: index)
            preparing = (index, now)
        } catch {
            // Tried again after the answer timeout, not on every pump.
            preparing = (index, now)
            problem = "cannot set the adapter up for bonding: \(error)"
            context.logger.error("cannot set the adapter up for bonding sensors", metadata: ["error": "\(error)"])
        }
        return false
    }

    /// When a setup sent now is due for another try (nil: none is waiting).
    var retryDueNanoseconds: UInt64? { preparing.map { $0.sinceNanoseconds &+ Self.answerTimeoutNanoseconds } }

    /// A link asked to be encrypted came up unencrypted: the kernel registers its security
    /// manager only when an adapter is powered on through the management channel, and this one
    /// was powered up some other way (the HCIDEVUP ioctl, `hciconfig up`). Powers it off and on
    /// through the channel, once per adapter and run (`mayRestartForSecurityManager`); the radio
    /// recovers as from any power change.
    func mayRestartForSecurityManager(adapter index: UInt16) -> Bool { channel != nil && !restarted.contains(index) }

    func restartForSecurityManager(adapter index: UInt16) {
        guard let channel, restarted.insert(index).inserted else { return }
        context.logger.warning("the adapter has no security manager (powered up outside the management channel): powering it off and on to bond sensors",
                            metadata: ["adapter": "hci\(index)"])
        do {
            try channel.send(.setPowered(false), index: index)
            try channel.send(.setPowered(true), index: index)
        } catch {
            context.logger.error("cannot power-cycle the adapter", metadata: ["error": "\(error)"])
        }
        if preparedIndex == index { preparedIndex = nil }
        if preparing?.index == index { preparing = nil }
    }

    func expectPairing(_ peer: LEAddress) {
        let first = pairing.isEmpty
        pairing.insert(peer)
        if first { setBondable(true) }
    }

    func endPairing(_ peer: LEAddress) {
        guard pairing.remove(peer) != nil, pairing.isEmpty else { return }
        setBondable(false)
        if evictPending { reload() }
    }

    private func setBondable(_ on: Bool) {
        guard let index = preparedIndex ?? preparing?.index, let channel else { return }
        do { try channel.send(.setBondable(on), index: index) } catch {
            context.logger.error("cannot set the adapter bondable", metadata: ["on": "\(on)", "error": "\(error)"])
        }
    }

    /// Deletes the keys of sensors no longer enrolled.
    func keep(_ enrolled: Set<LEAddress>) {
        let gone = keys.keys.filter { !enrolled.contains($0) }
        guard !gone.isEmpty else { return }
        for peer in gone { keys[peer] = nil }
        context.logger.info("sensors' bond keys deleted", metadata: ["sensors": "\(gone.map(\.description).sorted())"])
        save()
        reload()
    }

    private var allKeys: [LongTermKey] { keys.values.flatMap { $0 }.sorted { ($0.peer.value, $0.central) < ($1.peer.value, $1.central) } }

    /// The kernel's keys replaced by the stored ones (not while a pairing runs: its key would go
    /// from under it).
    private func reload() {
        guard pairing.isEmpty else { evictPending = true; return }
        evictPending = false
        guard let index = preparedIndex, let channel else { return }
        do { try channel.send(.loadLongTermKeys(allKeys), index: index) } catch {
            // Not known to hold the right keys any more: set up again before the next connect.
            preparedIndex = nil
            context.logger.error("cannot load the sensors' keys", metadata: ["error": "\(error)"])
        }
    }

    private func save() {
        do {
            try FileSystem.replaceDurably(path, contents: Array(SensorKeyFile.format(allKeys).utf8))
        } catch {
            problem = "cannot store the sensors' keys: \(error)"
            context.logger.error("cannot store the sensors' bond keys: a sensor bonded now pairs afresh after a restart",
                              metadata: ["file": "\(path)", "error": "\(error)"])
        }
    }

    // MARK: - Events

    private func readEvents() {
        guard let channel else { return }
        for _ in 0 ..< 64 {   // a fair share of the loop per wake-up
            let packet: [UInt8]?
            do { packet = try channel.receive() } catch {
                context.logger.error("the management channel failed; it is opened again before the next link", metadata: ["error": "\(error)"])
                problem = "the management channel failed: \(error)"
                return close()
            }
            guard let packet else { return }
            do { handle(try ManagementEvent.parse(packet)) } catch {
                context.logger.warning("an unreadable management event", metadata: ["error": "\(error)"])
            }
        }
    }

    private func handle(_ event: ManagementEvent) {
        switch event {
        case .commandComplete(let index, let opcode, let status), .commandStatus(let index, let opcode, let status):
            guard preparing?.index == index || preparedIndex == index else { return }
            if opcode == ManagementCommand.loadLongTermKeys([]).opcode {
                if status == 0 {
                    // The kernel holds exactly the stored keys now.
                    suspect.removeAll()
                    if preparing?.index == index {
                        preparing = nil
                        preparedIndex = index
                        problem = ""
                        news(.ready)
                    }
                } else {
                    // Nothing links to a sensor until the kernel has its key: try again later.
                    preparing = nil
                    preparedIndex = nil
                    problem = "the kernel refused the sensors' keys (management status \(status))"
                    context.logger.error("the kernel refused the sensors' bond keys", metadata: ["status": "\(status)"])
                }
            } else if status != 0 {
                // Secure Connections is refused by controllers without it: pairing is then legacy.
                context.logger.notice("the adapter refused a bonding setting", metadata: ["opcode": "\(opcode)", "status": "\(status)"])
            }
        case .indexAdded(let index), .indexRemoved(let index):
            // An adapter that comes back holds no keys: set it up again before the next connect.
            if preparedIndex == index { preparedIndex = nil }
            if preparing?.index == index { preparing = nil }
        case .newLongTermKey(let index, let storeHint, let key):
            guard index == preparedIndex else { return }
            newKey(key, storeHint: storeHint)
        case .authenticationFailed(let index, let peer, let status):
            guard index == preparedIndex, ownLink(peer) == .encrypting else { return }
            if pairing.contains(peer) && !isBonded(peer) {
                news(.pairingFailed(peer, status: status))
            } else if isBonded(peer) {
                news(.authenticationFailed(peer))
            }
        case .confirmationRequested(let index, let peer):
            // Only a pairing the box started goes on: a phone pairing with the box is refused.
            // Other adapters' pairings are none of the box's business.
            guard let channel, index == preparedIndex else { return }
            // Its own: the box's link to the sensor is up and being encrypted right now.
            let accept = pairing.contains(peer) && !isBonded(peer) && ownLink(peer) == .encrypting
            do { try channel.send(.confirmPairing(peer, accept: accept), index: index) } catch {
                context.logger.error("cannot answer a pairing's confirmation", metadata: ["error": "\(error)"])
            }
            if !accept { context.logger.info("a pairing the box did not start was refused", metadata: ["peer": "\(peer)"]) }
        case .deviceDisconnected(let index, let peer, let reason):
            guard index == preparedIndex, reason == 4, isBonded(peer), ownLink(peer) == .encrypting else { return }
            news(.authenticationFailed(peer))
        case .other:
            break
        }
    }

    private func newKey(_ key: LongTermKey, storeHint: Bool) {
        let peer = key.peer
        if pairing.contains(peer) && ownLink(peer) != .none {
            guard storeHint, !key.isDebugKey else { return news(.notBonded(peer)) }
            // Legacy pairing gives a key per role; only the one the kernel uses when the box is
            // the central proves anything to the box (the other is evicted after the pairing).
            guard key.servesTheBoxAsCentral else {
                evictPending = true
                return
            }
            let fresh = !isBonded(peer)
            keys[peer] = [key]
            save()
            if fresh { news(.bonded(peer)) }
        } else if let stored = keys[peer] {
            guard !stored.contains(key) else { return }
            // A legacy pairing's other key, late: never used for the box's links to the sensor.
            guard key.servesTheBoxAsCentral else { return reload() }
            context.logger.warning("a bonded sensor paired again with a new key outside the box's own pairing: refused",
                                metadata: ["sensor": "\(peer)"])
            suspect.insert(peer)
            reload()
            news(.rekeyRefused(peer))
        } else {
            // A device that paired with the box (a phone): its key goes, whether it bonded or not,
            // so none is ever used for a sensor's address.
            reload()
        }
    }
}

extension SensorLinks.Sensor {
    /// The sensor's address as the radio names it.
    public var address: LEAddress { LEAddress(value: peer, kind: random ? .random : .public) }
}

/// The key file (`DATA/sensor-keys`) for a CLI with no node running.
public enum StoredSensorKeys {
    public static func path(in dataDirectory: String) -> String { dataDirectory + "/sensor-keys" }

    /// Deletes the stored keys of sensors not in `enrolled`, as a running node's `keep` does: a
    /// resident's sensor removed or changed while the box was off must not leave its key behind,
    /// or enrolling the sensor again would trust the old bond instead of pairing afresh. Every
    /// other line stays as it was (comments, and lines that do not parse: the node reports
    /// those). Refused when the file belongs to another user than the caller (the CLI run as
    /// root would leave a file the node cannot read). Returns the sensors whose keys went.
    public static func delete(notIn enrolled: Set<LEAddress>, dataDirectory: String) throws(SystemError) -> [LEAddress] {
        let path = path(in: dataDirectory)
        guard FileSystem.exists(path) else { return [] }
        let text = String(decoding: try FileSystem.readSmallFile(path, limit: SensorKeyFile.maximumBytes), as: UTF8.self)
        var kept: [Substring] = []
        var gone: Set<LEAddress> = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if let key = SensorKeyFile.parse(String(line)).keys.first, !enrolled.contains(key.peer) {
                gone.insert(key.peer)
            } else {
                kept.append(line)
            }
        }
        guard !gone.isEmpty else { return [] }
        let owner = try FileSystem.entry(path).owner
        guard owner == effectiveUserID() else {
            throw SystemError("rewrite (it belongs to uid \(owner): run this as that user)", path, errno: .accessDenied)
        }
        try FileSystem.replaceDurably(path, contents: Array(kept.joined(separator: "\n").utf8))
        return gone.sorted { $0.value < $1.value }
    }
}
