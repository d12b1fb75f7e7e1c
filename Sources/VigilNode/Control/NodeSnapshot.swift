import VigilCore
import VigilEvents

/// What the box's page and its API show: everything a volunteer needs at a glance, as plain
/// values. Built on the loop from the projections (`SnapshotFeed`) for the live view, or from a
/// replayed past state for time travel, by the same function, so both views read alike.
///
/// Small by design: no device list, no contact data (contacts' names and addresses, tags), only
/// what the page shows; building it costs the loop a pass over residents and active alerts, never
/// over the devices heard, and servers beside the loop render it without touching node state.
public struct NodeSnapshot: Sendable, Codable, Equatable {
    /// The last event the state includes (the SSE event id).
    public var sequence: UInt64
    /// When it was taken (wall clock, µs), or the moment asked for in a past view.
    public var timeMicroseconds: UInt64
    public var nodeID: String
    /// Nil for a running node's live view; a past view says what moment it shows.
    public var past: String?
    public var outputs: [OutputView]
    public var residents: [ResidentView]
    /// Active alerts: calls for help, hazards and notices, newest first.
    public var alerts: [AlertView]
    public var exposures: ExposureView
    public var messages: MessageView
    public var radio: RadioView
    public var hub: HubView
    public var log: LogView
    public var chats: ChatsView
    /// Road users, work zones and jams near the shelter, and the warning (docs/hazards.md "Active hazards").
    public var roadHazards: RoadHazardsView
    /// Calls for help, open ones first, then the most recently ended (docs/calls-for-help.md).
    /// Nil from a node before calls existed.
    public var calls: [CallView]?
    /// The latest SMS that reached the box and what it made of them, newest first; empty in the
    /// public view (phone numbers and what people wrote).
    public var texts: [TextView]?
    /// Whether the box can call for help: its alarm centre's link, its self-test's messages, and
    /// a start still checking its log. Nil from a node that knows neither (no `arc:`, no
    /// `calls.test_to`, not starting), or a past state.
    public var callPaths: CallPathsView?
    /// Public warnings in force here, loudest first (docs/warnings.md). Nil from a node before them.
    public var publicWarnings: [PublicWarningView]? = nil
    /// Alerts cancelled in the last hour, newest first (for CAP out's Cancel messages). Nil from a
    /// node before them.
    public var recentlyCancelled: [AlertView]? = nil

    public struct CallPathsView: Sendable, Codable, Equatable {
        /// Why the box cannot call for help now (what amber says); nil: no path is known to fail.
        public var problem: String?
        public var alarmCentre: Path?
        public var messages: Path?
        /// Seconds the start has been checking its log, while it does (decision 0002).
        public var logOpeningSeconds: Double?

        public struct Path: Sendable, Codable, Equatable {
            /// When it last worked: the centre's last ACK, or the last self-test that passed.
            public var lastGoodMicroseconds: UInt64?
            /// When the last test ran and whether it passed.
            public var lastTestMicroseconds: UInt64?
            public var lastTestPassed: Bool?
            public var failingSinceMicroseconds: UInt64?
            /// What went wrong last (staff only: it may name hosts or numbers).
            public var lastProblem: String?
        }
    }

    public struct TextView: Sendable, Codable, Equatable {
        public var sender: String
        public var text: String
        public var outcome: String
        public var receivedMicroseconds: UInt64
        public static let limit = 10
    }

    /// A call for help: what, how old, whether a person has taken it, where the tree stands.
    public struct CallView: Sendable, Codable, Equatable {
        /// The short code its messages gave (T4821): what "take" takes.
        public var code: String
        public var id: String
        /// sos, medical, resident.
        public var kind: String
        /// What, where, whose, since when; empty in the public view (names, rooms).
        public var summary: String
        public var startedMicroseconds: UInt64
        public var open: Bool
        /// Who took it and how; the public view says only that it was taken.
        public var takenBy: String?
        public var takenVia: String?
        public var takenMicroseconds: UInt64?
        /// Why it ended: cancelled, ended, resolved.
        public var ended: String?
        /// The tier and pass started last (1-based), and how many recipients were told.
        public var tier: UInt32
        public var pass: UInt32
        public var told: Int
        /// A phone's unverified call (staff confirm or dismiss it); nil for every other call.
        public var fromPhone: Bool? = nil
        /// Phones' sos and medical messages taken into it (the first included).
        public var phoneMessages: UInt32? = nil
        /// Confirmed: the alert of the network raised from it.
        public var confirmedAlert: String? = nil
        /// The latest other phones' messages taken into it ("ADDRESS: text"); staff only.
        public var phoneOthers: [String]? = nil
        public static let limit = 20
    }

    public struct RoadHazardsView: Sendable, Codable, Equatable {
        /// The warning sounding now, in words, and when it ends.
        public var warning: String?
        public var warningEndsMicroseconds: UInt64?
        public var count: Int
        public var warningsStarted: UInt64
        /// The most recently heard (at most `limit`); empty in the public view: where people
        /// are is not for anyone passing by.
        public var hazards: [Item]
        public static let limit = 20
        /// The regional MQTT feed (live only; nil when none is configured). The public view
        /// keeps its state and counts, not the ids it saw or its errors.
        public var feed: HazardFeedStatus?

        public struct Item: Sendable, Codable, Equatable {
            /// vehicle, pedestrian, cyclist, traffic jam, work zone.
            public var kind: String
            /// air, hub, MQTT, staff.
            public var source: String
            public var latitude: Double
            public var longitude: Double
            public var headingDegrees: Double?
            public var speedMetersPerSecond: Double?
            public var lastMicroseconds: UInt64
            public var expiresMicroseconds: UInt64
        }
    }

    public struct OutputView: Sendable, Codable, Equatable {
        /// red, amber, green, blue, buzzer.
        public var line: String
        /// `off`, `on`, `blink 500/500 ms`, ... (OutputPattern's description).
        public var pattern: String
        public var reasons: [Reason]
        public struct Reason: Sendable, Codable, Equatable {
            public var text: String
            public var sequences: [UInt64]
        }
    }

    public struct ResidentView: Sendable, Codable, Equatable {
        public var id: String
        public var name: String
        public var room: String
        /// time, pulse or off.
        public var mode: String
        /// none, prompt, text, alarm, notify.
        public var step: String
        /// When the current step was reached (0 at none).
        public var stepMicroseconds: UInt64
        public var next: Deadline?
        public var lastCheckInMicroseconds: UInt64?
        public var checkIns: UInt64
        public var intervalMicroseconds: UInt64
        public var timeZone: String
        public var paused: Bool
        /// The resident's heart-rate sensor (nil: none).
        public var sensor: SensorView?
        public struct SensorView: Sendable, Codable, Equatable {
            /// "AA:BB:CC:DD:EE:FF", with "/random" for a random address (nil in the public view:
            /// a strap that needs no pairing is easier to spoof once its address is known).
            public var device: String?
            public var linked: Bool
            /// Whether the link was encrypted with the sensor's bond key (false while linked:
            /// "unbonded", its readings could come from anyone with its address).
            public var bonded: Bool
            /// The last reading and its time (nil: none yet, or the public view: a pulse is health
            /// data).
            public var beatsPerMinute: Double?
            public var readingMicroseconds: UInt64?
            /// contact, no contact, or no contact sensing.
            public var contact: String?
            /// Whether the last reading was a sign of life to the ladder.
            public var counted: Bool?
        }
        public struct Deadline: Sendable, Codable, Equatable {
            public var step: String
            public var dueMicroseconds: UInt64
        }
    }

    public struct AlertView: Sendable, Codable, Equatable {
        /// `ORIGIN:COUNTER`, what `cancel` and `acknowledge` take.
        public var id: String
        /// sos, medical, fire, flood, evacuate, road-hazard, area-hazard, info.
        public var kind: String
        /// info, warning, critical.
        public var severity: String
        /// help (sos, medical), hazard (fire, flood, evacuate, road and area hazards) or notice.
        public var category: String
        public var raisedHere: Bool
        public var hops: UInt32
        public var raisedMicroseconds: UInt64
        public var expiresMicroseconds: UInt64
        public var text: String
        public var latitude: Double?
        public var longitude: Double?
        /// here, elsewhere (another box answered), or nil: nobody yet.
        public var acknowledged: String?
        /// When it was cancelled: only in `recentlyCancelled`.
        public var cancelledMicroseconds: UInt64? = nil

        public static let cancelledLimit = 50
    }

    public struct ExposureView: Sendable, Codable, Equatable {
        public var found: Int
        public var highRisk: Int
        /// The newest high-risk windows' last contact times (µs), newest first (at most 10).
        public var recentHighRiskMicroseconds: [UInt64]
        public var keyFilesMatched: UInt64
        public var keyFilesRefused: UInt64
        public var keyFilesWaiting: Int
    }

    public struct MessageView: Sendable, Codable, Equatable {
        public var pending: Int
        public var delivered: UInt64
        public var failedAttempts: UInt64
        /// Messages that cannot reach anyone (amber's "no way to tell anyone").
        public var unreachable: Int
    }

    public struct RadioView: Sendable, Codable, Equatable {
        /// The radio's state from the log (up, down, recovering, ...).
        public var state: String
        public var adapter: String
        public var sinceMicroseconds: UInt64
        public var devices: Int
        /// Live only.
        public var framesAccepted: UInt64?
        public var framesForged: UInt64?
        public var onAir: [String]
        public var hciErrors: UInt64?
    }

    public struct HubView: Sendable, Codable, Equatable {
        /// Empty: no hub acknowledged anything yet.
        public var hub: String
        public var syncedThrough: UInt64
        public var lastAcknowledgedMicroseconds: UInt64
        public var received: UInt64
        /// What the sync keeps failing at (live only).
        public var problem: String?
    }

    /// Chats with phones and boxes (`Conversations`). What peers wrote is unauthenticated and
    /// private to the shelter's staff: `forPublic` keeps only the counts.
    public struct ChatsView: Sendable, Codable, Equatable {
        /// Devices the box has a conversation with, those linked now, and those with unread messages.
        public var devices: Int
        public var connected: Int
        public var unread: Int
        /// The most recent conversations (at most `conversationLimit`), newest first; empty in
        /// the public view.
        public var conversations: [ConversationView]

        public static let conversationLimit = 16
        public static let lineLimit = 5

        public struct ConversationView: Sendable, Codable, Equatable {
            /// "AA:BB:CC:DD:EE:FF", with "/random" for a random address: what `chat-send` takes.
            public var device: String
            public var connected: Bool
            /// BTFinder's badge: "" (none), "1" to "99", then "...".
            public var unread: String
            public var lastActivityMicroseconds: UInt64
            /// The last `lineLimit` messages, oldest first.
            public var messages: [Line]
        }

        public struct Line: Sendable, Codable, Equatable {
            public var timeMicroseconds: UInt64
            /// Sent by the box (else written by the peer: unauthenticated).
            public var outgoing: Bool
            /// Control characters replaced.
            public var text: String
            /// A phone message's category (sos, info, ...), "" for chat.
            public var category: String
            /// For outgoing messages: whether every part went out on the link.
            public var delivered: Bool
        }
    }

    public struct LogView: Sendable, Codable, Equatable {
        public var events: UInt64
        public var usedBytes: UInt64?
        public var undecodable: UInt64
        public var salvages: UInt64
        /// The last check this run: "sound", or what it found (live only).
        public var check: String?
        /// Set while the node runs from memory: why the log failed.
        public var failure: String?
        public var diskFull: Bool
        public var uptimeSeconds: Double?
    }
}
