import Testing
@testable import VigilWeb

/// Sign-in failures are counted per client address: whole, in one spelling, IPv4 as IPv4.
@Suite struct SignInKeyTests {
    @Test func anIPv4ClientOnTheDualStackListenerIsCountedByItsIPv4Address() {
        #expect(WebContext.signInKey("::ffff:192.0.2.7") == "192.0.2.7")
        #expect(WebContext.signInKey("::FFFF:192.0.2.7") == "192.0.2.7")
        #expect(WebContext.signInKey("0:0:0:0:0:ffff:c000:207") == "192.0.2.7")
        #expect(WebContext.signInKey("192.0.2.7") == "192.0.2.7")
    }

    @Test func twoIPv4ClientsAreNotOneClient() {
        // Once both were 0:0:0:0::/64: five failures from one refused everybody.
        #expect(WebContext.signInKey("::ffff:192.0.2.7") != WebContext.signInKey("::ffff:192.0.2.8"))
    }

    @Test func devicesOnOneIPv6NetworkAreCountedApart() {
        // The shelter's Wi-Fi is one /64: a prankster's failures must not lock out staff beside it.
        #expect(WebContext.signInKey("2001:db8:1:2::10") != WebContext.signInKey("2001:db8:1:2::11"))
    }

    @Test func oneIPv6AddressHasOneKeyHoweverItIsWritten() {
        let key = WebContext.signInKey("2001:db8:0:0:0:0:0:10")
        #expect(key == "2001:db8:0:0:0:0:0:10")
        #expect(WebContext.signInKey("2001:DB8::10") == key)
        #expect(WebContext.signInKey("2001:0db8:0000::0010") == key)
        #expect(WebContext.signInKey("fe80::1%eth0") == WebContext.signInKey("fe80::1"))
        #expect(WebContext.signInKey("::1") == "0:0:0:0:0:0:0:1")
    }

    @Test func noAddressIsOneKey() {
        #expect(WebContext.signInKey(nil) == "unknown")
    }
}
