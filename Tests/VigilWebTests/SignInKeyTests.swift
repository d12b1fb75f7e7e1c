import NIOCore
import Testing
@testable import VigilWeb

/// Sign-in failures are counted per client address: whole, from its bytes, IPv4 as IPv4.
@Suite struct SignInKeyTests {
    static func key(_ text: String) throws -> String {
        WebContext.signInKey(try SocketAddress(ipAddress: text, port: 443))
    }

    @Test func anIPv4ClientOnTheDualStackListenerIsCountedByItsIPv4Address() throws {
        #expect(try Self.key("::ffff:192.0.2.7") == "192.0.2.7")
        #expect(try Self.key("0:0:0:0:0:ffff:c000:207") == "192.0.2.7")
        #expect(try Self.key("192.0.2.7") == "192.0.2.7")
    }

    @Test func twoIPv4ClientsAreNotOneClient() throws {
        // Once both were 0:0:0:0::/64: five failures from one refused everybody.
        #expect(try Self.key("::ffff:192.0.2.7") != Self.key("::ffff:192.0.2.8"))
        // An IPv4-compatible address (`::a.b.c.d`) is not `::` either.
        #expect(try Self.key("::192.0.2.7") != Self.key("::"))
    }

    @Test func devicesOnOneIPv6NetworkAreCountedApart() throws {
        // The shelter's Wi-Fi is one /64: a prankster's failures must not lock out staff beside it.
        #expect(try Self.key("2001:db8:1:2::10") != Self.key("2001:db8:1:2::11"))
    }

    @Test func oneIPv6AddressHasOneKeyHoweverItIsWritten() throws {
        let key = try Self.key("2001:db8:0:0:0:0:0:10")
        #expect(key == "2001:db8:0:0:0:0:0:10")
        #expect(try Self.key("2001:DB8::10") == key)
        #expect(try Self.key("2001:0db8:0000::0010") == key)
        #expect(try Self.key("::1") == "0:0:0:0:0:0:0:1")
    }

    @Test func noAddressIsOneKey() {
        #expect(WebContext.signInKey(nil) == "unknown")
    }
}
