/// The few ASCII bytes and byte classes DC-09 framing is made of. Internal: every parser in this
/// module reads `[UInt8]` with these, never `String`, so hostile bytes are never decoded as text.
enum ASCII {
    static let lineFeed: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
    static let space: UInt8 = 0x20
    static let quote: UInt8 = 0x22  // "
    static let hash: UInt8 = 0x23  // #
    static let star: UInt8 = 0x2A  // *
    static let comma: UInt8 = 0x2C  // ,
    static let hyphen: UInt8 = 0x2D  // -
    static let zero: UInt8 = 0x30  // 0
    static let colon: UInt8 = 0x3A  // :
    static let capitalA: UInt8 = 0x41  // A
    static let capitalL: UInt8 = 0x4C  // L
    static let capitalR: UInt8 = 0x52  // R
    static let leftBracket: UInt8 = 0x5B  // [
    static let rightBracket: UInt8 = 0x5D  // ]
    static let underscore: UInt8 = 0x5F  // _
    static let bar: UInt8 = 0x7C  // |

    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// Printable ASCII, space to tilde: everything a DC-09 frame may hold between LF and CR.
    static func isPrintable(_ byte: UInt8) -> Bool { byte >= 0x20 && byte <= 0x7E }

    /// The value of one hex digit, either case; nil for any other byte.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// The byte upper-cased if it is a lower-case letter (hex tokens compare case-blind).
    static func upper(_ byte: UInt8) -> UInt8 { byte >= 0x61 && byte <= 0x7A ? byte - 0x20 : byte }

    static let upperHexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// `value` as exactly `width` upper-case hex digits (the high digits beyond `width` are dropped;
    /// callers pass values that fit).
    static func hex(_ value: UInt16, width: Int) -> [UInt8] {
        (0..<width).reversed().map { upperHexDigits[Int((value >> UInt16(4 * $0)) & 0xF)] }
    }

    /// `value` (0...9999) as exactly `width` decimal digits, zero-filled.
    static func decimal(_ value: Int, width: Int) -> [UInt8] {
        var digits = [UInt8](repeating: zero, count: width)
        var rest = value < 0 ? 0 : value
        for index in stride(from: width - 1, through: 0, by: -1) {
            digits[index] = zero + UInt8(rest % 10)
            rest /= 10
        }
        return digits
    }

    /// The whole number written by `bytes` in decimal, or nil if any byte is not a digit or there
    /// are more than 9 (so the value always fits an `Int` without overflow).
    static func decimalValue(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 9 else { return nil }
        var value = 0
        for byte in bytes {
            guard isDigit(byte) else { return nil }
            value = value * 10 + Int(byte - zero)
        }
        return value
    }

    /// Bytes from a peer shown in an error: printable ASCII only (anything else as `?`) and at
    /// most `limit` of them, so an error never carries an unbounded or unprintable string.
    static func excerpt(_ bytes: ArraySlice<UInt8>, limit: Int = 16) -> String {
        String(decoding: bytes.prefix(limit).map { isPrintable($0) ? $0 : 0x3F }, as: UTF8.self)
    }
}

/// Hex as DC-09 carries encrypted regions: two ASCII digits a byte.
enum Hex {
    /// Upper-case hex, as DC-09 senders write it.
    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(ASCII.upperHexDigits[Int(byte >> 4)])
            out.append(ASCII.upperHexDigits[Int(byte & 0xF)])
        }
        return out
    }

    /// The bytes written by `digits` (either case), or nil for an odd count or a non-hex byte.
    static func decode(_ digits: ArraySlice<UInt8>) -> [UInt8]? {
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index < digits.endIndex {
            guard let high = ASCII.hexValue(digits[index]), let low = ASCII.hexValue(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }
}
