/// The fuzz entry point for bytes from a centre (a libFuzzer target calls `reply` with each
/// input; `brokenPromises` is the same run returning what it found wrong, for a target that
/// must crash on a broken promise). Runs the reply parser on the input as one frame — with no
/// key, with a key, and as a framed body with a correct length and CRC so the field checks are
/// reached — and the splitter over the input fed whole and byte by byte, with every frame it
/// yields parsed. It must return for every input; it never traps by itself.
public enum DC09Fuzz {
    public static func reply(_ bytes: [UInt8]) {
        _ = brokenPromises(bytes)
    }

    /// The promises the input broke, empty when all held:
    /// - the splitter yields only frames of LF … CR within its limit, and accounts for every byte
    ///   (yielded + dropped + still held = fed), whole or byte by byte alike;
    /// - an acknowledgement only ever comes from an `"ACK"` frame when sent in the clear and from a
    ///   `"*ACK"` frame (an encrypted region that decrypted) when sent encrypted.
    public static func brokenPromises(_ bytes: [UInt8]) -> [String] {
        var broken: [String] = []
        for expectation in expectations {
            for frame in [bytes, framed(bytes)] {
                let reply = try? DC09Reply.parse(frame, expecting: expectation)
                if case .acknowledged = reply, !frame.dropFirst(9).starts(with: Array((expectation.key == nil ? "\"ACK\"" : "\"*ACK\"").utf8)) {
                    broken.append("an acknowledgement that is not an \(expectation.key == nil ? "ACK" : "*ACK") frame")
                }
            }
        }
        var whole = DC09FrameSplitter()
        whole.append(bytes)
        var single = DC09FrameSplitter()
        var yieldedWhole: [[UInt8]] = [], yieldedSingle: [[UInt8]] = []
        for byte in bytes {
            single.append(CollectionOfOne(byte))
            while let frame = single.nextFrame() { yieldedSingle.append(frame) }
        }
        while let frame = whole.nextFrame() { yieldedWhole.append(frame) }
        for (name, splitter, frames) in [("whole", whole, yieldedWhole), ("byte by byte", single, yieldedSingle)] {
            let yielded = frames.reduce(0) { $0 + $1.count }
            if UInt64(yielded) + splitter.droppedBytes + UInt64(splitter.bufferedByteCount) != UInt64(bytes.count) {
                broken.append("splitter (\(name)) lost or invented bytes")
            }
            for frame in frames {
                if frame.first != 0x0A || frame.last != 0x0D || frame.count > splitter.maximumFrameLength {
                    broken.append("splitter (\(name)) yielded a frame that is not LF…CR within the limit")
                }
                for expectation in expectations { _ = try? DC09Reply.parse(frame, expecting: expectation) }
            }
        }
        // Fed whole, at most `maximumPendingFrames` wait and the rest are dropped (and counted);
        // drained after every byte, none is. So the whole feed's frames are the first of the
        // other's, all of them when it dropped none.
        if yieldedWhole != Array(yieldedSingle.prefix(yieldedWhole.count))
            || (whole.droppedFrames == 0 && yieldedWhole.count != yieldedSingle.count) {
            broken.append("splitter yields depend on how the bytes arrive")
        }
        return broken
    }

    /// `bytes` as the body of a frame with a correct CRC and length (when short enough), so the
    /// fuzzer reaches the token and field checks without having to find a CRC.
    static func framed(_ body: [UInt8]) -> [UInt8] {
        let body = Array(body.prefix(0xFFF))
        return [0x0A] + ASCII.hex(DC09CRC.checksum(body), width: 4) + [ASCII.zero]
            + ASCII.hex(UInt16(truncatingIfNeeded: body.count), width: 3) + body + [0x0D]
    }

    /// Account 1234, line 1, receiver 12, sequence 0042; in the clear and with a fixed AES-128 key.
    static let expectations: [DC09Expectation] = {
        guard let identity = try? DC09Identity(account: "1234", receiver: "12", line: "1"),
              let sequence = DC09Sequence(42) else { return [] }
        let key = try? DC09Key(bytes: Array("0123456789ABCDEF".utf8))
        return [DC09Expectation(identity: identity, sequence: sequence, key: nil),
                DC09Expectation(identity: identity, sequence: sequence, key: key)]
    }()
}
