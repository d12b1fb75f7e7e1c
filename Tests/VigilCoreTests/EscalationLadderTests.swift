import Testing
import VigilCore
import VigilEvents

private let second = LadderHarness.second
private let minute = LadderHarness.minute
private let hour = LadderHarness.hour
private let day = LadderHarness.day
private let contactAddresses = LadderEvents.contacts.map(\.address)

@Suite("Escalation ladder")
struct EscalationLadderTests {
    /// Enrols "r1" (seed defaults, 4 h interval) with the radio on, at the harness origin.
    static func enrolled(name: String = "Dora") -> LadderHarness {
        var h = LadderHarness()
        h.append(radio(.on))
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1", name: name)))
        return h
    }

    @Test func fullLadderWithSeedDefaults() {
        var h = Self.enrolled()
        let t0 = h.now
        #expect(h.plainDeadline("r1") == PlainDeadline("r1", ladder: 1, step: .prompt, due: t0 + 4 * hour))
        #expect(h.run(until: t0 + 4 * hour - 1).isEmpty)
        #expect(h.outbox.entries.isEmpty)

        // +4 h: "are you OK?" — an outbox entry for the resident, amber slow blink and a chirp.
        let prompt = h.run(until: t0 + 4 * hour)
        #expect(prompt.compactMap(PlainDeadline.init) == [PlainDeadline("r1", ladder: 1, step: .prompt, due: t0 + 4 * hour)])
        #expect(prompt.first?.timeMicroseconds == t0 + 4 * hour)
        #expect(h.step("r1") == .prompt)
        let promptEntry = h.outbox.entries["r1/1/prompt"]
        #expect(promptEntry?.channel == .resident)
        #expect(promptEntry?.recipients == [LadderEvents.residentPhone], "by SMS to the resident's own number")
        #expect(promptEntry?.text.contains("Dora") == true)
        #expect(promptEntry?.createdSequence == prompt.first?.sequence)
        #expect(h.outbox.pending.map(\.id) == ["r1/1/prompt"])
        var out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.amber]?.pattern == OutputPolicy.promptBlink)
        #expect(out[.buzzer]?.pattern == OutputPolicy.chirp)
        #expect(out[.red]?.pattern == .off)

        // +20 min: the text to the resident's own number, not to the contacts
        // (issue 10: contacts hear only at the last step; no staff channel is configured here).
        #expect(h.run(until: t0 + 4 * hour + 20 * minute - 1).isEmpty)
        let text = h.run(until: t0 + 4 * hour + 20 * minute)
        #expect(text.compactMap(PlainDeadline.init) == [PlainDeadline("r1", ladder: 1, step: .text, due: t0 + 4 * hour + 20 * minute)])
        #expect(h.step("r1") == .text)
        let textEntry = h.outbox.entries["r1/1/text"]
        #expect(textEntry?.channel == .resident)
        #expect(textEntry?.recipients == [LadderEvents.residentPhone])
        #expect(textEntry?.createdSequence == text.first?.sequence)
        out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.amber]?.pattern == OutputPolicy.promptBlink)
        #expect(out[.buzzer]?.pattern == OutputPolicy.chirp)

        // +5 min: the loud alarm (no message of its own).
        #expect(h.run(until: t0 + 4 * hour + 25 * minute - 1).isEmpty)
        let alarm = h.run(until: t0 + 4 * hour + 25 * minute)
        #expect(alarm.compactMap(PlainDeadline.init) == [PlainDeadline("r1", ladder: 1, step: .alarm, due: t0 + 4 * hour + 25 * minute)])
        #expect(h.step("r1") == .alarm)
        #expect(h.outbox.entries.count == 2)
        out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.buzzer]?.pattern == OutputPolicy.loudAlarm)
        #expect(out[.red]?.pattern == OutputPolicy.alarmBlink)
        // A call for help now, with no call tree on this box: "nobody to tell" on amber.
        #expect(out[.amber]?.pattern == OutputPolicy.unreachableBlink)
        #expect(h.resident("r1")?.triggered == 0)

        // +5 min: contacts told the emergency was triggered.
        #expect(h.run(until: t0 + 4 * hour + 30 * minute - 1).isEmpty)
        let notify = h.run(until: t0 + 4 * hour + 30 * minute)
        #expect(notify.compactMap(PlainDeadline.init) == [PlainDeadline("r1", ladder: 1, step: .notify, due: t0 + 4 * hour + 30 * minute)])
        #expect(h.step("r1") == .notify)
        #expect(h.resident("r1")?.triggered == 1)
        let notifyEntry = h.outbox.entries["r1/1/notify"]
        #expect(notifyEntry?.channel == .contacts)
        #expect(notifyEntry?.recipients == contactAddresses)
        #expect(notifyEntry?.createdSequence == notify.first?.sequence)
        out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.buzzer]?.pattern == OutputPolicy.loudAlarm)
        #expect(out[.red]?.pattern == OutputPolicy.alarmBlink)

        // The end of the ladder: nothing more, however long we wait.
        #expect(h.nextDeadline("r1") == nil)
        #expect(h.escalations.earliestDeadline == nil)
        #expect(h.run(until: t0 + 30 * day).isEmpty)
        #expect(Set(h.outbox.entries.keys) == ["r1/1/prompt", "r1/1/text", "r1/1/notify"])
        #expect(h.escalations.staleDeadlines == 0)
    }

    @Test func durationsAreConfigurablePerResident() {
        var h = LadderHarness()
        let t0 = h.now
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1", interval: 90 * minute, confirm: 7 * minute,
                                                             textToAlarm: 3 * minute, alarmToNotify: 11 * minute)))
        h.append(LadderEvents.enrolled(LadderEvents.resident("r2", interval: 2 * hour)))
        let appended = h.run(until: t0 + 3 * hour).compactMap(PlainDeadline.init)
        let p = t0 + 90 * minute
        #expect(appended == [
            PlainDeadline("r1", ladder: 1, step: .prompt, due: p),
            PlainDeadline("r1", ladder: 1, step: .text, due: p + 7 * minute),
            PlainDeadline("r1", ladder: 1, step: .alarm, due: p + 10 * minute),
            PlainDeadline("r1", ladder: 1, step: .notify, due: p + 21 * minute),
            PlainDeadline("r2", ladder: 1, step: .prompt, due: t0 + 2 * hour),
            PlainDeadline("r2", ladder: 1, step: .text, due: t0 + 2 * hour + 20 * minute),
            PlainDeadline("r2", ladder: 1, step: .alarm, due: t0 + 2 * hour + 25 * minute),
            PlainDeadline("r2", ladder: 1, step: .notify, due: t0 + 2 * hour + 30 * minute),
        ])
    }

    /// The due time of each step of the first ladder with the seed defaults and a 4 h interval.
    static func due(_ step: LadderStep, from t0: UInt64) -> UInt64 {
        switch step {
        case .prompt: t0 + 4 * hour
        case .text: t0 + 4 * hour + 20 * minute
        case .alarm: t0 + 4 * hour + 25 * minute
        default: t0 + 4 * hour + 30 * minute
        }
    }

    @Test(arguments: [LadderStep.prompt, .text, .alarm])
    func imOKCancelsTheLadderAndReschedules(at stop: LadderStep) {
        var h = Self.enrolled()
        let t0 = h.now
        h.run(until: Self.due(stop, from: t0))
        #expect(h.step("r1") == stop)
        // The deadline the scheduler would append next, had nobody answered.
        let pending = h.nextDeadline("r1")
        #expect(pending?.step == LadderStep(rawValue: stop.rawValue + 1))

        let okTime = Self.due(stop, from: t0) + 2 * minute
        let ok = h.at(okTime, checkIn("r1"))
        #expect(h.step("r1") == LadderStep.none)
        #expect(h.resident("r1")?.anchorMicroseconds == okTime)
        #expect(h.resident("r1")?.lastPositiveSequence == ok.sequence)
        #expect(h.plainDeadline("r1") == PlainDeadline("r1", ladder: 2, step: .prompt, due: okTime + 4 * hour))
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.red]?.pattern == .off)
        #expect(out[.buzzer]?.pattern == .off)
        #expect(out[.amber]?.pattern == .off)

        // Contacts hear "is OK" only if they were told something was wrong: before the last step
        // they were told nothing (issue 10; LadderRecipientsTests covers the staff).
        let okEntry = h.outbox.entries["r1/1/ok"]
        if stop != .notify {
            #expect(okEntry == nil)
        } else {
            #expect(okEntry?.channel == .contacts)
            #expect(okEntry?.recipients == contactAddresses)
            #expect(okEntry?.text.contains("OK") == true)
            #expect(okEntry?.createdSequence == ok.sequence)
        }

        // The old ladder is over: its next step never comes, even if the scheduler had it in hand.
        if let pending {
            let before = h.state
            h.append(LadderEvents.reached(pending))
            #expect(h.escalations.staleDeadlines == before.escalations.staleDeadlines + 1)
            #expect(h.escalations.residents == before.escalations.residents)
            #expect(h.outbox.entries == before.outbox.entries)
        }
        #expect(h.run(until: okTime + 4 * hour - 1).isEmpty)
        let next = h.run(until: okTime + 4 * hour)
        #expect(next.compactMap(PlainDeadline.init) == [PlainDeadline("r1", ladder: 2, step: .prompt, due: okTime + 4 * hour)])
        #expect(h.outbox.entries["r1/2/prompt"] != nil)
        #expect(h.resident("r1")?.triggered == 0)
    }

    @Test func imOKBeforeThePromptPostponesIt() {
        var h = Self.enrolled()
        let t0 = h.now
        h.at(t0 + 3 * hour, checkIn("r1", source: .checkInCli))
        #expect(h.run(until: t0 + 7 * hour - 1).isEmpty)
        #expect(h.run(until: t0 + 7 * hour).compactMap(PlainDeadline.init)
            == [PlainDeadline("r1", ladder: 1, step: .prompt, due: t0 + 7 * hour)])
    }

    @Test func afterTheEmergencyAPositiveStatusResetsToNormal() {
        var h = Self.enrolled()
        let t0 = h.now
        h.run(until: t0 + 6 * hour)
        #expect(h.step("r1") == .notify)
        #expect(h.nextDeadline("r1") == nil)

        let ok = h.append(checkIn("r1", source: .checkInHub))
        #expect(h.step("r1") == LadderStep.none)
        #expect(h.resident("r1")?.triggered == 1) // history stays
        #expect(h.outbox.entries["r1/1/ok"]?.recipients == contactAddresses)
        #expect(h.plainDeadline("r1") == PlainDeadline("r1", ladder: 2, step: .prompt, due: ok.timeMicroseconds + 4 * hour))
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.red]?.pattern == .off)
        #expect(out[.buzzer]?.pattern == .off)
        // The second ladder runs all the way again, with its own messages.
        h.run(until: ok.timeMicroseconds + 5 * hour)
        #expect(h.step("r1") == .notify)
        #expect(h.resident("r1")?.triggered == 2)
        #expect(h.outbox.entries["r1/2/notify"] != nil)
        #expect(h.outbox.entries.count == 7) // 3 + ok + 3
    }

    @Test func anImOKRacingTheSchedulerMakesItsDeadlineStale() {
        var h = Self.enrolled()
        let t0 = h.now
        h.run(until: t0 + 4 * hour + 19 * minute)
        let inHand = h.nextDeadline("r1")! // the text, computed before the check-in became durable
        h.append(checkIn("r1"))
        let before = h.state
        h.append(LadderEvents.reached(inHand))
        #expect(h.escalations.staleDeadlines == 1)
        #expect(h.escalations.residents == before.escalations.residents)
        #expect(h.outbox.entries["r1/1/text"] == nil)
    }

    // MARK: Restart mid-ladder

    /// Decision (issue 10): after a restart the ladder resumes at the earliest overdue step,
    /// which fires at once; every later step waits its full duration from then, so the resident
    /// has time to answer before contacts hear "emergency". Before, all three fired back to back.
    @Test func restartMidLadderFiresTheEarliestOverdueStepAndGivesTheRestTheirTime() throws {
        var h = Self.enrolled()
        let t0 = h.now
        h.run(until: t0 + 4 * hour + 1 * minute)
        #expect(h.step("r1") == .prompt)

        // The node stops after the prompt and comes back after text, alarm and notify were all due.
        var restarted = try h.restartedFromCheckpoint()
        #expect(restarted.state == h.state)
        let back = t0 + 5 * hour
        let atOnce = restarted.jump(to: back)
        #expect(atOnce.compactMap(PlainDeadline.init) == [PlainDeadline("r1", ladder: 1, step: .text, due: t0 + 4 * hour + 20 * minute)])
        #expect(atOnce.allSatisfy { $0.timeMicroseconds == back }) // the late one fires at once
        #expect(restarted.step("r1") == .text)
        #expect(restarted.plainDeadline("r1") == PlainDeadline("r1", ladder: 1, step: .alarm, due: back + 5 * minute))
        #expect(restarted.jump(to: back + 5 * minute - 1).isEmpty, "the alarm waits its full 5 minutes")
        let alarm = restarted.jump(to: back + 5 * minute)
        #expect(alarm.compactMap(PlainDeadline.init) == [PlainDeadline("r1", ladder: 1, step: .alarm, due: back + 5 * minute)])
        let notify = restarted.jump(to: back + 10 * minute)
        #expect(notify.compactMap(PlainDeadline.init) == [PlainDeadline("r1", ladder: 1, step: .notify, due: back + 10 * minute)])
        let appended = atOnce + alarm + notify
        #expect(restarted.escalations.staleDeadlines == 0)
        #expect(restarted.resident("r1")?.triggered == 1)
        // Each message exactly once.
        #expect(restarted.outbox.entries.keys.sorted() == ["r1/1/notify", "r1/1/prompt", "r1/1/text"])
        #expect(restarted.outbox.entries["r1/1/text"]?.createdSequence == appended[0].sequence)
        #expect(restarted.outbox.entries["r1/1/notify"]?.createdSequence == appended[2].sequence)
        let back2 = back + 10 * minute

        // Nothing repeats: neither at the same time nor later.
        #expect(restarted.jump(to: back2).isEmpty)
        #expect(restarted.jump(to: back2 + 10 * day).isEmpty)

        // A duplicate of each DeadlineReached (a second scheduler, a replayed append) is stale
        // and changes nothing else.
        for event in appended {
            let before = restarted.state
            restarted.appendAgain(event)
            #expect(restarted.escalations.staleDeadlines == before.escalations.staleDeadlines + 1)
            #expect(restarted.escalations.residents == before.escalations.residents)
            #expect(restarted.outbox == before.outbox)
            #expect(restarted.state.alarms == before.alarms)
        }
        // The very same event applied twice, too.
        let before = restarted.state
        restarted.state.apply(appended[1])
        #expect(restarted.escalations.staleDeadlines == before.escalations.staleDeadlines + 1)
        #expect(restarted.escalations.residents == before.escalations.residents)
        #expect(restarted.outbox == before.outbox)
    }

    @Test(arguments: [20, 25, 29, 30, 600])
    func restartFiresOnlyTheEarliestOverdueStep(minutesAfterPrompt: Int) throws {
        var h = Self.enrolled()
        let prompt = h.now + 4 * hour
        h.run(until: prompt)
        var restarted = try h.restartedFromCheckpoint()
        let back = prompt + UInt64(minutesAfterPrompt) * minute
        let appended = restarted.jump(to: back)
        #expect(appended.compactMap(PlainDeadline.init).map(\.step) == [.text])
        #expect(restarted.step("r1") == .text)
        #expect(restarted.plainDeadline("r1")?.due == back + 5 * minute, "the alarm gets its full 5 minutes from then")
    }

    @Test func aDeadlineOfARemovedOrUnknownResidentIsStale() {
        var h = Self.enrolled()
        h.append(LadderEvents.reached("nobody", ladder: 1, step: .prompt, due: h.now))
        // A made-up step of a real resident, a wrong ladder, a wrong due time.
        h.append(LadderEvents.reached("r1", ladder: 1, step: .text, due: h.now + 4 * hour))
        h.append(LadderEvents.reached("r1", ladder: 2, step: .prompt, due: h.now + 4 * hour))
        h.append(LadderEvents.reached("r1", ladder: 1, step: .prompt, due: h.now + 4 * hour - 1))
        h.append(LadderEvents.reached("r1", ladder: 1, step: LadderStep.none, due: h.now + 4 * hour))
        #expect(h.escalations.staleDeadlines == 5)
        #expect(h.step("r1") == LadderStep.none)
        #expect(h.outbox.entries.isEmpty)
    }

    // MARK: Residents changing

    @Test func anUpdateKeepsARunningLadderAndAppliesTheNewSettings() {
        var h = Self.enrolled()
        let t0 = h.now
        h.run(until: t0 + 4 * hour + 5 * minute)
        let before = h.resident("r1")!
        #expect(before.ladderStep == .prompt)

        let newContacts: [(name: String, address: String)] = [("Cleo", "+44 7700 900123")]
        h.append(LadderEvents.updated(LadderEvents.resident("r1", name: "Dora M.", confirm: 10 * minute, contacts: newContacts)))
        let after = h.resident("r1")!
        #expect(after.name == "Dora M.")
        #expect(after.ladderStep == .prompt)
        #expect(after.ladder == before.ladder)
        #expect(after.stepDueMicroseconds == before.stepDueMicroseconds)
        #expect(after.stepSequence == before.stepSequence)
        #expect(after.anchorMicroseconds == before.anchorMicroseconds)
        #expect(h.plainDeadline("r1") == PlainDeadline("r1", ladder: 1, step: .text, due: t0 + 4 * hour + 10 * minute))
        let text = h.run(until: t0 + 4 * hour + 10 * minute)
        #expect(text.count == 1)
        #expect(h.outbox.entries["r1/1/text"]?.recipients == [LadderEvents.residentPhone]) // the resident (issue 10)
        #expect(OutputPolicy.decide(h.state, running: true)[.amber]?.reasons.first?.text.contains("Dora M.") == true)
        h.run(until: t0 + 4 * hour + 20 * minute)
        #expect(h.outbox.entries["r1/1/notify"]?.recipients == ["+44 7700 900123"])
    }

    /// Issue 27, item 4: a message to a resident's id reached nobody, yet a notifier could call
    /// it delivered. Without a phone of their own the box's pattern is their prompt; the staff
    /// and contacts are told at their steps as before.
    @Test func aResidentWithoutAPhoneGetsNoMessageOnlyTheBoxsPrompt() {
        var h = LadderHarness()
        h.append(radio(.on))
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1", name: "Dora", ownAddress: "")))
        let t0 = h.now
        h.run(until: t0 + 4 * hour + 20 * minute)
        #expect(h.step("r1") == .text)
        #expect(h.outbox.entries.isEmpty)
        #expect(OutputPolicy.decide(h.state, running: true)[.amber]?.pattern == OutputPolicy.promptBlink)
        h.run(until: t0 + 4 * hour + 30 * minute)
        #expect(h.outbox.entries.keys.sorted() == ["r1/1/notify"])
    }

    @Test func anUpdateWhileIdleKeepsTheAnchor() {
        var h = Self.enrolled()
        let t0 = h.now
        h.at(t0 + 1 * hour, LadderEvents.updated(LadderEvents.resident("r1", interval: 2 * hour)))
        #expect(h.plainDeadline("r1") == PlainDeadline("r1", ladder: 1, step: .prompt, due: t0 + 2 * hour))
        h.at(t0 + 90 * minute, LadderEvents.updated(LadderEvents.resident("r1", mode: .off)))
        #expect(h.nextDeadline("r1") == nil) // checks switched off: no more deadlines
        #expect(h.run(until: t0 + 3 * day).isEmpty)
    }

    @Test func removalStopsItsDeadlinesAndAlarm() {
        var h = Self.enrolled()
        let t0 = h.now
        h.append(LadderEvents.enrolled(LadderEvents.resident("r2", interval: 8 * hour)))
        h.run(until: t0 + 4 * hour + 26 * minute)
        #expect(h.step("r1") == .alarm)
        let inHand = h.nextDeadline("r1")!
        #expect(OutputPolicy.decide(h.state, running: true)[.buzzer]?.pattern == OutputPolicy.loudAlarm)

        h.append(LadderEvents.removed("r1"))
        #expect(h.resident("r1") == nil)
        #expect(h.escalations.earliestDeadline.map(PlainDeadline.init) == PlainDeadline("r2", ladder: 1, step: .prompt, due: t0 + 8 * hour))
        let out = OutputPolicy.decide(h.state, running: true)
        #expect(out[.buzzer]?.pattern == .off)
        #expect(out[.red]?.pattern == .off)
        h.append(LadderEvents.reached(inHand))
        #expect(h.escalations.staleDeadlines == 1)
        #expect(h.outbox.entries["r1/1/notify"] == nil)
        let later = h.run(until: t0 + 2 * day).compactMap(PlainDeadline.init)
        #expect(!later.isEmpty)
        #expect(later.allSatisfy { $0.resident == "r2" })
        // Check-ins of a removed resident do nothing to the ladder.
        h.append(checkIn("r1"))
        #expect(h.resident("r1") == nil)
    }

    @Test(arguments: [false, true])
    func reEnrolmentAfterRemovalSendsFreshMessages(checkpointInBetween: Bool) throws {
        var h = Self.enrolled()
        let t0 = h.now
        h.run(until: t0 + 4 * hour + 21 * minute) // prompt and text of ladder 1 are in the outbox
        h.append(LadderEvents.removed("r1"))
        if checkpointInBetween { h = try h.restartedFromCheckpoint() }
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1", name: "Dora")))
        let again = h.now
        let appended = h.run(until: again + 4 * hour + 20 * minute)
        // The numbering goes on, so every step of the new ladder reaches someone.
        #expect(appended.compactMap(PlainDeadline.init) == [
            PlainDeadline("r1", ladder: 2, step: .prompt, due: again + 4 * hour),
            PlainDeadline("r1", ladder: 2, step: .text, due: again + 4 * hour + 20 * minute),
        ])
        #expect(h.outbox.entries.count == 4)
        #expect(h.outbox.entries["r1/2/prompt"]?.createdSequence == appended[0].sequence)
        #expect(h.outbox.entries["r1/2/text"]?.createdSequence == appended[1].sequence)
        #expect(h.outbox.entries["r1/1/text"]?.createdSequence != appended[1].sequence)
    }

    // MARK: Replay

    /// Two residents, a full ladder, check-ins, a pulse-mode tag, an update and a removal, outbox
    /// attempts, an SOS and an acknowledgement.
    static func busyDay() -> LadderHarness {
        var h = LadderHarness()
        let t0 = h.now
        h.append(nodeStarted(id: 0xB0C5))
        h.append(radio(.on))
        h.append(LadderEvents.enrolled(LadderEvents.resident("r1", name: "Dora", pauses: [(t0 + 9 * hour, t0 + 10 * hour)],
                                                             night: (22 * 60, 6 * 60, 120))))
        h.append(LadderEvents.enrolled(LadderEvents.resident("r2", name: "Emil", mode: .pulse, interval: 2 * hour,
                                                             tag: 0xC0FF_EE00_0042)))
        h.at(t0 + 90 * minute, LadderEvents.tagSeen(0xC0FF_EE00_0042))
        h.at(t0 + 100 * minute, LadderEvents.heartRate("r2", bpm: 71, flags: 0b110))
        h.at(t0 + 101 * minute, LadderEvents.heartRate("r2", bpm: 71, flags: 0b100))
        h.run(until: t0 + 4 * hour + 27 * minute) // r1 alarming, r2 prompted
        h.append(button())
        h.append(button(edge: .rising))
        h.append(LadderEvents.acknowledged())
        h.at(t0 + 4 * hour + 28 * minute, LadderEvents.attempt("r1/1/prompt", 1, delivered: false, error: "no route"))
        h.at(t0 + 4 * hour + 29 * minute, LadderEvents.attempt("r1/1/prompt", 2, delivered: true))
        h.run(until: t0 + 5 * hour) // r1 triggered
        h.append(checkIn("r1"))
        h.append(.alertRaised(alert(origin: 0xB0C5, counter: 1)))
        h.append(LadderEvents.acknowledged())
        h.at(t0 + 6 * hour, cancellation(origin: 0xB0C5, counter: 1, by: 0xB0C5))
        h.append(LadderEvents.updated(LadderEvents.resident("r2", name: "Emil", mode: .pulse, interval: 3 * hour,
                                                            tag: 0xC0FF_EE00_0042)))
        h.at(t0 + 7 * hour, LadderEvents.tagSeen(0xC0FF_EE00_0042))
        h.run(until: t0 + 14 * hour)
        h.append(LadderEvents.removed("r2"))
        h.run(until: t0 + 2 * day)
        return h
    }

    @Test func replayIsDeterministicByteForByte() throws {
        let h = Self.busyDay()
        // The history really exercised the ladder.
        #expect(h.log.count > 30)
        #expect(h.state.escalations.residents["r1"].map { $0.triggered >= 1 } == true)
        #expect(h.state.escalations.implausibleData == 1)
        #expect(h.state.alarms.acknowledgements == 2)
        #expect(h.state.outbox.deliveredTotal == 1)
        #expect(h.state.outbox.entries.count > 5)

        let first = try h.replayed().encoded()
        let second = try h.replayed().encoded()
        #expect(first == second)
        #expect(first == (try h.state.encoded())) // live (incremental) = replay
        #expect(h.replayed() == h.state)
    }

    @Test func checkpointMidwayPlusTailEqualsFullReplay() throws {
        let h = Self.busyDay()
        let full = try h.replayed().encoded()
        for split in 0...h.log.count {
            var state = Projections()
            for event in h.log[..<split] { state.apply(event) }
            var resumed = try Projections.decoded(state.encoded())
            for event in h.log[split...] { resumed.apply(event) }
            let bytes = try resumed.encoded()
            #expect(bytes == full, "checkpoint after \(split) events + tail differs from a full replay")
            if bytes != full { break }
        }
    }

    @Test func replayNeverResendsOrResounds() throws {
        let h = Self.busyDay()
        let replayed = h.replayed()
        // Replaying gives the same outbox (a delivered entry stays delivered, nothing new pending)
        // and the same silenced alarms; no deadline is due again.
        #expect(replayed.outbox == h.state.outbox)
        #expect(replayed.outbox.entries["r1/1/prompt"]?.delivered == true)
        #expect(!replayed.outbox.pending.contains { $0.id == "r1/1/prompt" })
        #expect(replayed.alarms == h.state.alarms)
        var resumed = LadderHarness(state: replayed, now: h.now, nextSequence: h.nextSequence)
        #expect(resumed.runScheduler().isEmpty)
    }
}
