import VigilCore

/// What the node wants on the air: the payloads (each ≤ 31 bytes of AD structures) shown in
/// turn, sent from `address` (a random address, rotated with the presence identity).
public struct AdvertisingPlan: Sendable, Equatable {
    public var address: UInt64
    public var payloads: [[UInt8]]
    /// Payloads (by index) sent connectable (ADV_IND) from the controller's public address, for
    /// phones and boxes to open a GATT link to; the others are non-connectable from `address`.
    public var connectable: Set<Int>
    /// The answer to a scan request for a connectable payload (the box's full name, which the
    /// advert has no room for); empty: none.
    public var scanResponse: [UInt8]

    public init(address: UInt64, payloads: [[UInt8]], connectable: Set<Int> = [], scanResponse: [UInt8] = []) {
        self.address = address
        self.payloads = payloads
        self.connectable = connectable
        self.scanResponse = scanResponse
    }

    public static let off = AdvertisingPlan(address: 0, payloads: [])
    public var isOff: Bool { payloads.isEmpty || address == 0 }
}

/// The steps of driving a controller, carried as command tags so a completion says what it
/// finished.
enum HCIRadioStep: UInt32 {
    case reset = 1, eventMask, leEventMask, readAddress, leFeatures, maximumAdvertisingData
    case scanDisable, scanAddress, scanParameters, scanEnable
    case advertiseDisable, advertiseAddress, advertiseParameters, advertiseData, advertiseEnable
}

/// What the controller advertises against what the node wants: a pure state machine, as
/// `HCICommandQueue` is for the command flow, pulled out of `HCIRadio` so the rules can be read
/// (and tested) without a socket. It decides the commands; `HCIRadio` sends them and reports
/// back what the controller answered. Times are microseconds on the radio's monotonic clock.
///
/// The rules:
/// - A plan's payloads take turns, one `rotationSlotMicroseconds` each; payloads longer than the
///   controller sends are left out (counted once per plan).
/// - A new payload goes out by switching advertising off and on around the new data: the new
///   frame is on the air at once, and controllers that report only on enable (BlueZ's emulator)
///   still deliver every frame. Nothing is sent when the air already matches.
/// - A refused connectable advert (a link held, most likely) makes payloads non-connectable until
///   no link is open or a minute passes; any other refusal stops advertising for a back-off, and
///   long adverts refused again and again on a controller that never said how long it takes
///   bring the limit down to 31 bytes.
struct AdvertisingScheduler {
    struct Settings {
        var intervalMicroseconds: UInt64
        var rotationSlotMicroseconds: UInt64
        var backoffMinMicroseconds: UInt64
        var backoffMaxMicroseconds: UInt64
    }

    typealias Command = (command: HCICommand, step: HCIRadioStep)

    /// What the controller has, as far as the commands sent say.
    struct OnAir: Equatable {
        var address: UInt64 = 0
        var payload: [UInt8]?
        var enabled = false
        var parametersSet = false
        /// Whether the parameters set are ADV_IND's (connectable) or ADV_NONCONN_IND's.
        var connectable = false
        /// Whether the parameters set are for an extended PDU (a payload over 31 bytes).
        var extendedPDU = false
        var scanResponse: [UInt8]?
    }

    /// How long payloads stay non-connectable after a refusal when no link end is seen (an
    /// event lost on a busy socket, a link the radio did not see open).
    static let connectableRetryDelay: UInt64 = 60_000_000
    static let longAdvertRefusalsToGiveUp = 3

    private let settings: Settings
    private(set) var plan = AdvertisingPlan.off
    private(set) var onAir = OnAir()
    /// The longest advertising data the controller sends (31 without extended advertising).
    private(set) var maximumDataLength = AdvertisingPayload.legacyMaximumLength
    /// The controller did not answer LE Read Maximum Advertising Data Length: the length is a guess.
    private var maximumDataLengthUnconfirmed = false
    private var longAdvertRefusals = 0
    /// LE links open on the controller (handles), for the connectable fallback.
    private var openLinks: Set<UInt16> = []
    /// The controller refused connectable advertising: connectable payloads go out
    /// non-connectable until no link is open, or `connectableRetryAt`.
    private var connectableBlocked = false
    private(set) var connectableRetryAt: UInt64?
    private var rotation = 0
    /// The last plan whose long payloads were counted as skipped.
    private var skippedPlan: AdvertisingPlan?
    private(set) var rotateAt: UInt64?
    /// After the controller refused an advertising command: no advertising until then.
    private(set) var blockedUntil: UInt64?
    private var retry: Backoff

    init(settings: Settings) {
        self.settings = settings
        retry = Backoff(base: settings.backoffMinMicroseconds, max: settings.backoffMaxMicroseconds)
    }

    /// The times this scheduler wants to be woken at.
    var deadlines: [UInt64] { [rotateAt, blockedUntil, connectableRetryAt].compactMap { $0 } }

    // MARK: What the node wants

    /// Takes the node's new plan; false when it is the plan already held.
    mutating func setPlan(_ newPlan: AdvertisingPlan) -> Bool {
        guard newPlan != plan else { return false }
        let addressChanged = newPlan.address != plan.address
        plan = newPlan
        if addressChanged || rotation >= plan.payloads.count { rotation = 0 }
        if plan.payloads.count <= 1 { rotateAt = nil }
        return true
    }

    // MARK: What the controller did

    /// Nothing is known of what is on the air (a new socket, commands failed or discarded,
    /// scanning set up again): everything is set again.
    mutating func airUnknown() {
        onAir = OnAir()
        rotateAt = nil
    }

    /// A new socket or a reset controller: no link is held and connectable adverts may be tried.
    mutating func controllerFresh() {
        airUnknown()
        openLinks = []
        connectableBlocked = false
        connectableRetryAt = nil
    }

    /// The controller's features are read: the limit starts at 31 until it says more.
    mutating func featuresRead() {
        maximumDataLength = AdvertisingPayload.legacyMaximumLength
        maximumDataLengthUnconfirmed = false
    }

    /// LE Read Maximum Advertising Data Length answered (`length`), or refused (nil): then try
    /// what one command carries, and learn 31 if long adverts are refused (`refused`).
    mutating func maximumDataLengthRead(_ length: Int?) {
        if let length {
            maximumDataLength = min(max(length, AdvertisingPayload.legacyMaximumLength), HCICommand.maximumExtendedAdvertisingData)
            maximumDataLengthUnconfirmed = false
        } else {
            maximumDataLength = HCICommand.maximumExtendedAdvertisingData
            maximumDataLengthUnconfirmed = true
        }
    }

    /// Scanning is being set up again (legacy commands): the controller-wide random address is
    /// set first. Returns the address to set, if any.
    mutating func scanningAddress(extended: Bool) -> UInt64? {
        onAir = OnAir()
        guard !plan.isOff, !extended else { return nil }
        onAir.address = plan.address
        return plan.address
    }

    /// Whether scanning runs from a random address (the one set for advertising).
    var randomAddressSet: Bool { onAir.address != 0 }

    mutating func linkOpened(_ handle: UInt16, peripheral: Bool) {
        openLinks.insert(handle)
        // The controller stopped advertising for the link (legacy advertising always does):
        // reconciling starts it again.
        if peripheral { onAir.enabled = false }
    }

    mutating func linkClosed(_ handle: UInt16) {
        openLinks.remove(handle)
        if openLinks.isEmpty {
            connectableBlocked = false
            connectableRetryAt = nil
        }
    }

    /// The controller ended advertising on its own (an extended set terminated).
    mutating func advertisingEnded() { onAir.enabled = false }

    /// Advertising is on: returns the payload now on the air.
    mutating func enabled() -> [UInt8]? {
        retry.reset()
        return onAir.payload
    }

    /// Whether a refusal of `step` is of connectable advertising this scheduler can fall back
    /// from (then handled: the payloads go out non-connectable, at once, never off the air).
    mutating func connectableRefused(_ step: HCIRadioStep, now: UInt64, counters: inout HCIRadioCounters) -> Bool {
        guard step == .advertiseParameters || step == .advertiseEnable, onAir.connectable, !connectableBlocked else { return false }
        counters.connectableRefusals += 1
        connectableBlocked = true
        connectableRetryAt = now + Self.connectableRetryDelay
        airUnknown()
        return true
    }

    /// The controller refused an advertising command (one that cannot scan and advertise at
    /// once; the kernel's own advertising on the raw channel). Advertising stops for a back-off;
    /// returns what the node should be told (once per streak, and when long adverts are given up).
    mutating func refused(_ command: HCICommand, status: UInt8, now: UInt64, adapter: String,
                          counters: inout HCIRadioCounters) -> [String] {
        var problems: [String] = []
        counters.advertisingRefusals += 1
        if maximumDataLengthUnconfirmed, onAir.extendedPDU || (onAir.payload?.count ?? 0) > AdvertisingPayload.legacyMaximumLength {
            longAdvertRefusals += 1
        }
        if longAdvertRefusals >= Self.longAdvertRefusalsToGiveUp {
            // One refusal may be a passing "command disallowed"; several are the controller's
            // limit: 31 until it restarts.
            longAdvertRefusals = 0
            maximumDataLength = AdvertisingPayload.legacyMaximumLength
            maximumDataLengthUnconfirmed = false
            problems.append("the controller refused a \(onAir.payload?.count ?? 0)-byte extended advert: signed frames stay off the air on \(adapter)")
        }
        if retry.isFresh {
            problems.append("the controller refused \(command) (status 0x\(String(status, radix: 16))): not advertising; retrying")
        }
        blockedUntil = now + retry.next()
        // What is on the air is unknown: set it all again (legacy: the whole sequence, scanning
        // included, since the random address is set with scanning stopped).
        airUnknown()
        return problems
    }

    // MARK: Time

    /// Acts on the deadlines due at `now`. `idle`: no command is queued or in flight.
    mutating func deadlinesPassed(now: UInt64, running: Bool, idle: Bool) {
        if let at = connectableRetryAt, at <= now {
            connectableRetryAt = nil
            connectableBlocked = false   // try connectable again; a refusal blocks it once more
        }
        if let at = rotateAt, at <= now {
            if !running || plan.payloads.count <= 1 {
                rotateAt = nil
            } else if idle {
                rotation = (rotation + 1) % plan.payloads.count
                rotateAt = now + settings.rotationSlotMicroseconds
            } else {
                rotateAt = now + settings.rotationSlotMicroseconds / 4 // a command is in flight: soon
            }
        }
    }

    // MARK: Deciding

    /// The commands that take the controller from what it advertises to the plan, in order.
    /// Call when scanning runs and no command is queued or in flight. `scanning` gives the
    /// legacy scan commands (disable, parameters, enable) for a new random address, which is
    /// controller-wide and set with scanning stopped.
    mutating func reconcile(now: UInt64, extended: Bool,
                            scanning: (_ randomAddress: Bool) -> (disable: HCICommand, parameters: HCICommand, enable: HCICommand),
                            counters: inout HCIRadioCounters) -> [Command] {
        if let until = blockedUntil {
            guard now >= until else { return [] }
            blockedUntil = nil
        }
        var commands: [Command] = []
        let disable: HCICommand = extended ? .leSetExtendedAdvertisingEnable(false) : .leSetAdvertiseEnable(false)
        func switchOff() {
            if onAir.enabled { commands.append((disable, .advertiseDisable)) }
            onAir.enabled = false
        }
        // Payloads longer than the controller sends (signed frames without extended advertising)
        // are left out of the rotation.
        let eligible = plan.payloads.indices.filter { plan.payloads[$0].count <= maximumDataLength }
        if eligible.count < plan.payloads.count, skippedPlan != plan {
            skippedPlan = plan
            counters.longPayloadsSkipped += UInt64(plan.payloads.count - eligible.count)
        }
        if plan.isOff || eligible.isEmpty {
            switchOff()
            onAir.payload = nil
            rotateAt = nil
            return commands
        }
        let index = eligible[rotation % eligible.count]
        let payload = plan.payloads[index]
        let extendedPDU = payload.count > AdvertisingPayload.legacyMaximumLength
        let connectable = plan.connectable.contains(index) && !connectableBlocked && !extendedPDU
        func parameters() {
            let interval = max(HCIRadio.units(settings.intervalMicroseconds), 160) // ≥ 100 ms when non-connectable
            commands.append((extended ? .leSetExtendedAdvertisingParameters(intervalUnits: UInt32(interval), connectable: connectable,
                                                                            extendedPDU: extendedPDU)
                                      : .leSetAdvertisingParameters(intervalUnits: interval, connectable: connectable),
                             .advertiseParameters))
            onAir.parametersSet = true
            onAir.connectable = connectable
            onAir.extendedPDU = extendedPDU
        }
        if onAir.parametersSet, onAir.connectable != connectable || onAir.extendedPDU != extendedPDU {
            // The PDU type changes only with advertising off.
            switchOff()
            onAir.parametersSet = false
        }
        if onAir.address != plan.address {
            switchOff()
            onAir.payload = nil
            if extended {
                if !onAir.parametersSet { parameters() }
                commands.append((.leSetAdvertisingSetRandomAddress(plan.address), .advertiseAddress))
            } else {
                let scan = scanning(plan.address != 0)
                commands.append((scan.disable, .scanDisable))
                commands.append((.leSetRandomAddress(plan.address), .advertiseAddress))
                commands.append((scan.parameters, .scanParameters))
                commands.append((scan.enable, .scanEnable))
            }
            onAir.address = plan.address
        }
        if !onAir.parametersSet { parameters() }
        if connectable, !plan.scanResponse.isEmpty, onAir.scanResponse != plan.scanResponse {
            switchOff()
            commands.append((extended ? .leSetExtendedScanResponseData(plan.scanResponse) : .leSetScanResponseData(plan.scanResponse),
                             .advertiseData))
            onAir.scanResponse = plan.scanResponse
        }
        if onAir.payload != payload {
            switchOff()
            commands.append((extended ? .leSetExtendedAdvertisingData(payload) : .leSetAdvertisingData(payload), .advertiseData))
            onAir.payload = payload
        }
        if !onAir.enabled {
            commands.append((extended ? .leSetExtendedAdvertisingEnable(true) : .leSetAdvertiseEnable(true), .advertiseEnable))
            onAir.enabled = true
        }
        rotateAt = eligible.count > 1 ? (rotateAt ?? now + settings.rotationSlotMicroseconds) : nil
        return commands
    }
}
