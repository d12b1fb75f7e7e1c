import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Bytes that readers poll (a feed's index, its documents), served with an entity tag and
/// answered `304 Not Modified` when the reader's `If-None-Match` names it: a reader that polls
/// every minute costs the bytes only when they changed. Used by the box's and the hub's CAP out.
public enum ConditionalGet {
    public static func response(_ bytes: [UInt8], contentType: String, request: Request) -> Response {
        let etag = "\"\(entityTag(bytes))\""
        var headers: HTTPFields = [.contentType: contentType, .eTag: etag, .cacheControl: "no-cache", .xContentTypeOptions: "nosniff"]
        if let asked = request.headers[.ifNoneMatch], matches(asked, etag: etag) {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// FNV-1a, 64 bits, in hex: it tells versions apart; it guards nothing.
    public static func entityTag(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            hash ^= UInt64(b)
            hash &*= 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    /// Whether an `If-None-Match` header names `etag` (quoted, as served, or weak) or is `*`.
    static func matches(_ ifNoneMatch: String, etag: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { tag in
            let t = tag.trimmingCharacters(in: .whitespaces)
            return t == etag || t == "*" || t == "W/" + etag
        }
    }
}
