import Testing
@testable import VigilAlarmCentre

@Suite struct FrameSplitterTests {
    static let ack = Fixture.bytes(Fixture.capturedAck)

    @Test func frameArrivingInPiecesIsYieldedOnceWhole() {
        var splitter = DC09FrameSplitter()
        splitter.append(Self.ack.prefix(7))
        #expect(splitter.nextFrame() == nil)
        splitter.append(Self.ack.dropFirst(7))
        #expect(splitter.nextFrame() == Self.ack)
        #expect(splitter.nextFrame() == nil)
        #expect(splitter.droppedBytes == 0)
    }

    @Test func garbageBeforeAFrameIsDroppedAndCounted() {
        var splitter = DC09FrameSplitter()
        splitter.append(Fixture.bytes("\"NAK\"") + [0x00, 0xFF, 0x0D] + Self.ack)  // pysiaalarm's unframed NAK, junk, a stray CR
        #expect(splitter.nextFrame() == Self.ack)
        #expect(splitter.droppedBytes == 8)
    }

    @Test func newLineFeedRestartsTheFrameAndDropsThePartialOne() {
        var splitter = DC09FrameSplitter()
        splitter.append(Fixture.bytes("\nBAB0") + Self.ack)
        #expect(splitter.nextFrame() == Self.ack)
        #expect(splitter.droppedBytes == 5)
    }

    @Test func severalFramesInOneReadComeOutInOrder() {
        var splitter = DC09FrameSplitter()
        let nak = Fixture.bytes(Fixture.capturedNak)
        splitter.append(Self.ack + nak + Self.ack)
        #expect(splitter.nextFrame() == Self.ack)
        #expect(splitter.nextFrame() == nak)
        #expect(splitter.nextFrame() == Self.ack)
        #expect(splitter.nextFrame() == nil)
    }

    @Test func frameLongerThanTheLimitIsDroppedAndTheNextOneStillFound() {
        var splitter = DC09FrameSplitter(maximumFrameLength: 32)
        let long = [0x0A] + [UInt8](repeating: 0x41, count: 100) + [0x0D]
        splitter.append(long + Self.ack)
        #expect(splitter.nextFrame() == Self.ack)
        #expect(splitter.droppedBytes == UInt64(long.count))
        #expect(splitter.bufferedByteCount == 0)
        // A frame of exactly the limit, CR included, is kept.
        splitter.append([0x0A] + [UInt8](repeating: 0x41, count: 30) + [0x0D])
        #expect(splitter.nextFrame()?.count == 32)
    }

    @Test func heldBytesStayBoundedWhateverThePeerSends() {
        var splitter = DC09FrameSplitter(maximumFrameLength: 64, maximumPendingFrames: 4)
        for _ in 0..<1000 { splitter.append(Self.ack) }   // never taken out
        splitter.append([0x0A] + [UInt8](repeating: 0x42, count: 10_000))
        #expect(splitter.bufferedByteCount <= 64 * 5)
        #expect(splitter.droppedFrames == 996)
    }

    @Test func emptyFrameIsYieldedForTheParserToRefuse() {
        // pysiaalarm answers a frame whose CRC it rejects with LF CR and nothing between.
        var splitter = DC09FrameSplitter()
        splitter.append([0x0A, 0x0D])
        let frame = splitter.nextFrame()
        #expect(frame == [0x0A, 0x0D])
        #expect(throws: DC09ReplyError.badFraming(.tooShort)) { try DC09Reply.parse(frame ?? [], expecting: Fixture.plain) }
    }
}
