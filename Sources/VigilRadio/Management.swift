// The kernel's Bluetooth management protocol (BlueZ's doc/mgmt-api.txt), as far as the box uses
// it to bond heart-rate sensors: the commands it sends, encoded, and the events it reads, parsed.
// Pure: no I/O (ManagementChannel.swift carries the bytes). Every packet is
//
//     opcode or event code (le16) | controller index (le16) | parameter length (le16) | parameters
//
// The kernel is the only writer on this channel, but its bytes are parsed as carefully as a
// phone's: a short or inconsistent packet is an error, never a crash (fuzz target `mgmt-event`).

import VigilSystem

/// A long-term key as the management protocol carries it (New Long Term Key event, Load Long
/// Term Keys command): 36 bytes, multi-byte fields little-endian.
public struct LongTermKey: Sendable, Equatable, Hashable {
    public var peer: LEAddress
    /// 0 unauthenticated legacy, 1 authenticated legacy, 2 unauthenticated P-256 (LE Secure
    /// Connections), 3 authenticated P-256, 4 P-256 debug key.
    public var keyType: UInt8
    /// 1: the key is used when this box is the central (legacy pairing distributes one per role).
    public var central: UInt8
    public var encryptionSize: UInt8
    public var encryptedDiversifier: UInt16
    public var random: UInt64
    public var value: [UInt8]

    public static let encodedLength = 36

    public init(peer: LEAddress, keyType: UInt8, central: UInt8, encryptionSize: UInt8,
                encryptedDiversifier: UInt16, random: UInt64, value: [UInt8]) {
        self.peer = peer
        self.keyType = keyType
        self.central = central
        self.encryptionSize = encryptionSize
        self.encryptedDiversifier = encryptedDiversifier
        self.random = random
        self.value = value
    }

    /// A debug key is public (the specification prints it): it proves nothing, so it is never kept.
    public var isDebugKey: Bool { keyType == 4 }
    /// Whether the kernel uses this key when the box is the central (how it links to sensors):
    /// a P-256 key serves both roles; of a legacy pairing's two keys only the one marked central.
    public var servesTheBoxAsCentral: Bool { keyType == 2 || keyType == 3 || central == 1 }

    public var encoded: [UInt8] {
        var out = peer.bytes
        out.append(peer.type)
        out += [keyType, central, encryptionSize]
        out += littleEndian(UInt64(encryptedDiversifier), 2)
        out += littleEndian(random, 8)
        out += value
        return out
    }

    /// Parses the 36-byte form. Address types other than LE public (1) and LE random (2), key
    /// types over 4, or an encryption size outside 7...16 are refused: none is a key an LE
    /// sensor can have.
    public init(parsing bytes: ArraySlice<UInt8>) throws(ManagementError) {
        guard bytes.count == Self.encodedLength else { throw .malformed("a long-term key of \(bytes.count) bytes, not 36") }
        let b = Array(bytes)
        let type = b[6]
        guard type == 1 || type == 2 else { throw .malformed("a long-term key for address type \(type), not LE") }
        // The kernel refuses a whole key list with a random address that is not static.
        guard type == 1 || b[5] & 0xC0 == 0xC0 else { throw .malformed("a long-term key for a random address that is not static") }
        guard b[7] <= 4 else { throw .malformed("key type \(b[7])") }
        guard (7...16).contains(b[9]) else { throw .malformed("encryption size \(b[9])") }
        self.init(peer: LEAddress(bytes: Array(b[0..<6]), type: type), keyType: b[7], central: b[8] == 0 ? 0 : 1,
                  encryptionSize: b[9], encryptedDiversifier: UInt16(readLittleEndian(b[10..<12])),
                  random: readLittleEndian(b[12..<20]), value: Array(b[20..<36]))
    }
}

public enum ManagementError: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed(String)

    public var description: String {
        switch self {
        case .malformed(let what): return "a malformed management packet: \(what)"
        }
    }
}

/// The commands the box sends.
public enum ManagementCommand: Sendable, Equatable {
    /// The host's LE support on (bluetoothd's default): without it the kernel's security manager
    /// holds any LE link secure enough, and a link asked to be encrypted is not.
    case setLowEnergy(Bool)
    /// Power off or on: powered on through this channel the kernel registers its security
    /// manager on the adapter (an adapter powered up by the HCIDEVUP ioctl alone has none).
    case setPowered(Bool)
    /// Keep keys from pairing (the first management command on an adapter clears it).
    case setBondable(Bool)
    /// NoInputNoOutput (3): Just Works, and no confirmation nobody would answer.
    case setIOCapabilityNoInputNoOutput
    /// LE Secure Connections on (1): legacy Just Works can be broken by someone listening.
    case setSecureConnections(Bool)
    /// Replaces every long-term key the kernel holds for the adapter.
    case loadLongTermKeys([LongTermKey])
    /// Accepts or refuses a pairing the kernel asks user space to confirm (it asks even for
    /// Just Works, where there is no number to compare).
    case confirmPairing(LEAddress, accept: Bool)

    public var opcode: UInt16 {
        switch self {
        case .setLowEnergy: return 0x000D
        case .setPowered: return 0x0005
        case .setBondable: return 0x0009
        case .setIOCapabilityNoInputNoOutput: return 0x0018
        case .setSecureConnections: return 0x002D
        case .loadLongTermKeys: return 0x0013
        case .confirmPairing(_, let accept): return accept ? 0x001C : 0x001D
        }
    }

    public var parameters: [UInt8] {
        switch self {
        case .setLowEnergy(let on), .setBondable(let on), .setPowered(let on): return [on ? 1 : 0]
        case .setIOCapabilityNoInputNoOutput: return [3]
        case .setSecureConnections(let on): return [on ? 1 : 0]
        case .loadLongTermKeys(let keys): return littleEndian(UInt64(keys.count), 2) + keys.flatMap(\.encoded)
        case .confirmPairing(let peer, _): return peer.bytes + [peer.type]
        }
    }

    /// The packet for the adapter with this index.
    public func packet(index: UInt16) -> [UInt8] {
        let parameters = self.parameters
        return littleEndian(UInt64(opcode), 2) + littleEndian(UInt64(index), 2) + littleEndian(UInt64(parameters.count), 2) + parameters
    }

    /// At most this many keys in one Load Long Term Keys (the kernel refuses a longer packet
    /// than its 16-bit length; the box keeps one key per sensor and links at most 32).
    public static let maximumKeys = 1_000
}

/// Whether the running kernel can be trusted with sensors' bonds.
///
/// Debian 12's 6.1 kernel (6.1.192 seen) hits a BUG, list corruption in `hci_chan_del` from
/// `l2cap_sock_release`, when the box closes a link whose encryption failed: a device at a
/// bonded sensor's address without the key (a spoofer, or a strap that lost its bond) would stop
/// the box's loop, and with it the SOS button. Debian's 6.12 (6.12.100+deb12, what Raspberry Pi
/// OS runs too) passed the same test. Kernels before 6.12 are not trusted: none was shown safe.
public enum KernelBondSupport {
    public static let minimum = (major: 6, minor: 12)

    /// Why bonds must not be used on a kernel of this release (`uname -r`), or nil.
    public static func problem(release: String?) -> String? {
        guard let release else { return "the kernel's release is unknown (uname failed): bonds need Linux 6.12 or later" }
        let numbers = release.prefix { $0.isNumber || $0 == "." }.split(separator: ".").compactMap { Int($0) }
        guard numbers.count >= 2 else { return "the kernel's release \"\(release.prefix(64))\" does not parse: bonds need Linux 6.12 or later" }
        if (numbers[0], numbers[1]) >= minimum { return nil }
        return "Linux \(release.prefix(64)) is not known to survive a sensor failing its bond (Debian's 6.1 hits a kernel BUG "
            + "that would stop the box): bonds need Linux 6.12 or later"
    }
}

/// The events the box reads; the rest are `.other`.
public enum ManagementEvent: Sendable, Equatable {
    case commandComplete(index: UInt16, opcode: UInt16, status: UInt8)
    case commandStatus(index: UInt16, opcode: UInt16, status: UInt8)
    /// An adapter appeared (again): the kernel holds no keys for it.
    case indexAdded(UInt16)
    case indexRemoved(UInt16)
    /// Pairing made a key. `storeHint` false: the peer did not bond, the key is for this link only.
    case newLongTermKey(index: UInt16, storeHint: Bool, key: LongTermKey)
    /// Pairing or authentication with a peer failed.
    case authenticationFailed(index: UInt16, peer: LEAddress, status: UInt8)
    /// The kernel asks whether to go on pairing with a peer (User Confirmation Request).
    case confirmationRequested(index: UInt16, peer: LEAddress)
    /// A link ended; reason 4 is an authentication failure (the peer did not have the key).
    case deviceDisconnected(index: UInt16, peer: LEAddress, reason: UInt8)
    case other(code: UInt16, index: UInt16)

    /// The largest packet parsed: the header and 64 KiB of parameters can never be longer.
    public static let maximumLength = 6 + 65_535

    public static func parse(_ packet: [UInt8]) throws(ManagementError) -> ManagementEvent {
        guard packet.count >= 6 else { throw .malformed("\(packet.count) bytes, shorter than the header") }
        let code = UInt16(readLittleEndian(packet[0..<2]))
        let index = UInt16(readLittleEndian(packet[2..<4]))
        let length = Int(readLittleEndian(packet[4..<6]))
        guard packet.count == 6 + length else { throw .malformed("parameter length \(length) in a packet of \(packet.count) bytes") }
        let p = packet[6...]
        func need(_ count: Int, _ what: String) throws(ManagementError) {
            guard p.count >= count else { throw .malformed("\(what) with \(p.count) parameter bytes, needs \(count)") }
        }
        func address(at offset: Int) throws(ManagementError) -> LEAddress {
            let start = p.startIndex + offset
            let type = p[start + 6]
            guard type == 1 || type == 2 else { throw .malformed("address type \(type), not LE") }
            return LEAddress(bytes: Array(p[start ..< start + 6]), type: type)
        }
        switch code {
        case 0x0001, 0x0002:
            try need(3, code == 1 ? "Command Complete" : "Command Status")
            let opcode = UInt16(readLittleEndian(p.prefix(2)))
            let status = p[p.startIndex + 2]
            return code == 1 ? .commandComplete(index: index, opcode: opcode, status: status)
                             : .commandStatus(index: index, opcode: opcode, status: status)
        case 0x0004: return .indexAdded(index)
        case 0x0005: return .indexRemoved(index)
        case 0x000A:
            try need(1 + LongTermKey.encodedLength, "New Long Term Key")
            let key = try LongTermKey(parsing: p.dropFirst().prefix(LongTermKey.encodedLength))
            return .newLongTermKey(index: index, storeHint: p[p.startIndex] != 0, key: key)
        case 0x0011:
            try need(8, "Authentication Failed")
            return .authenticationFailed(index: index, peer: try address(at: 0), status: p[p.startIndex + 7])
        case 0x000F:
            try need(12, "User Confirmation Request")
            let type = p[p.startIndex + 6]
            guard type == 1 || type == 2 else { return .other(code: code, index: index) }
            return .confirmationRequested(index: index, peer: try address(at: 0))
        case 0x000C:
            try need(8, "Device Disconnected")
            // BR/EDR links are none of the box's business.
            let type = p[p.startIndex + 6]
            guard type == 1 || type == 2 else { return .other(code: code, index: index) }
            return .deviceDisconnected(index: index, peer: try address(at: 0), reason: p[p.startIndex + 7])
        default:
            return .other(code: code, index: index)
        }
    }
}

/// The box's stored keys, one line each (DATA/sensor-keys, mode 0600, written whole and renamed):
///
///     AA:BB:CC:DD:EE:FF[/random] TYPE CENTRAL SIZE EDIV RAND-HEX VALUE-HEX
///
/// Lines starting with `#` are comments. A line that does not parse is reported and skipped (the
/// sensor then pairs afresh and staff see it), never a reason to stop the box (fuzz target
/// `sensor-keys`).
public enum SensorKeyFile {
    public static let header = "# Vigil's heart-rate sensors' bond keys (LE long-term keys). Secret: mode 0600.\n"
    /// The file is refused beyond this size: a box keeps one key per enrolled sensor.
    public static let maximumBytes = 256 * 1_024

    public static func format(_ keys: [LongTermKey]) -> String {
        header + keys.sorted { ($0.peer.value, $0.central) < ($1.peer.value, $1.central) }.map { key in
            [key.peer.description, String(key.keyType), String(key.central), String(key.encryptionSize),
             String(key.encryptedDiversifier), Hex.encode(littleEndian(key.random, 8)), Hex.encode(key.value)].joined(separator: " ") + "\n"
        }.joined()
    }

    /// The keys, and a description of each line that did not parse.
    public static func parse(_ text: String) -> (keys: [LongTermKey], problems: [String]) {
        var keys: [LongTermKey] = []
        var problems: [String] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let fields = trimmed.split(separator: " ")
            guard fields.count == 7, let peer = LEAddress(String(fields[0])),
                  peer.isIdentity,
                  let keyType = UInt8(fields[1]), keyType <= 4, let central = UInt8(fields[2]), central <= 1,
                  let size = UInt8(fields[3]), (7...16).contains(size), let ediv = UInt16(fields[4]),
                  let random = Hex.decode(fields[5]), random.count == 8,
                  let value = Hex.decode(fields[6]), value.count == 16 else {
                problems.append("line \(number + 1) is not a key")
                continue
            }
            // One Load Long Term Keys carries them all: beyond its bound the kernel would refuse
            // the packet, and then no sensor could link.
            guard keys.count < ManagementCommand.maximumKeys else {
                problems.append("line \(number + 1) and after: over \(ManagementCommand.maximumKeys) keys, ignored")
                break
            }
            keys.append(LongTermKey(peer: peer, keyType: keyType, central: central, encryptionSize: size,
                                    encryptedDiversifier: ediv, random: readLittleEndian(random[...]), value: value))
        }
        return (keys, problems)
    }
}

private func littleEndian(_ value: UInt64, _ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
}

private func readLittleEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 {
    bytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
}
