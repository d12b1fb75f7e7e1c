import Testing
import VigilHubProtocol

/// A feed stream's lines as the box cuts them from what the network hands it.
@Suite struct FeedLinesTests {
    @Test func linesComeOutWholeWhateverThePiecesAndEmptyOnesAreSkipped() throws {
        let stream = Array("{\"a\":1}\n\n{\"b\":2}\n{\"c\"".utf8)
        for size in 1...stream.count {
            var lines = FeedLines()
            var got: [[UInt8]] = []
            var start = 0
            while start < stream.count {
                got += try lines.take(stream[start..<min(stream.count, start + size)])
                start += size
            }
            #expect(got == [Array("{\"a\":1}".utf8), Array("{\"b\":2}".utf8)], "pieces of \(size)")
            #expect(lines.unfinished == 4, "the cut line waits")
        }
    }

    @Test func aLineThatNeverEndsIsRefusedAtItsLimitNotHeld() throws {
        var lines = FeedLines(maximumLength: 8)
        #expect(try lines.take(Array("12345678\n".utf8)) == [Array("12345678".utf8)], "at the limit: a line")
        #expect(throws: FeedLines.Failure.lineTooLong(limit: 8)) { try lines.take(Array("123456789".utf8)) }
        #expect(lines.unfinished <= 8)
    }
}
