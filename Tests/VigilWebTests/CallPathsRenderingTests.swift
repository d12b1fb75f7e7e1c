import Testing
import VigilCore
@testable import VigilNode
@testable import VigilWeb

/// The Box section's "Calling for help" line: why the box cannot call, each path's state, and
/// the failure's details for staff only (they name hosts and numbers).
@Suite struct CallPathsRenderingTests {
    static let now: UInt64 = 1_800_000_000_000_000

    static func snapshot() -> NodeSnapshot {
        var s = NodeSnapshot(state: Projections(), decisions: [:], live: nil, timeMicroseconds: now)
        typealias Path = NodeSnapshot.CallPathsView.Path
        s.callPaths = NodeSnapshot.CallPathsView(
            problem: "the alarm centre has not answered for 5 min",
            alarmCentre: Path(lastGoodMicroseconds: now - 900_000_000, lastTestMicroseconds: now - 300_000_000, lastTestPassed: false,
                              failingSinceMicroseconds: now - 300_000_000, lastProblem: "connect to 10.20.30.40:5000 refused"),
            messages: Path(lastGoodMicroseconds: now - 120_000_000, lastTestMicroseconds: now - 120_000_000, lastTestPassed: true,
                           failingSinceMicroseconds: nil, lastProblem: nil),
            logOpeningSeconds: 12)
        return s
    }

    @Test func staffSeeWhyTheBoxCannotCallEachPathsStateAndTheFailuresDetails() {
        let html = PageRenderer.section("system", Self.snapshot(), viewer: .init(acting: true, csrf: "t"))
        #expect(html.contains("<dt>Calling for help</dt>"))
        #expect(html.contains("Cannot call for help: the alarm centre has not answered for 5 min"))
        #expect(html.contains("alarm centre: <span class=\"warn\">failing since 5 min ago</span>"))
        #expect(html.contains("(connect to 10.20.30.40:5000 refused)"))
        #expect(html.contains("test messages: worked 2 min ago; last test 2 min ago, passed"))
        #expect(html.contains("the log has been checked for 12 s after an unclean stop"))
    }

    @Test func thePublicViewSaysTheBoxCannotCallButNotTheHostsBehindIt() {
        let html = PageRenderer.section("system", Self.snapshot().forPublic(), viewer: .init(acting: false, csrf: ""))
        // The problem line is said again from the paths' state: the box's own words carry hosts.
        #expect(html.contains("Cannot call for help: the alarm centre is failing"))
        #expect(html.contains("alarm centre: <span class=\"warn\">failing since 5 min ago</span>"))
        #expect(!html.contains("10.20.30.40"))
    }

    @Test func aBoxWithNoFailingPathSaysSoAndAnUntestedPathSaysItWasNotTried() {
        var s = Self.snapshot()
        s.callPaths = NodeSnapshot.CallPathsView(problem: nil, alarmCentre: .init(), messages: nil, logOpeningSeconds: nil)
        let html = PageRenderer.section("system", s, viewer: .init(acting: false, csrf: ""))
        #expect(html.contains("<dt>Calling for help</dt><dd>no path is known to fail<br>alarm centre: not tried yet</dd>"))
    }

    @Test func aReasonIsEscaped() {
        var s = Self.snapshot()
        s.callPaths?.problem = "<script>x</script>"
        let html = PageRenderer.section("system", s, viewer: .init(acting: true, csrf: "t"))
        #expect(html.contains("&lt;script&gt;x&lt;/script&gt;") && !html.contains("<script>x"))
    }
}
