/// One CAP 1.2 alert message (OASIS Common Alerting Protocol, version 1.2) as the box keeps it:
/// every element a consumer needs to decide whether a warning applies here, how loud it is and
/// what it replaces, and the text people read. Read by `CAPReader` (docs/warnings.md); values
/// are as written, times are microseconds since the Unix epoch with the offset they were written
/// in kept for display.
public struct CAPAlert: Sendable, Equatable, Codable {
    public var identifier: String
    public var sender: String
    public var sent: CAPTime
    public var status: Status
    public var messageType: MessageType
    public var scope: Scope
    public var source: String?
    public var restriction: String?
    public var addresses: String?
    public var codes: [String]
    public var note: String?
    /// Earlier messages this one updates, cancels or answers (`references`).
    public var references: [CAPReference]
    public var incidents: String?
    public var infos: [CAPInfo]
    /// Whether an XML signature (xmldsig `Signature`) is attached; whether it verifies is for the
    /// feed's reader to say.
    public var hasSignature: Bool

    public init(identifier: String, sender: String, sent: CAPTime, status: Status, messageType: MessageType, scope: Scope,
                source: String? = nil, restriction: String? = nil, addresses: String? = nil, codes: [String] = [], note: String? = nil,
                references: [CAPReference] = [], incidents: String? = nil, infos: [CAPInfo], hasSignature: Bool = false) {
        self.identifier = identifier
        self.sender = sender
        self.sent = sent
        self.status = status
        self.messageType = messageType
        self.scope = scope
        self.source = source
        self.restriction = restriction
        self.addresses = addresses
        self.codes = codes
        self.note = note
        self.references = references
        self.incidents = incidents
        self.infos = infos
        self.hasSignature = hasSignature
    }

    /// The message's identity across feeds: the same alert heard from two feeds is one.
    public var key: CAPReference { CAPReference(sender: sender, identifier: identifier, sent: sent) }

    public enum Status: String, Sendable, Codable, CaseIterable {
        case actual = "Actual", exercise = "Exercise", system = "System", test = "Test", draft = "Draft"
    }

    public enum MessageType: String, Sendable, Codable, CaseIterable {
        case alert = "Alert", update = "Update", cancel = "Cancel", ack = "Ack", error = "Error"
    }

    public enum Scope: String, Sendable, Codable, CaseIterable {
        case `public` = "Public", restricted = "Restricted", `private` = "Private"
    }
}

/// One earlier message named by `references`: "sender,identifier,sent". Ordered by when it was
/// sent, then sender and identifier (a fixed order for encoding).
public struct CAPReference: Sendable, Hashable, Codable, Comparable {
    public var sender: String
    public var identifier: String
    public var sent: CAPTime

    public init(sender: String, identifier: String, sent: CAPTime) {
        self.sender = sender
        self.identifier = identifier
        self.sent = sent
    }

    public static func < (a: CAPReference, b: CAPReference) -> Bool {
        (a.sent.microseconds, a.sender, a.identifier) < (b.sent.microseconds, b.sender, b.identifier)
    }
}

/// One `info` block: the warning in one language.
public struct CAPInfo: Sendable, Equatable, Codable {
    /// RFC 3066 language (CAP's default when absent: "en-US").
    public var language: String
    public var categories: [Category]
    public var event: String
    public var responseTypes: [ResponseType]
    public var urgency: Urgency
    public var severity: Severity
    public var certainty: Certainty
    public var audience: String?
    public var eventCodes: [CAPValue]
    public var effective: CAPTime?
    public var onset: CAPTime?
    public var expires: CAPTime?
    public var senderName: String?
    public var headline: String?
    public var description: String?
    public var instruction: String?
    public var web: String?
    public var contact: String?
    public var parameters: [CAPValue]
    /// Resources are kept as named; the box never fetches one (`uri` is text, not a request).
    public var resources: [CAPResource]
    public var areas: [CAPArea]

    public init(language: String, categories: [Category], event: String, responseTypes: [ResponseType] = [], urgency: Urgency,
                severity: Severity, certainty: Certainty, audience: String? = nil, eventCodes: [CAPValue] = [],
                effective: CAPTime? = nil, onset: CAPTime? = nil, expires: CAPTime? = nil, senderName: String? = nil,
                headline: String? = nil, description: String? = nil, instruction: String? = nil, web: String? = nil,
                contact: String? = nil, parameters: [CAPValue] = [], resources: [CAPResource] = [], areas: [CAPArea] = []) {
        self.language = language
        self.categories = categories
        self.event = event
        self.responseTypes = responseTypes
        self.urgency = urgency
        self.severity = severity
        self.certainty = certainty
        self.audience = audience
        self.eventCodes = eventCodes
        self.effective = effective
        self.onset = onset
        self.expires = expires
        self.senderName = senderName
        self.headline = headline
        self.description = description
        self.instruction = instruction
        self.web = web
        self.contact = contact
        self.parameters = parameters
        self.resources = resources
        self.areas = areas
    }

    public enum Category: String, Sendable, Codable, CaseIterable {
        case geo = "Geo", met = "Met", safety = "Safety", security = "Security", rescue = "Rescue", fire = "Fire",
             health = "Health", env = "Env", transport = "Transport", infra = "Infra", cbrne = "CBRNE", other = "Other"
    }

    public enum ResponseType: String, Sendable, Codable, CaseIterable {
        case shelter = "Shelter", evacuate = "Evacuate", prepare = "Prepare", execute = "Execute", avoid = "Avoid",
             monitor = "Monitor", assess = "Assess", allClear = "AllClear", none = "None"
    }

    public enum Urgency: String, Sendable, Codable, CaseIterable {
        case immediate = "Immediate", expected = "Expected", future = "Future", past = "Past", unknown = "Unknown"
    }

    public enum Severity: String, Sendable, Codable, CaseIterable {
        case extreme = "Extreme", severe = "Severe", moderate = "Moderate", minor = "Minor", unknown = "Unknown"
    }

    public enum Certainty: String, Sendable, Codable, CaseIterable {
        case observed = "Observed", likely = "Likely", possible = "Possible", unlikely = "Unlikely", unknown = "Unknown"
        /// CAP 1.0's "Very Likely", which CAP 1.2 says to read as Likely.
        static let veryLikely = "Very Likely"
    }
}

/// A `valueName`/`value` pair (eventCode, parameter, geocode).
public struct CAPValue: Sendable, Hashable, Codable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// A `resource`: what it is and where it is said to be.
public struct CAPResource: Sendable, Equatable, Codable {
    public var description: String
    public var mimeType: String
    public var size: Int?
    public var uri: String?

    public init(description: String, mimeType: String, size: Int? = nil, uri: String? = nil) {
        self.description = description
        self.mimeType = mimeType
        self.size = size
        self.uri = uri
    }
}

/// An `area`: its description, its shapes (WGS 84) and its codes.
public struct CAPArea: Sendable, Equatable, Codable {
    public var description: String
    public var polygons: [CAPPolygon]
    public var circles: [CAPCircle]
    public var geocodes: [CAPValue]
    /// Feet above mean sea level, as CAP says; kept, not used for matching.
    public var altitude: Double?
    public var ceiling: Double?

    public init(description: String, polygons: [CAPPolygon] = [], circles: [CAPCircle] = [], geocodes: [CAPValue] = [],
                altitude: Double? = nil, ceiling: Double? = nil) {
        self.description = description
        self.polygons = polygons
        self.circles = circles
        self.geocodes = geocodes
        self.altitude = altitude
        self.ceiling = ceiling
    }
}
