/// The fuzz target for everything here that reads bytes from outside the box: an inbox file's
/// name and content in each format, the reply parser, the phone number parser and the short
/// code generator. `inbox` must return for any input, never trap; `brokenPromises` also checks
/// what the types promise and names each promise broken (the fuzz driver aborts on one, the
/// tests expect none).
public enum SMSFuzz {
    public static func inbox(_ bytes: [UInt8]) {
        _ = brokenPromises(bytes)
    }

    public static func brokenPromises(_ bytes: [UInt8]) -> [String] {
        var broken: [String] = []
        func check(_ condition: Bool, _ promise: @autoclosure () -> String) {
            if !condition { broken.append(promise()) }
        }

        // The bytes as a file name.
        if let name = try? InboxFileName(bytes) {
            check((0...99).contains(name.serial) && (0...99).contains(name.part), "serial and part are two digits")
            check(!name.sender.isEmpty, "a name's sender is never empty")
            check(isClean(name.sender), "a name's sender has no control characters")
            check(bytes.count <= InboxFileName.maximumLength, "a name is at most 255 bytes")
        }

        // The bytes as file content, in every format and as either extension.
        var texts: [String] = [String(decoding: bytes, as: UTF8.self)]
        for format in InboxFormat.allCases {
            for ext in [InboxFileName.Extension.txt, .bin] {
                guard let message = try? InboxMessage.decode(bytes, format: format, fileExtension: ext) else { continue }
                check(bytes.count <= InboxMessage.maximumFileSize, "content over the limit is refused")
                check(isClean(message.text), "decoded text has no control characters but newlines")
                check(message.text.unicodeScalars.count <= bytes.count, "decoded text is no longer than its bytes")
                check(format == .detail || message.sender == nil, "only detail has a sender inside")
                check(message.sender.map { !$0.isEmpty && isClean($0) } ?? true, "a content sender is clean and not empty")
                if case let .incomplete(received, total) = message.linking {
                    check(received.count < total && received.allSatisfy { (1...total).contains($0) }, "incomplete parts are within the total")
                }
                texts.append(message.text)
            }
        }

        // The bytes split into a name and a content, read as one inbox file.
        if let first = bytes.first {
            let split = min(bytes.count, 1 + Int(first) % 64)
            for format in InboxFormat.allCases {
                if let sms = try? InboundSMS.read(name: bytes[1..<split], contents: bytes[split...], format: format),
                   case .reply = sms.answer {
                    check(sms.fileName.part == 0 && sms.message.kind == .message, "only a whole message's first part is read as a reply")
                }
            }
        }

        // Every text as a reply and as a phone number.
        for text in texts {
            let reply = SMSReply.parse(text)
            check(SMSReply.parse(text) == reply, "parsing a reply is deterministic")
            if case let .take(code?) = reply {
                check(ShortCode(code)?.text == code, "a reply's code is a letter and 4 digits, upper case")
            }
            if case let .unrecognised(echo) = reply { check(echo == text, "an unrecognised reply is the text itself") }
            if let number = try? PhoneNumber(text) {
                check((try? PhoneNumber(number.e164)) == number, "a number's E.164 form parses to itself")
                let digits = number.e164.unicodeScalars.dropFirst()
                check(number.e164.unicodeScalars.first == "+" && digits.allSatisfy { ("0"..."9").contains($0) }
                      && (PhoneNumber.minimumDigits...PhoneNumber.maximumDigits).contains(digits.count)
                      && digits.first != "0", "a number is + and 8 to 15 digits, not starting with 0")
            }
        }

        // The bytes as randomness.
        if let code = try? ShortCode.generate(randomBytes: bytes) {
            check(code.text.unicodeScalars.first.map(ShortCode.letters.contains) ?? false, "a generated code starts with an unambiguous letter")
            check(ShortCode(code.text) == code, "a generated code parses to itself")
        }
        return broken
    }

    private static func isClean(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { scalar in
            if scalar == "\n" || scalar == "\u{200C}" || scalar == "\u{200D}" { return true }
            switch scalar.properties.generalCategory {
            case .control, .format: return false
            default: return scalar != "\r"
            }
        }
    }
}
