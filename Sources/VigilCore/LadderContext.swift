/// What the ladder needs to know about the shelter, from the node's configuration (`site.*`,
/// `notify.staff`) and from the system's time zone database. Settings, not history: the node sets
/// them when it starts (docs/configuration.md "Configuration"), and they are kept with the checkpoint so
/// checkpoint + tail replays with the settings the node used.
///
/// Time zone rules are here, not read by the projection, because a projection never touches
/// files: the node reads /usr/share/zoneinfo/NAME for each zone residents use and puts the parsed
/// rules in `zones`. A replay that lacks a zone's rules (another machine, a zone file removed)
/// does not guess and does not fail: the resident's quiet times use the fixed UTC offset of their
/// night window (0 without one), exactly as before schema 6, and `missingZones` names the zones
/// so the node and `vigil status` can say so. The outcome is still a function of the log and
/// these settings, so replay stays deterministic either way.
public struct LadderContext: Codable, Equatable, Sendable {
    /// The shelter's name (`site.name`), in emergency messages.
    public var siteName = ""
    /// The shelter's location, "lat,lon" (`site.location`), in emergency messages.
    public var siteLocation = ""
    /// The staff channel (`notify.staff`): addresses told at the ladder's second step.
    public var staff: [String] = []
    /// Parsed zone rules by IANA name.
    public var zones: [String: TimeZoneRules] = [:]

    public init() {}

    /// "Shelter North (-33.86,151.21)", or "" when neither is configured.
    var siteText: String {
        switch (siteName.isEmpty, siteLocation.isEmpty) {
        case (true, true): ""
        case (false, true): siteName
        case (true, false): "location \(siteLocation)"
        case (false, false): "\(siteName) (\(siteLocation))"
        }
    }
}
