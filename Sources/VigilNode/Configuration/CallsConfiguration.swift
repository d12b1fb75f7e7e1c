import VigilCalls
import VigilCore

/// The sections of calls for help: `alarms:` (the button's gestures), `notify:` (the notifier and
/// the staff), `calls:` (the call tree, SMS replies, the self-test) and `site:`.
extension NodeConfiguration {
    /// The `alarms:` section.
    static func readAlarms(_ alarms: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if let v = try alarms.duration("debounce") { config.gestures.debounceNanoseconds = v * 1_000 }
        if let v = try alarms.duration("long_press") { config.gestures.longPressNanoseconds = max(100_000, v) * 1_000 }
        if let v = try alarms.duration("minimum_press") { config.gestures.minimumPressNanoseconds = v * 1_000 }
        if let v = try alarms.duration("sos_expiry") { config.sosExpiryMicroseconds = v }
        // Issue 10: holding on this long (from the press) cancels this box's own SOS; a long
        // press while it is active only re-affirms it. 0 = never at the box (CLI only).
        if let v = try alarms.duration("cancel_hold") { config.gestures.cancelHoldNanoseconds = v * 1_000 }
        try alarms.finish()
    }

    /// The `notify:` section.
    static func readNotify(_ notify: inout ConfigReader, into config: inout NodeConfiguration) throws {
        if let v = try notify.string("command") {
            guard v.hasPrefix("/") else { throw notify.error("notify.command must be an absolute path") }
            config.notifier.command = v
        }
        if let v = try notify.strings("arguments") { config.notifier.arguments = v }
        if let v = try notify.duration("timeout") { config.notifier.timeoutMicroseconds = max(100_000, v) }
        if let v = try notify.duration("retry_base") { config.notifier.retryBaseMicroseconds = max(1_000_000, v) }
        if let v = try notify.duration("retry_max") { config.notifier.retryMaxMicroseconds = max(1_000_000, v) }
        // The ladder's second step and downtime reports go to the staff channel.
        if let v = try notify.strings("staff") {
            config.projections.ladder.staff = try addresses(v, setting: "notify.staff", in: notify)
        }
        if let v = try notify.duration("downtime_report_after") { config.downtimeReportAfterMicroseconds = max(1_000_000, v) }
        // Issue 10: how long failures may last before amber says "no way to tell anyone".
        if let v = try notify.duration("unreachable_after") { config.notifyUnreachableAfterMicroseconds = v }
        try notify.finish()
    }

    /// The `calls:` section.
    static func readCalls(_ calls: inout ConfigReader, into config: inout NodeConfiguration) throws -> (testEvery: UInt64?, defaultTree: CallTree?) {
        var callsTestEvery: UInt64?
        var pendingDefaultTree: CallTree?
        var tree = CallTree(configured: true)
        if let items = try calls.mappings("tree") {
            guard !items.isEmpty, items.count <= 8 else { throw calls.error("calls.tree must list 1 to 8 tiers") }
            for (i, var item) in items.enumerated() {
                let wait = try item.duration("after") ?? 0
                guard i > 0 || wait == 0 else { throw item.error("calls.tree: the first tier starts at once (after: 0s)") }
                guard let to = try item.strings("to"), !to.isEmpty, to.count <= 16 else {
                    throw item.error("calls.tree: each tier needs to: a list of 1 to 16 recipients")
                }
                let recipients = try addresses(to, setting: "calls.tree", in: item, allowARC: true)
                try item.finish()
                tree.tiers.append(CallTree.Tier(afterMicroseconds: wait, recipients: recipients))
            }
        }
        if let v = try calls.integer("rounds", in: 1...10) { tree.rounds = UInt32(v) }
        if let v = try calls.string("sms_inbox"), !v.isEmpty {
            guard v.hasPrefix("/") else { throw calls.error("calls.sms_inbox must be an absolute path (gammu-smsd's inboxpath)") }
            config.smsInbox.directory = v
        }
        if let v = try calls.string("sms_inbox_format") {
            guard let format = InboxFormat(rawValue: v) else { throw calls.error("calls.sms_inbox_format must be detail, standard or unicode (gammu-smsd's inboxformat)") }
            config.smsInbox.format = format
        }
        if let v = try calls.duration("repeat_after") { tree.repeatAfterMicroseconds = max(60_000_000, v) }
        if let v = try calls.duration("test_every") { callsTestEvery = v == 0 ? 0 : max(60_000_000, v) }
        if let v = try calls.strings("test_to") {
            guard v.count <= 8 else { throw calls.error("calls.test_to lists at most 8 addresses") }
            config.callTestRecipients = try addresses(v, setting: "calls.test_to", in: calls)
        }
        try calls.finish()
        // rounds or repeat_after alone shape the default tree.
        if tree.tiers.isEmpty {
            tree.configured = false
            pendingDefaultTree = tree
        } else {
            config.configuredCallTree = tree
        }
        return (callsTestEvery, pendingDefaultTree)
    }

    /// The `site:` section.
    static func readSite(_ site: inout ConfigReader, into config: inout NodeConfiguration) throws -> Double? {
        var roadDirection: Double?
        if let v = try site.string("name") { config.projections.ladder.siteName = v }
        if let v = try site.string("location"), !v.isEmpty {
            guard let location = parseLocation(v) else { throw site.error("site.location must be \"lat,lon\" in degrees (-33.8688,151.2093)") }
            config.projections.ladder.siteLocation = location
        }
        // The road's direction at the entrance, clockwise from north (traffic either way).
        if let v = try site.number("road_direction", in: 0...360) { roadDirection = v.truncatingRemainder(dividingBy: 360) }
        try site.finish()
        return roadDirection
    }
}
