/// What a frame carries.
public enum DC09Message: Sendable, Hashable {
    /// A Contact ID event, under the `ADM-CID` token.
    case contactID(ContactIDEvent)
    /// The `NULL` message (§5.5.2.2): no event, a link test or supervision poll the centre ACKs
    /// like any other. Its data block is empty: `[]`.
    case linkTest

    /// The ID token without quotes or the encryption star.
    var token: [UInt8] {
        switch self {
        case .contactID: Array("ADM-CID".utf8)
        case .linkTest: Array("NULL".utf8)
        }
    }

    /// What goes between `[` and `]`.
    func data(account: String) -> [UInt8] {
        switch self {
        case .contactID(let event): event.data(account: account)
        case .linkTest: []
        }
    }
}

/// What a reply must match to answer a frame: built by `DC09Frame.encode` beside the frame, or by
/// hand to check a reply to a frame sent earlier (the sequence, identity and key it was sent with).
public struct DC09Expectation: Sendable {
    public let identity: DC09Identity
    public let sequence: DC09Sequence
    /// The key the frame was encrypted with, or nil if it was sent in the clear. With a key, only
    /// an encrypted ACK is an acknowledgement.
    public let key: DC09Key?
    /// The frame's own timestamp (seconds since 1970 UTC). With a key, an encrypted reply's time
    /// must lie within `freshnessWindowSeconds` of it: see `DC09Reply`. Nil skips that check.
    public let sentAtUTCSeconds: Int64?
    /// How far (either way) an encrypted reply's time may be from `sentAtUTCSeconds`.
    public let freshnessWindowSeconds: Int64

    /// 120 s: more than a receiver's own window for the frame's timestamp (pysiaalarm's is 40 s
    /// behind to 20 s ahead) plus a slow round trip; a centre that ACKs a frame agrees with its
    /// timestamp to about that, so a genuine ACK is never refused by it.
    public static let defaultFreshnessWindowSeconds: Int64 = 120

    public init(identity: DC09Identity, sequence: DC09Sequence, key: DC09Key?, sentAtUTCSeconds: Int64? = nil,
                freshnessWindowSeconds: Int64 = defaultFreshnessWindowSeconds) {
        (self.identity, self.sequence, self.key) = (identity, sequence, key)
        (self.sentAtUTCSeconds, self.freshnessWindowSeconds) = (sentAtUTCSeconds, max(0, freshnessWindowSeconds))
    }
}

/// A frame ready for the socket, and what its reply must match.
public struct DC09OutgoingFrame: Sendable {
    /// LF, CRC, length, body, CR: the bytes to write.
    public let bytes: [UInt8]
    public let expectation: DC09Expectation
}
