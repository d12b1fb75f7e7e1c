import Foundation
import NIOCore

/// A client as sign-in attempts are counted: its address without its port.
public enum ClientAddress {
    /// The full address, from its bytes (not its text): an IPv4 client seen through the
    /// dual-stack listener (`::ffff:a.b.c.d`) by its IPv4 address, an IPv6 client by all 128 bits.
    ///
    /// Not by /64: every device on the shelter's Wi-Fi shares one /64, so counting by it let one
    /// device lock every staff member out (and all IPv4 clients once shared `0:0:0:0::/64`). A
    /// device that rotates its IPv6 addresses gets more attempts; each still costs an scrypt
    /// check, and at most `WebSessions.maximumChecking` run at once for the whole box. Behind a
    /// reverse proxy every client is the proxy: its address is counted, and one client's failures
    /// make every client wait. Forwarded headers are not trusted (anyone can write them).
    /// The box's page (`WebContext`) and the hub's coordinator sign-in count by it.
    public static func key(_ address: SocketAddress?) -> String { key(address, ipv6Bits: 128) }

    /// By address, an IPv6 client by its first `ipv6Bits` bits (64: its network, "2001:db8:1:2::/64").
    /// The hub caps connections per /64: a host given a /64 has every address in it, and the
    /// boxes behind one share nothing else with each other.
    public static func key(_ address: SocketAddress?, ipv6Bits: Int) -> String {
        switch address {
        case .v4:
            return address?.ipAddress ?? "unknown"
        case .v6(let v6):
            var raw = v6.address.sin6_addr
            let bytes = withUnsafeBytes(of: &raw) { Array($0) }
            guard bytes.count == 16 else { return "unknown" }
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                return "\(bytes[12]).\(bytes[13]).\(bytes[14]).\(bytes[15])"
            }
            let groups = stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            if ipv6Bits == 64 { return groups.prefix(4).joined(separator: ":") + "::/64" }
            return groups.joined(separator: ":")
        default:
            return "unknown"
        }
    }
}
