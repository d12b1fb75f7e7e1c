import Testing
import VigilRadio

/// The management protocol as the box bonds heart-rate sensors with it (decision 0005): the
/// bytes of BlueZ's doc/mgmt-api.txt, checked by hand.
@Suite struct ManagementTests {
    static let sensor = LEAddress(value: 0xC0_11_22_33_44_55, kind: .random)
    static let key = LongTermKey(peer: sensor, keyType: 2, central: 0, encryptionSize: 16, encryptedDiversifier: 0,
                                 random: 0, value: Array(0..<16))

    @Test func commandsAreFramedWithOpcodeIndexAndLengthLittleEndian() {
        #expect(ManagementCommand.setLowEnergy(true).packet(index: 0) == [0x0D, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01])
        #expect(ManagementCommand.setBondable(true).packet(index: 1) == [0x09, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01])
        #expect(ManagementCommand.setIOCapabilityNoInputNoOutput.packet(index: 0) == [0x18, 0x00, 0x00, 0x00, 0x01, 0x00, 0x03])
        #expect(ManagementCommand.setSecureConnections(true).packet(index: 0) == [0x2D, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01])
        #expect(ManagementCommand.loadLongTermKeys([]).packet(index: 0) == [0x13, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00])
    }

    @Test func aLongTermKeyIsThirtySixBytesAddressFirstLeastSignificantByteFirst() throws {
        let legacy = LongTermKey(peer: LEAddress(value: 0x00_11_22_33_44_55, kind: .public), keyType: 0, central: 1,
                                 encryptionSize: 16, encryptedDiversifier: 0x1234, random: 0x0102_0304_0506_0708,
                                 value: Array(16..<32))
        let bytes = legacy.encoded
        #expect(bytes.count == 36)
        #expect(Array(bytes[0..<6]) == [0x55, 0x44, 0x33, 0x22, 0x11, 0x00])
        #expect(Array(bytes[6..<12]) == [1, 0, 1, 16, 0x34, 0x12])
        #expect(Array(bytes[12..<20]) == [8, 7, 6, 5, 4, 3, 2, 1])
        #expect(try LongTermKey(parsing: bytes[...]) == legacy)
        let load = ManagementCommand.loadLongTermKeys([legacy, Self.key]).packet(index: 0)
        #expect(Array(load[4..<8]) == [74, 0, 2, 0])   // 2 + 2 × 36 bytes of parameters, two keys
    }

    @Test func aNewKeyEventCarriesTheStoreHintAndTheKey() throws {
        let packet: [UInt8] = [0x0A, 0x00, 0x00, 0x00, 37, 0x00, 1] + Self.key.encoded
        #expect(try ManagementEvent.parse(packet) == .newLongTermKey(index: 0, storeHint: true, key: Self.key))
    }

    @Test func answersFailuresAndDisconnectionsAreRead() throws {
        #expect(try ManagementEvent.parse([1, 0, 2, 0, 3, 0, 0x13, 0x00, 0x00]) == .commandComplete(index: 2, opcode: 0x13, status: 0))
        #expect(try ManagementEvent.parse([2, 0, 0, 0, 3, 0, 0x2D, 0x00, 0x0C]) == .commandStatus(index: 0, opcode: 0x2D, status: 0x0C))
        #expect(try ManagementEvent.parse([4, 0, 1, 0, 0, 0]) == .indexAdded(1))
        let address: [UInt8] = [0x55, 0x44, 0x33, 0x22, 0x11, 0xC0, 2]
        #expect(try ManagementEvent.parse([0x11, 0, 0, 0, 8, 0] + address + [5]) == .authenticationFailed(index: 0, peer: Self.sensor, status: 5))
        #expect(try ManagementEvent.parse([0x0C, 0, 0, 0, 8, 0] + address + [4]) == .deviceDisconnected(index: 0, peer: Self.sensor, reason: 4))
        // Device Connected: flags (4) and the advertising data's length (2), then the data.
        #expect(try ManagementEvent.parse([0x0B, 0, 0, 0, 16, 0] + address + [0, 0, 0, 0, 3, 0, 2, 1, 6]) == .other(code: 0x000B, index: 0), "Device Connected names only an address: the box does not read it")
        #expect(ManagementCommand.setPowered(false).packet(index: 0) == [0x05, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00])
        // User Confirmation Request: the hint and a 4-byte value follow the address.
        #expect(try ManagementEvent.parse([0x0F, 0, 0, 0, 12, 0] + address + [1, 0x9C, 0xAB, 0x07, 0x00]) == .confirmationRequested(index: 0, peer: Self.sensor))
        #expect(ManagementCommand.confirmPairing(Self.sensor, accept: true).packet(index: 0) == [0x1C, 0x00, 0x00, 0x00, 0x07, 0x00] + address)
        #expect(ManagementCommand.confirmPairing(Self.sensor, accept: false).packet(index: 0)[0] == 0x1D)
        // A BR/EDR link is none of the box's business.
        #expect(try ManagementEvent.parse([0x0C, 0, 0, 0, 8, 0, 1, 2, 3, 4, 5, 6, 0, 3]) == .other(code: 0x0C, index: 0))
        #expect(try ManagementEvent.parse([0x25, 0, 0, 0, 1, 0, 9]) == .other(code: 0x25, index: 0))
    }

    @Test func shortInconsistentOrImpossiblePacketsAreErrors() {
        #expect(throws: ManagementError.self) { try ManagementEvent.parse([1, 0, 0]) }
        // A length that disagrees with the packet.
        #expect(throws: ManagementError.self) { try ManagementEvent.parse([4, 0, 0, 0, 9, 0]) }
        // A key event one byte short, and one for a BR/EDR address.
        #expect(throws: ManagementError.self) { try ManagementEvent.parse([0x0A, 0, 0, 0, 36, 0, 1] + Self.key.encoded.dropLast()) }
        var bredr = Self.key.encoded
        bredr[6] = 0
        #expect(throws: ManagementError.self) { try ManagementEvent.parse([0x0A, 0, 0, 0, 37, 0, 1] + bredr) }
        // A random address that is not static: the kernel would refuse the whole key list.
        var resolvable = Self.key.encoded
        resolvable[5] = 0x40
        #expect(throws: ManagementError.self) { try LongTermKey(parsing: resolvable[...]) }
        #expect(SensorKeyFile.parse("40:11:22:33:44:55/random 2 0 16 0 0000000000000000 000102030405060708090a0b0c0d0e0f\n").problems.count == 1)
        var tiny = Self.key.encoded
        tiny[9] = 3   // a 3-byte key is no key
        #expect(throws: ManagementError.self) { try LongTermKey(parsing: tiny[...]) }
    }

    @Test func storedKeysReadBackAndABrokenLineIsReportedNotFatal() {
        let legacy = LongTermKey(peer: LEAddress(value: 0x00_11_22_33_44_55, kind: .public), keyType: 1, central: 1,
                                 encryptionSize: 16, encryptedDiversifier: 4660, random: 0x0102_0304_0506_0708,
                                 value: Array(16..<32))
        let text = SensorKeyFile.format([Self.key, legacy])
        #expect(text.hasPrefix("#"))
        #expect(text.contains("C0:11:22:33:44:55/random 2 0 16 0 0000000000000000 000102030405060708090a0b0c0d0e0f\n"))
        let parsed = SensorKeyFile.parse(text)
        #expect(Set(parsed.keys) == [Self.key, legacy])
        #expect(parsed.problems.isEmpty)
        let damaged = SensorKeyFile.parse(text + "C0:11:22:33:44:55/random 2 0 16 0 00 zz\n")
        #expect(damaged.keys.count == 2)
        #expect(damaged.problems == ["line 4 is not a key"])
    }

    @Test func aKeyFileReadsAtMostTheKeysOneLoadCanCarry() {
        let keys = (0..<(ManagementCommand.maximumKeys + 5)).map { n in
            LongTermKey(peer: LEAddress(value: 0xC0_00_00_00_00_00 + UInt64(n), kind: .random), keyType: 2, central: 0,
                        encryptionSize: 16, encryptedDiversifier: 0, random: 0, value: Array(repeating: 7, count: 16))
        }
        let parsed = SensorKeyFile.parse(SensorKeyFile.format(keys))
        #expect(parsed.keys.count == ManagementCommand.maximumKeys)
        #expect(parsed.problems == ["line \(ManagementCommand.maximumKeys + 2) and after: over \(ManagementCommand.maximumKeys) keys, ignored"])
        let load = ManagementCommand.loadLongTermKeys(parsed.keys).packet(index: 0)
        #expect(load.count - 6 <= Int(UInt16.max), "the load's parameters fit its 16-bit length")
    }

    @Test func bondsAreRefusedOnKernelsBeforeSixTwelveWhereAFailedBondCrashedTheKernel() {
        #expect(KernelBondSupport.problem(release: "6.1.0-56-amd64")?.contains("6.12 or later") == true, "Debian 12's own kernel")
        #expect(KernelBondSupport.problem(release: "6.6.51+rpt-rpi-v8") != nil, "never shown safe")
        #expect(KernelBondSupport.problem(release: "6.12.100+deb12-amd64") == nil, "passed the VM test")
        #expect(KernelBondSupport.problem(release: "6.12.34+rpt-rpi-v8") == nil, "Raspberry Pi OS")
        #expect(KernelBondSupport.problem(release: "7.0.1") == nil)
        #expect(KernelBondSupport.problem(release: "banana")?.contains("does not parse") == true)
        #expect(KernelBondSupport.problem(release: nil) != nil)
    }

    @Test func onlyAKeyTheKernelUsesWithTheBoxAsCentralProvesABond() {
        var key = Self.key                      // P-256 (type 2): one key for both roles
        #expect(key.servesTheBoxAsCentral)
        key.keyType = 0; key.central = 0       // a legacy pairing's responder key
        #expect(!key.servesTheBoxAsCentral)
        key.central = 1                         // and its initiator key
        #expect(key.servesTheBoxAsCentral)
    }

    @Test func aDebugKeyIsRecognisedSoItIsNeverKept() {
        var debug = Self.key
        debug.keyType = 4
        #expect(debug.isDebugKey)
        #expect(!Self.key.isDebugKey)
    }
}
