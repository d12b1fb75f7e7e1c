import NIOCore
import Testing
import VigilAccess

/// What the pages take from a request (form bodies, the client's address) and put back into HTML.
@Suite struct FormFieldsTests {
    @Test func aFormBodyDecodesPlusAndPercentEscapes() {
        #expect(FormFields.parse("name=Ana+Lopez&room=4%2F12&note=") == ["name": "Ana Lopez", "room": "4/12", "note": ""])
        #expect(FormFields.parse("%2B=%2B&euro=%E2%82%AC") == ["+": "+", "euro": "€"], "an escaped plus stays a plus")
        #expect(FormFields.parse("a+b=c+d") == ["a b": "c d"])
        #expect(FormFields.parse("x=a=b&y=a%3Db") == ["x": "a=b", "y": "a=b"], "the first = splits")
    }

    @Test func theLastOfARepeatedNameWinsAndEmptyPiecesAreSkipped() {
        #expect(FormFields.parse("a=1&a=2") == ["a": "2"])
        #expect(FormFields.parse("&&a=1&") == ["a": "1"])
        #expect(FormFields.parse("flag") == ["flag": ""])
        #expect(FormFields.parse("") == [:])
    }

    @Test func aBrokenPercentEscapeRefusesTheWholeBody() {
        for body in ["a=%zz", "%zz=1", "a=1&b=%G0"] {
            #expect(FormFields.parse(body) == nil, "\(body)")
        }
    }
}

@Suite struct HTMLTextTests {
    @Test func theFiveCharactersThatEndAnElementOrAttributeAreEscaped() {
        #expect(HTMLText.escape(#"<a href="x">Tom & 'Jerry'</a>"#) == "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;")
        #expect(HTMLText.escape("&amp;") == "&amp;amp;", "text that looks escaped is shown as typed")
    }

    @Test func everythingElsePassesUnchanged() {
        #expect(HTMLText.escape("") == "")
        #expect(HTMLText.escape("Zoë, room 4 / bed 2 🚑") == "Zoë, room 4 / bed 2 🚑")
    }
}

@Suite struct ClientAddressTests {
    @Test func anIPv4ClientIsItsAddressHoweverItArrived() throws {
        let plain = try SocketAddress(ipAddress: "192.0.2.10", port: 443)
        let mapped = try SocketAddress(ipAddress: "::ffff:192.0.2.10", port: 443)
        #expect(ClientAddress.key(plain) == "192.0.2.10")
        #expect(ClientAddress.key(mapped) == "192.0.2.10", "through the dual-stack listener")
        #expect(ClientAddress.key(mapped, ipv6Bits: 64) == "192.0.2.10")
    }

    @Test func anIPv6ClientIsAllItsBitsOrItsNetwork() throws {
        let a = try SocketAddress(ipAddress: "2001:db8:1:2:aaaa:bbbb:cccc:dddd", port: 1)
        let b = try SocketAddress(ipAddress: "2001:db8:1:2::1", port: 2)
        let loopback = try SocketAddress(ipAddress: "::1", port: 1)
        #expect(ClientAddress.key(a) == "2001:db8:1:2:aaaa:bbbb:cccc:dddd")
        #expect(ClientAddress.key(b) == "2001:db8:1:2:0:0:0:1")
        #expect(ClientAddress.key(a, ipv6Bits: 64) == "2001:db8:1:2::/64")
        #expect(ClientAddress.key(b, ipv6Bits: 64) == "2001:db8:1:2::/64", "one /64, one client for the hub's cap")
        #expect(ClientAddress.key(loopback) == "0:0:0:0:0:0:0:1")
    }

    @Test func noAddressOrASocketPathIsUnknown() throws {
        let path = try SocketAddress(unixDomainSocketPath: "/run/vigil/test.sock")
        #expect(ClientAddress.key(nil) == "unknown")
        #expect(ClientAddress.key(path) == "unknown")
    }
}

@Suite struct ConnectionLimitsTests {
    @Test func limitsShrinkToWhatTheDescriptorLimitLeavesButNeverBelowSixteen() {
        let page = ConnectionLimits.boxPage
        #expect(page.fitted(toDescriptorLimit: 65_536) == page)
        let tight = page.fitted(toDescriptorLimit: 300)
        #expect(tight.total == 44 && tight.perClient == 32)
        let starved = page.fitted(toDescriptorLimit: 0)
        #expect(starved.total == 16 && starved.perClient == 16)
        #expect(page.fitted(toDescriptorLimit: 100, reserve: 0).total == 100)
        let hub = ConnectionLimits.hub.fitted(toDescriptorLimit: 1_024)
        #expect(hub.total == 768 && hub.perClient == 512 && hub.idleTimeoutSeconds == 90 && hub.ipv6ClientBits == 64)
    }
}
