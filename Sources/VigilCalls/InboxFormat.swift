/// gammu-smsd's `inboxformat`: how its FILES backend writes a received message's content.
/// All three were checked byte for byte against the real daemon (gammu 1.42, Debian 12) fed
/// through its dummy phone (docs/calls-for-help.md "Replies by SMS"). Configure `detail`.
public enum InboxFormat: String, Hashable, Sendable, CaseIterable {
    /// The text in the daemon's locale character set, as it is: no byte order mark, no
    /// terminator, no newline added. UTF-8 when the daemon runs in a UTF-8 locale
    /// (`LANG=C.UTF-8`); in the C locale (a service started without one) every non-ASCII
    /// character, emoji included, is written as one "?" ("José" arrives as "Jos?").
    /// One file per part of a linked message. Read as UTF-8; other bytes are refused.
    case standard
    /// The text as UTF-16 big-endian after a byte order mark (FE FF), one file per part.
    /// gammu 1.42 writes as many code units as the locale-encoded text has bytes (fixed in
    /// 1.44): in a UTF-8 locale a text with non-ASCII characters is followed by U+0000 and
    /// whatever lies after it in gammu's buffer; in the C locale every character outside the
    /// BMP (an emoji: two units, one "?") makes the file one unit short, cut from the end
    /// ("OK 👍" arrives as "OK " and half a surrogate pair). Read up to the first U+0000; a lone
    /// surrogate becomes U+FFFD; a little-endian BOM (FF FE) or none (big-endian) is read too.
    case unicode
    /// Gammu's smsbackup text (INI) format: every part of a linked message as one
    /// `[SMSBackupNNN]` section of one file, with `NumberUnicode` (the sender) and `Text00`,
    /// `Text01`, … (the text) as hex UTF-16BE, whatever the locale; `Coding`, `UDH` (which part
    /// of how many) and `PDU` (`Deliver`, or `Status_Report` for a delivery report). Comment
    /// lines (`;`, the text again in the locale's character set) and keys not needed here are
    /// skipped.
    case detail
}
