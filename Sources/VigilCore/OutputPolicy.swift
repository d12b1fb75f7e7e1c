import Foundation
import VigilCAP
import VigilEvents

/// The outputs every Vigil board has.
public enum OutputLine: String, Sendable, CaseIterable, Codable {
    case red, amber, green, blue, buzzer
}

/// How a line should behave. Patterns are periodic, so a driver can realise them with one timer
/// and they need no state beyond when they began.
public enum OutputPattern: Equatable, Sendable, Codable, CustomStringConvertible {
    case off
    case on
    /// On for `onMilliseconds` at the start of every `periodMilliseconds`.
    case blink(periodMilliseconds: UInt32, onMilliseconds: UInt32)

    /// The level `elapsed` milliseconds after the pattern began.
    public func level(atMilliseconds elapsed: UInt64) -> Bool {
        switch self {
        case .off: false
        case .on: true
        case .blink(let period, let on): elapsed % UInt64(max(period, 1)) < UInt64(on)
        }
    }

    /// When (in milliseconds since the pattern began) the level next changes after `elapsed`.
    public func nextChange(afterMilliseconds elapsed: UInt64) -> UInt64? {
        guard case .blink(let period, let on) = self, period > 0, on > 0, on < period else { return nil }
        let p = UInt64(period), phase = elapsed % p, cycle = elapsed - phase
        return phase < UInt64(on) ? cycle + UInt64(on) : cycle + p
    }

    public var description: String {
        switch self {
        case .off: "off"
        case .on: "on"
        case .blink(let period, let on): "blinking \(on) ms every \(period) ms"
        }
    }
}

/// Why a line is driven: words for people and the sequences of the events behind it.
public struct OutputReason: Equatable, Sendable, Codable {
    public var text: String
    public var sequences: [UInt64]

    public init(text: String, sequences: [UInt64]) {
        self.text = text
        self.sequences = sequences
    }
}

public struct OutputDecision: Equatable, Sendable, Codable {
    public var pattern: OutputPattern
    public var reasons: [OutputReason]

    public init(pattern: OutputPattern, reasons: [OutputReason]) {
        self.pattern = pattern
        self.reasons = reasons
    }

    static let off = OutputDecision(pattern: .off, reasons: [])
}

/// Outputs are a pure function of projection state; the node drives the board to match after
/// every change, so a restart restores them from state and a replay drives nothing.
///
/// Priorities, per line (first match wins):
/// - red: an SOS raised here is active (on; a short dip every 2 s once a person took its call or
///   another box acknowledged it) › a resident's loud alarm (fast blink)
/// - amber: the button is held past a long press that re-affirmed this box's own SOS ("keep
///   holding to cancel": mostly on, quick dips) › the button is held (fast blink, feedback before
///   SOS) › a hazard warning (a road user heading for the site, a work zone near it: quick even
///   flashes for a few seconds) › "are you OK?" (slow blink) › a public warning for this place
///   that is shown or sounds (docs/warnings.md "How loud"; a very slow even blink) › "no way to tell anyone": messages that must reach
///   someone cannot (no notifier configured, or failing for `notify.unreachable_after`; long on,
///   one second dark every 4 s)
///   › the radio is not on (on)
/// - green: running with the radio on
/// - blue: an alert received from another box is active (on; a short dip every 2 s once every
///   such alert is acknowledged, here or by another box) › a high-risk exposure was found
///   (slow blink, until retention removes it)
/// - buzzer: a loud alarm not silenced › an SOS here not silenced › a call for help received
///   from another box (SOS, medical) that nobody has answered, not silenced (a double-quick
///   chirp every 5 s, until it is acknowledged here or by another box, or silenced with
///   `vigil ack`) › a hazard warning (quick beeps for a few seconds) › a public warning that
///   sounds, not silenced (a long beep every 10 s, until `vigil ack` or a short press silences
///   it, or it ends) › "are you OK?" chirp
public enum OutputPolicy {
    public static let alarmBlink = OutputPattern.blink(periodMilliseconds: 500, onMilliseconds: 250)
    public static let heldBlink = OutputPattern.blink(periodMilliseconds: 200, onMilliseconds: 100)
    public static let promptBlink = OutputPattern.blink(periodMilliseconds: 1_000, onMilliseconds: 500)
    /// "Keep holding to cancel your SOS": mostly on with quick dips, unlike the fast blink of
    /// "held, SOS coming" — the person holding on sees that something else is happening now.
    /// "No way to tell anyone": on three seconds, dark one, every four — a standing fault, slower
    /// than every other amber pattern and unlike the steady "radio not on".
    public static let unreachableBlink = OutputPattern.blink(periodMilliseconds: 4_000, onMilliseconds: 3_000)
    public static let cancelHoldBlink = OutputPattern.blink(periodMilliseconds: 600, onMilliseconds: 450)
    public static let loudAlarm = OutputPattern.blink(periodMilliseconds: 1_000, onMilliseconds: 600)
    public static let sosTone = OutputPattern.blink(periodMilliseconds: 2_000, onMilliseconds: 300)
    /// "Acknowledged": on, with a short dip every two seconds — still reads as on, and the dip
    /// says someone has answered.
    public static let acknowledgedPulse = OutputPattern.blink(periodMilliseconds: 2_000, onMilliseconds: 1_700)
    /// A short chirp once a minute while someone is asked "are you OK?".
    public static let chirp = OutputPattern.blink(periodMilliseconds: 60_000, onMilliseconds: 150)
    /// A short chirp every five seconds while a call for help heard from another box waits for
    /// an answer: more insistent than the prompt's chirp, far from the SOS tone.
    public static let callChirp = OutputPattern.blink(periodMilliseconds: 5_000, onMilliseconds: 100)
    /// "The card stopped taking writes": a short flash every second, unlike every other amber
    /// pattern (a volunteer told "amber flicking: change the card" can tell it apart).
    public static let logFailedFlash = OutputPattern.blink(periodMilliseconds: 1_000, onMilliseconds: 120)
    /// "Danger on the road": quick even flashes and beeps while a hazard warning lasts (a few
    /// seconds), unlike the held button's faster blink and every slower pattern.
    public static let hazardFlash = OutputPattern.blink(periodMilliseconds: 400, onMilliseconds: 200)
    /// "A public warning for this place": a very slow even blink on amber for as long as it is in
    /// force, slower than "are you OK?" and unlike every fault's pattern.
    public static let warningBlink = OutputPattern.blink(periodMilliseconds: 3_000, onMilliseconds: 1_500)
    /// A public warning that sounds: one long beep every ten seconds, insistent but unlike a call
    /// for help's chirp or the SOS tone, until it is silenced or ends.
    public static let warningTone = OutputPattern.blink(periodMilliseconds: 10_000, onMilliseconds: 1_000)

    /// `logFailure`: why the log stopped taking writes, when the node runs on from memory (not an
    /// event: nothing can be logged then). It shows on amber after the button and the prompts.
    /// `callPathProblem`: why the box cannot call for help now (the alarm centre's link has not
    /// been acknowledged since ...; the link's own state, not an event): amber after the log's
    /// failure, before undelivered messages.
    public static func decide(_ s: Projections, running: Bool, logFailure: String? = nil,
                              callPathProblem: String? = nil) -> [OutputLine: OutputDecision] {
        var out = Dictionary(uniqueKeysWithValues: OutputLine.allCases.map { ($0, OutputDecision.off) })
        guard running else { return out }
        let active = s.alerts.active
        let sosHere = active.filter { $0.raisedHere && $0.kind == AlertKind.sos.rawValue }
        let received = active.filter { !$0.raisedHere }
        let alarming = s.escalations.alarming
        let prompting = s.escalations.prompting
        let radioOn = s.health.radioState == RadioState.on.rawValue
        let unreachable = s.outbox.unreachableEntries

        let sosReasons = sosHere.map { OutputReason(text: "SOS \($0.idText) raised here", sequences: [$0.firstSequence]) }
        let alarmReasons = alarming.map {
            OutputReason(text: "\($0.ladderStep == .notify ? "emergency triggered" : "loud alarm") for \(label($0))",
                         sequences: [$0.stepSequence])
        }
        let hazardReasons = hazardWarningReasons(s)
        let warningReasons = publicWarningReasons(s)
        let promptReasons = prompting.map {
            // At the text step the resident is asked again (by SMS with a number of their own)
            // and the staff are told; contacts only hear at the last step.
            OutputReason(text: "asking \(label($0)) \"are you OK?\"\($0.ladderStep == .text ? secondAsk($0, staff: !s.escalations.context.staff.isEmpty) : "")",
                         sequences: [$0.stepSequence])
        }

        if !sosHere.isEmpty {
            // The dip only when every SOS raised here has been answered: a person took its call
            // (`AlertTaken`), or another box acknowledged it.
            let answers: [OutputReason] = sosHere.compactMap { sos in
                if let taken = s.calls.calls[CallBook.id(alert: sos.idText)]?.taken {
                    return OutputReason(text: "SOS \(sos.idText) taken by \(taken.by) \(CallBook.viaText(TakenVia(rawValue: taken.via) ?? .unspecified))",
                                        sequences: [taken.sequence])
                }
                return s.alerts.acknowledgement(of: sos).map {
                    OutputReason(text: "SOS \($0.idText) acknowledged by another box (\($0.hops) hops)", sequences: [$0.sequence])
                }
            }
            if answers.count == sosHere.count {
                out[.red] = OutputDecision(pattern: acknowledgedPulse, reasons: sosReasons + answers)
            } else {
                out[.red] = OutputDecision(pattern: .on, reasons: sosReasons)
            }
        } else if !alarming.isEmpty {
            out[.red] = OutputDecision(pattern: alarmBlink, reasons: alarmReasons)
        }

        if s.alarms.buttonHeld && s.alarms.reaffirmedWhileHeld && !sosHere.isEmpty {
            out[.amber] = OutputDecision(pattern: cancelHoldBlink, reasons: [
                OutputReason(text: "button held: SOS \(sosHere.map(\.idText).joined(separator: ", ")) re-affirmed; keep holding to cancel it, release to keep it",
                             sequences: [s.alarms.buttonEdgeSequence, s.alarms.reaffirmedSequence]),
            ])
        } else if s.alarms.buttonHeld {
            out[.amber] = OutputDecision(pattern: heldBlink, reasons: [
                OutputReason(text: "button held (SOS after a long press)", sequences: [s.alarms.buttonEdgeSequence]),
            ])
        } else if !hazardReasons.isEmpty {
            out[.amber] = OutputDecision(pattern: hazardFlash, reasons: hazardReasons)
        } else if !prompting.isEmpty {
            out[.amber] = OutputDecision(pattern: promptBlink, reasons: promptReasons)
        } else if !warningReasons.isEmpty {
            out[.amber] = OutputDecision(pattern: warningBlink, reasons: warningReasons)
        } else if let logFailure {
            out[.amber] = OutputDecision(pattern: logFailedFlash, reasons: [
                OutputReason(text: "the card stopped taking writes (\(logFailure)): running from memory, nothing new is logged; replace the card",
                             sequences: []),
            ])
        } else if let callPathProblem {
            out[.amber] = OutputDecision(pattern: unreachableBlink, reasons: [
                OutputReason(text: "cannot call for help: \(callPathProblem)", sequences: []),
            ])
        } else if !unreachable.isEmpty || !s.calls.nobodyToTell.isEmpty {
            out[.amber] = OutputDecision(pattern: unreachableBlink, reasons: s.calls.nobodyToTell.map {
                OutputReason(text: "no way to tell anyone: call for help \($0.code) has nobody to tell (set notify.staff or calls.tree)",
                             sequences: [$0.startedSequence])
            } + unreachable.map { e, why in
                let cause = switch why {
                case .noNotifier: "no notify.command is configured"
                case .failingSince(let t): "failing for \((e.lastAttemptMicroseconds - t) / 60_000_000) min: \(e.lastError)"
                }
                return OutputReason(text: "no way to tell anyone: message \(e.id) not delivered (\(cause))",
                                    sequences: [e.createdSequence] + (e.lastAttemptSequence.map { [$0] } ?? []))
            })
        } else if !radioOn {
            out[.amber] = OutputDecision(pattern: .on, reasons: [
                OutputReason(text: "radio is \(RadioState(rawValue: s.health.radioState).map { "\($0)" } ?? "unknown")",
                             sequences: s.health.radioStateSequence == 0 ? [] : [s.health.radioStateSequence]),
            ])
        }

        if radioOn {
            out[.green] = OutputDecision(pattern: .on, reasons: [
                OutputReason(text: "running, radio \(s.health.radioAdapter) on", sequences: [s.health.radioStateSequence]),
            ])
        }

        if !received.isEmpty {
            var allAcknowledged = true
            var reasons: [OutputReason] = []
            for alert in received {
                reasons.append(OutputReason(text: "alert \(alert.idText) received (\(alert.hops) hops)", sequences: [alert.firstSequence]))
                if let ack = s.alerts.acknowledgement(of: alert) {
                    reasons.append(OutputReason(text: "alert \(alert.idText) acknowledged \(ack.madeHere ? "here" : "by another box")",
                                                sequences: [ack.sequence]))
                } else {
                    allAcknowledged = false
                }
            }
            out[.blue] = OutputDecision(pattern: allAcknowledged ? acknowledgedPulse : .on, reasons: reasons)
        } else if !s.exposures.highRisk.isEmpty {
            out[.blue] = OutputDecision(pattern: promptBlink, reasons: s.exposures.highRisk.map {
                OutputReason(text: "high-risk exposure (\(String(format: "%.1f", $0.weightedMinutes)) weighted minutes, from \($0.source))",
                             sequences: [$0.sequence])
            })
        }

        let loud = alarming.filter { !s.alarms.silenced.contains(AlarmKey.ladder($0)) }
        let sosLoud = sosHere.filter { !s.alarms.silenced.contains(AlarmKey.sos($0)) }
        let callsLoud = s.alerts.awaitingAcknowledgement.filter { !s.alarms.silenced.contains(AlarmKey.received($0)) }
        let warningsSounding = soundingWarnings(s)
        if !loud.isEmpty {
            out[.buzzer] = OutputDecision(pattern: loudAlarm, reasons: loud.map {
                OutputReason(text: "loud alarm for \(label($0))", sequences: [$0.stepSequence])
            })
        } else if !sosLoud.isEmpty {
            out[.buzzer] = OutputDecision(pattern: sosTone, reasons: sosLoud.map {
                OutputReason(text: "SOS \($0.idText) raised here (a short press silences)", sequences: [$0.firstSequence])
            })
        } else if !callsLoud.isEmpty {
            out[.buzzer] = OutputDecision(pattern: callChirp, reasons: callsLoud.map {
                OutputReason(text: "call for help \($0.idText) from another box not answered (a short press answers, `vigil ack` silences)",
                             sequences: [$0.firstSequence])
            })
        } else if !hazardReasons.isEmpty {
            out[.buzzer] = OutputDecision(pattern: hazardFlash, reasons: hazardReasons)
        } else if !warningsSounding.isEmpty {
            out[.buzzer] = OutputDecision(pattern: warningTone, reasons: warningsSounding.map {
                OutputReason(text: "public warning sounds: \(warningText($0)) (`vigil ack` or a short press silences it)",
                             sequences: s.warnings.source(of: $0.key).map { [$0.sequence] } ?? [])
            })
        } else if !prompting.isEmpty {
            out[.buzzer] = OutputDecision(pattern: chirp, reasons: promptReasons)
        }
        return out
    }

    /// Alarms whose buzzer sounds now and that an acknowledgement (`AlarmAcknowledged`) would
    /// silence: this box's own (see `soundingOwnAlarms`) and the chirp of calls for help heard
    /// from other boxes.
    public static func soundingAlarms(_ s: Projections) -> [String] {
        let calls = s.alerts.awaitingAcknowledgement.map(AlarmKey.received)
        return soundingOwnAlarms(s) + calls.filter { !s.alarms.silenced.contains($0) } + soundingWarnings(s).map(AlarmKey.warning)
    }

    /// Public warnings whose tone sounds now: in force here at level `sounds`, not silenced.
    public static func soundingWarnings(_ s: Projections) -> [CAPWarning] {
        s.warnings.inForceHere.filter { $0.level == .sounds && !s.alarms.silenced.contains(AlarmKey.warning($0)) }
    }

    /// The public warnings on amber now (shown or sounding), as `vigil why` tells them.
    public static func publicWarningReasons(_ s: Projections) -> [OutputReason] {
        s.warnings.inForceHere.filter { $0.level == .shown || $0.level == .sounds }.map {
            OutputReason(text: "public warning: \(warningText($0))", sequences: s.warnings.source(of: $0.key).map { [$0.sequence] } ?? [])
        }
    }

    /// "Flash flood: evacuate the river flats now (Extreme, Immediate, Observed) from Example
    /// Bureau of Meteorology, until 2026-11-30T12:00:00+11:00".
    public static func warningText(_ w: CAPWarning) -> String {
        guard let info = w.infos.first else { return "\(CAPText.oneLine(w.alert.identifier, limit: 80)) from \(CAPText.oneLine(w.alert.sender, limit: 80))" }
        let what = CAPText.oneLine(info.headline ?? info.event, limit: 120)
        let from = CAPText.oneLine(info.senderName ?? w.alert.sender, limit: 80)
        let until = CAPTime(microseconds: w.expiresMicroseconds, offsetMinutes: info.expires?.offsetMinutes ?? w.alert.sent.offsetMinutes)
        // One heard on the air has no grading: its frame says only how loud it is.
        let grading = info.severity == .unknown && info.urgency == .unknown && info.certainty == .unknown ? ""
            : " (\(info.severity.rawValue), \(info.urgency.rawValue), \(info.certainty.rawValue))"
        return "\(what)\(grading) from \(from), until \(until)"
    }

    /// This box's own alarms sounding now (a resident's ladder, an SOS raised here): what a short
    /// press at the box silences. When none sounds, the press answers the calls for help heard
    /// from other boxes instead (acknowledging them over the air), so a received call's chirp is
    /// never merely silenced by the person who could answer it.
    public static func soundingOwnAlarms(_ s: Projections) -> [String] {
        let ladder = s.escalations.alarming.map(AlarmKey.ladder)
        let sos = s.alerts.active.filter { $0.raisedHere && $0.kind == AlertKind.sos.rawValue }.map(AlarmKey.sos)
        return (ladder + sos).filter { !s.alarms.silenced.contains($0) }
    }

    /// The hazard warning sounding now, as `vigil why` tells it.
    public static func hazardWarningReasons(_ s: Projections) -> [OutputReason] {
        guard let w = s.hazards.warning else { return [] }
        let kind = HazardBook.name(HazardKind(rawValue: w.kind) ?? .unspecified)
        let what = [HazardKind.workZone.rawValue, HazardKind.trafficJam.rawValue].contains(w.kind)
            ? "a \(kind) \(Int(w.distanceFeet.rounded())) ft from the site"
            : "a \(kind) heading for the site, \(Int(w.distanceFeet.rounded())) ft away"
        return [OutputReason(text: "hazard warning: \(what)", sequences: [w.sequence])]
    }

    private static func label(_ r: EscalationBook.ResidentState) -> String { r.name.isEmpty ? r.id : "\(r.name) (\(r.id))" }

    /// What the ladder's second step did, said exactly (the page and `vigil why` read it).
    static func secondAsk(_ r: EscalationBook.ResidentState, staff: Bool) -> String {
        let told = [r.ownAddress.isEmpty ? nil : "asked again by SMS", staff ? "staff told" : nil].compactMap { $0 }
        return told.isEmpty ? " (asked again)" : " (\(told.joined(separator: ", ")))"
    }
}
