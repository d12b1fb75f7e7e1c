import Testing
import VigilHubProtocol

/// The hub's `Date` header as the box reads it for its clock (docs/signed-frames.md "Time").
@Suite struct HTTPDateTests {
    @Test func anIMFFixdateIsItsUnixTime() {
        #expect(HTTPDate.seconds("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(HTTPDate.seconds("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.seconds("Tue, 29 Feb 2028 12:00:00 GMT") == 1_835_438_400)
        #expect(HTTPDate.seconds("Sun, 29 Nov 2026 17:06:22 GMT") == 1_795_971_982)
        #expect(HTTPDate.seconds("Fri, 31 Dec 9999 23:59:59 GMT") == 253_402_300_799)
    }

    @Test func anythingElseIsNoTimeNotAGuess() {
        for text in ["", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 UTC",
                     "Sun, 29 Feb 2026 17:06:22 GMT", "Sun, 31 Apr 2026 17:06:22 GMT", "Sun, 00 Nov 2026 17:06:22 GMT",
                     "Sun, 06 Nov 1969 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
                     "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nix 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT ",
                     "Sun, 0x Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:-7 GMT"] {
            #expect(HTTPDate.seconds(text) == nil, "\(text)")
        }
    }

    @Test func aLeapSecondIsTheSecondBefore() {
        #expect(HTTPDate.seconds("Sat, 31 Dec 2016 23:59:60 GMT") == HTTPDate.seconds("Sat, 31 Dec 2016 23:59:59 GMT"))
    }
}
