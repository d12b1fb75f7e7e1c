import Foundation
import Logging
import VigilBoard
import VigilExposure
import VigilRadio
import VigilSystem

/// Everything a node needs before its loop can run, made in one place: the data directory's
/// lock, the node id, the secrets, the radio and board adapters, and the air link with its
/// keys. Nothing here runs; a failure is a clear `NodeError` and leaves nothing open.
struct NodeBootstrap {
    let nodeID: UInt64
    let radio: any RadioAdapter
    let board: any BoardAdapter
    let air: AirLink
    let callbackKey: CallbackKey

    init(configuration: NodeConfiguration, clock: any WallClock, monotonic: any MonotonicClock, logger: Logger,
         radio: (any RadioAdapter)?, board: (any BoardAdapter)?) throws(NodeError) {
        nodeID = try Self.loadNodeID(directory: configuration.dataDirectory)
        do {
            self.radio = try radio ?? Self.makeRadio(configuration, clock: clock, monotonic: monotonic)
            self.board = try board ?? Self.makeBoard(configuration, monotonic: monotonic)
        } catch let error as NodeError {
            throw error
        } catch let error as SystemError {
            throw .system(error)
        } catch let error as BoardError {
            throw .board(error.description)
        } catch {
            throw .radio("\(error)")
        }
        air = try Self.makeAirLink(configuration, nodeID: nodeID, logger: logger)
        callbackKey = try CallbackKey.load(directory: configuration.dataDirectory, logger: logger)
    }

    /// Creates the data directory if needed and takes its lock: one node per directory.
    static func lockDataDirectory(_ dir: String) throws(NodeError) -> FileDescriptor {
        do {
            try FileSystem.createDirectory(dir)
            return try FileSystem.lockExclusive(dir + "/node.lock")
        } catch {
            if error.errno == .wouldBlock { throw .alreadyRunning(directory: dir) }
            throw .system(error)
        }
    }

    /// The radio the configuration names: the simulation, or a BlueZ adapter.
    static func makeRadio(_ configuration: NodeConfiguration, clock: any WallClock, monotonic: any MonotonicClock) throws -> any RadioAdapter {
        if configuration.radio == "sim" {
            return try SimulatedRadio(settings: configuration.simulation, clock: clock, monotonic: monotonic)
        }
        var hci = configuration.hci
        hci.adapter = configuration.radio
        if let path = hci.snoopPath, !path.hasPrefix("/") { hci.snoopPath = configuration.dataDirectory + "/" + path }
        return try HCIRadio(settings: hci, clock: clock, monotonic: monotonic)
    }

    /// The board the profile names: the simulation, or a GPIO chip through libgpiod.
    static func makeBoard(_ configuration: NodeConfiguration, monotonic: any MonotonicClock) throws -> any BoardAdapter {
        configuration.board.chip == "sim" ? try SimulatedBoard(profile: configuration.board, monotonic: monotonic)
            : try GPIOBoard(profile: configuration.board, monotonic: monotonic)
    }

    /// The air link with the shelter key (if installed) and the box's presence identity.
    static func makeAirLink(_ configuration: NodeConfiguration, nodeID: UInt64, logger: Logger) throws(NodeError) -> AirLink {
        let dir = configuration.dataDirectory
        do {
            let keyPath = configuration.airAlerts.keyFile.hasPrefix("/") ? configuration.airAlerts.keyFile
                : dir + "/" + configuration.airAlerts.keyFile
            let key = try NodeSecrets.shelterKey(path: keyPath).map { bytes throws in try AlertFrameKey(shelterKey: bytes) }
            if key != nil, NodeSecrets.readableByOthers(keyPath) {
                logger.warning("the shelter key is readable by other users; chmod 600 it", metadata: ["path": "\(keyPath)"])
            }
            // The box's own key (made at first start), its certificate and the network's key.
            let credentials = try BoxKeyFiles.credentials(directory: dir, configuredNetworkKey: configuration.airAlerts.networkKey)
            let whyNotSigning = credentials.whyNotSigning(nodeID: nodeID)
            if let whyNotSigning {
                logger.notice("this box does not sign its alert frames: \(whyNotSigning)", metadata: ["box_key": "\(dir)/\(BoxKeyFiles.keyName)"])
            }
            if key == nil, whyNotSigning != nil {
                logger.warning("no shelter key and no certificate: this box neither sends nor accepts alerts over the air (docs/signed-frames.md; or `vigil radio keygen` for a shared key)",
                               metadata: ["expected": "\(keyPath)"])
            }
            if key != nil, configuration.airAlerts.requireSigned {
                logger.notice("radio.require_signed: shared-key frames heard are refused; this box still sends them for boxes without signing")
            }
            // With GAEN advertising the address rotates with the RPI, every 10-minute interval.
            let rotation = configuration.exposure.advertise ? UInt32(Exposure.intervalSeconds) : configuration.presence.rotationSeconds
            let presence = configuration.presence.enabled || configuration.exposure.advertise
                ? try PresenceIdentity(nodeSecret: NodeSecrets.nodeSecret(directory: dir), rotationSeconds: rotation)
                : nil
            var air = AirLink(key: key, settings: configuration.airAlerts, presence: presence, nodeID: nodeID, credentials: credentials)
            if configuration.exposure.advertise {
                air.exposureKeys = try ExposureKeyStore(directory: dir)
                air.exposureTxPower = configuration.exposure.txPowerDBm
                air.exposureRetentionDays = UInt32(configuration.exposure.contacts.retentionMicroseconds / 86_400_000_000)
            }
            return air
        } catch let error as NodeError {
            throw error
        } catch {
            throw .radio("\(error)")
        }
    }

    /// The node's id, made on first start and kept in `DATA/node-id`.
    static func loadNodeID(directory: String) throws(NodeError) -> UInt64 {
        let path = directory + "/node-id"
        var id = (secureRandomUInt64() & 0xFFFF_FFFF) | 1
        if let text = try? String(contentsOfFile: path, encoding: .utf8),
           let stored = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines), radix: 16), stored != 0 {
            // 32 bits: the id travels in every alert frame (docs/radio.md "Alert frames"). A node made
            // before alerts went on the air has a 64-bit id: it is folded to 32 bits once, and
            // its alert counter starts again under the new id (so no alert id repeats).
            guard stored > 0xFFFF_FFFF else { return stored }
            id = (stored ^ (stored >> 32)) & 0xFFFF_FFFF | 1
        }
        do {
            try (String(id, radix: 16) + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw .unsupported("cannot write \(path): \(error.localizedDescription)")
        }
        return id
    }
}

/// The node's id as the hub and other boxes know it (`DATA/node-id`, made on first use).
public enum NodeIdentity {
    public static func load(dataDirectory: String) throws(NodeError) -> UInt64 {
        try NodeBootstrap.loadNodeID(directory: dataDirectory)
    }
}

/// The secrets a node keeps in its data directory.
enum NodeSecrets {
    /// 32 random bytes that seed this box's rotating presence identity; made on first start.
    /// A secret that exists but cannot be read is an error, never silently replaced (the box's
    /// identity would change under it).
    static func nodeSecret(directory: String) throws -> [UInt8] {
        let path = directory + "/node-secret"
        if FileSystem.exists(path) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8), let bytes = hexBytes(text), bytes.count == 32 else {
                throw NodeError.unsupported("\(path) is not a node secret (64 hex digits); move it away to make a new one")
            }
            return bytes
        }
        var bytes: [UInt8] = []
        for _ in 0..<4 { withUnsafeBytes(of: secureRandomUInt64()) { bytes += $0 } }
        do {
            try FileSystem.createExclusive(path, contents: Array((hex(bytes) + "\n").utf8))
        } catch {
            throw NodeError.system(error)
        }
        return bytes
    }

    /// The shelter key: 64 hex digits. nil when the file does not exist; an error when it
    /// exists but is not a key (a half-copied file must not silently switch alerts off).
    static func shelterKey(path: String) throws -> [UInt8]? {
        guard FileSystem.exists(path) else { return nil }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw NodeError.unsupported("cannot read the shelter key \(path)")
        }
        guard let bytes = hexBytes(text), bytes.count == 32 else {
            throw NodeError.unsupported("the shelter key \(path) must hold 64 hex digits (32 bytes); make one with `vigil radio keygen`")
        }
        return bytes
    }

    /// Whether a key file can be read by others than its owner (worth a warning at start).
    static func readableByOthers(_ path: String) -> Bool {
        (FileSystem.permissions(path) ?? 0) & 0o077 != 0
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        Hex.decode(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }
}
