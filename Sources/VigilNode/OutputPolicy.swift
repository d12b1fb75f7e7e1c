import VigilBoard
import VigilCore
import VigilEvents

/// Outputs are a pure function of projection state; the loop drives the board to match after
/// every change, so a restart restores them from state and a replay never drives anything.
///
/// Today's policy (the alarm ladder and gestures extend it):
/// - green: the node runs and the radio is on;
/// - amber: the radio is not on;
/// - red: an SOS raised here is active;
/// - blue: an alert received from another box is active;
/// - buzzer: off (the escalation ladder will sound it).
public enum OutputPolicy {
    public static func desired(_ state: Projections, running: Bool) -> [OutputLine: Bool] {
        let radioOn = state.health.radioState == RadioState.on.rawValue
        let active = state.alerts.active
        return [
            .green: running && radioOn,
            .amber: running && !radioOn,
            .red: active.contains { $0.raisedHere && $0.kind == AlertKind.sos.rawValue },
            .blue: active.contains { !$0.raisedHere },
            .buzzer: false,
        ]
    }
}
