import Testing
import VigilBoard

/// What a board profile (board/*.yaml) says, checked before any chip is opened, and the messages
/// a person at the box reads when a board cannot be used.
@Suite struct BoardProfileTests {
    /// A chip path no machine has: should a check below let a profile through, opening it fails
    /// with a missing chip instead of touching real lines.
    let nowhere = "/nonexistent/vigil-test-gpiochip"

    @Test func theSimulatedProfileHasAnActiveLowButtonAndEveryOutputOnItsOwnLine() {
        let profile = BoardProfile.simulated
        #expect(profile.chip == "sim" && profile.button == BoardProfile.Line(offset: 0, activeLow: true))
        #expect(Set(profile.outputs.keys) == Set(OutputLine.allCases))
        let offsets = [profile.button.offset] + profile.outputs.values.map(\.offset)
        #expect(Set(offsets).count == offsets.count)
        #expect(profile.checkInButtons.isEmpty)
    }

    @Test func aCheckInButtonNamesItsResidentAndNoOtherLineDoes() {
        let profile = BoardProfile(name: "t", chip: nowhere, button: BoardProfile.Line(offset: 0),
                                   outputs: [.red: BoardProfile.Line(offset: 1)],
                                   checkInButtons: ["ana": BoardProfile.Line(offset: 5), "ben": BoardProfile.Line(offset: 6, activeLow: true)])
        #expect(profile.checkInResident(line: 5) == "ana")
        #expect(profile.checkInResident(line: 6) == "ben")
        #expect(profile.checkInResident(line: 0) == nil, "the SOS button is nobody's check-in")
        #expect(profile.checkInResident(line: 1) == nil)
        #expect(profile.checkInResident(line: UInt32.max) == nil)
    }

    @Test func aLineGivenTwoPurposesIsRefusedBeforeTheChipIsOpened() {
        let buttonAndRed = BoardProfile(name: "t", chip: nowhere, button: BoardProfile.Line(offset: 7),
                                        outputs: [.red: BoardProfile.Line(offset: 7), .green: BoardProfile.Line(offset: 8)])
        #expect(throws: BoardError.duplicateLine(chip: nowhere, line: 7, roles: ["button", "red"])) {
            try GPIOBoard(profile: buttonAndRed)
        }
        let greenAndCheckIn = BoardProfile(name: "t", chip: nowhere, button: BoardProfile.Line(offset: 0),
                                           outputs: [.green: BoardProfile.Line(offset: 3)],
                                           checkInButtons: ["ana": BoardProfile.Line(offset: 3)])
        #expect(throws: BoardError.duplicateLine(chip: nowhere, line: 3, roles: ["green", "check-in button for ana"])) {
            try GPIOBoard(profile: greenAndCheckIn)
        }
        let twoResidents = BoardProfile(name: "t", chip: nowhere, button: BoardProfile.Line(offset: 0), outputs: [:],
                                        checkInButtons: ["ben": BoardProfile.Line(offset: 4), "ana": BoardProfile.Line(offset: 4)])
        #expect(throws: BoardError.duplicateLine(chip: nowhere, line: 4, roles: ["check-in button for ana", "check-in button for ben"])) {
            try GPIOBoard(profile: twoResidents)
        }
    }
}

@Suite struct BoardErrorTests {
    @Test func aMissingChipMessageListsWhatTheMachineHas() {
        let none = BoardError.chipNotFound(chip: "pinctrl-bcm2711", available: []).description
        #expect(none.contains("no GPIO chip named or labelled pinctrl-bcm2711"))
        #expect(none.contains("no GPIO chip could be listed"))
        #expect(none.contains("run gpiodetect"))
        let two = BoardError.chipNotFound(chip: "pinctrl-bcm2711",
                                          available: ["gpiochip0 [pinctrl-bcm2835] (54 lines)", "gpiochip1 [raspberrypi-exp-gpio] (8 lines)"]).description
        #expect(two.contains("this machine has gpiochip0 [pinctrl-bcm2835] (54 lines), gpiochip1 [raspberrypi-exp-gpio] (8 lines)"))
    }

    @Test func aChipWithNoLinesIsSaidSoNotTrapped() {
        let empty = BoardError.lineOutOfRange(chip: "gpiochip9", line: 3, role: "button", lineCount: 0).description
        #expect(empty.contains("line 3 (button) is out of range: chip gpiochip9 has no lines"))
        let small = BoardError.lineOutOfRange(chip: "gpiochip0", line: 60, role: "red", lineCount: 54).description
        #expect(small.contains("chip gpiochip0 has 54 lines (0-53)"))
    }

    @Test func aBusyLineNamesItsHolderOrSaysItGaveNoName() {
        let ours = BoardError.lineBusy(chip: "gpiochip0", line: 17, role: "button", consumer: "vigil").description
        #expect(ours.contains("in use by vigil (is another Vigil node or `vigil debug gpio` running?)"))
        let other = BoardError.lineBusy(chip: "gpiochip0", line: 17, role: "button", consumer: "gpio-keys").description
        #expect(other.contains("line 17 of chip gpiochip0 is in use by gpio-keys, but the board profile wants it for the button"))
        for consumer: String? in [nil, ""] {
            let anonymous = BoardError.lineBusy(chip: "gpiochip0", line: 17, role: "red", consumer: consumer).description
            #expect(anonymous.contains("in use by another process that gave no consumer name"))
        }
    }

    @Test func aSharedLineMessageNamesBothPurposes() {
        let text = BoardError.duplicateLine(chip: "gpiochip0", line: 7, roles: ["button", "red"]).description
        #expect(text == "line 7 of chip gpiochip0 is given to button and red in the board profile; give each its own line")
        #expect(BoardError.permissionDenied(chip: "gpiochip0").description.contains("usermod -aG gpio vigil"))
    }
}
