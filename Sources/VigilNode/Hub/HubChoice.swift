import Foundation
import Logging
import VigilHubProtocol
import VigilSystem

/// Which of the box's hubs the workers talk to (docs/hub.md "The nearest hub"). The hubs a box
/// lists are entry points of one shelter network, on one database: the same credential works at
/// each, and what one acknowledged the others hold. The box uses the nearest that answers
/// (`HubRoute`), fails over to the next nearest when it does not, and goes back to the nearest
/// after `failbackMicroseconds` away from it.
///
/// Shared by the uplink and the downlink, which call it from their own tasks (hence the lock).
final class HubChoice: Sendable {
    struct Hub: Sendable {
        let client: HubClient
        let link: HubLinks.Link
        /// From the box's site; nil when either location is unknown.
        let kilometres: Double?
        var fingerprint: String { link.fingerprint }
        var label: String { link.url + (kilometres.map { " (\(Int($0.rounded())) km)" } ?? "") }
    }

    /// Nearest first.
    let hubs: [Hub]
    private let clock: any WallClock
    private let logger: Logger
    static let failbackMicroseconds: UInt64 = 600_000_000

    private struct State {
        var current = 0
        var leftNearestAt: UInt64 = 0
        /// Hubs that failed since the last exchange that worked (a full round without an answer
        /// means waiting before the next).
        var failedSinceSuccess: Set<Int> = []
    }
    private let state = LockedValue(State())

    /// `links` in the order they were joined; `site` is the box's `site.location`; `heardTime`
    /// is told the hub's time from each answer (`HubClient`).
    init(links: [HubLinks.Link], node: UInt64, site: GeoPoint?, clock: any WallClock, logger: Logger,
         heardTime: (@Sendable (UInt64) -> Void)? = nil) throws(HubClient.Failure) {
        var hubs: [Hub] = []
        var firstFailure: HubClient.Failure?
        for index in HubRoute.order(links.map { $0.location.flatMap(GeoPoint.init(text:)) }, from: site) {
            let link = links[index]
            let client: HubClient
            do {
                client = try HubClient(url: link.url, certificatePEM: link.certificate,
                                       credential: BoxCredential(node: node, secret: link.credential), heardTime: heardTime)
            } catch {
                // One unreadable entry does not cut the box off from the others.
                logger.error("hub: an entry point in hub.json is unusable; using the others", metadata: ["hub": "\(link.url)", "error": "\(error)"])
                firstFailure = firstFailure ?? error
                continue
            }
            let distance = site.flatMap { s in link.location.flatMap(GeoPoint.init(text:)).map { s.kilometres(to: $0) } }
            hubs.append(Hub(client: client, link: link, kilometres: distance))
        }
        if hubs.isEmpty, let firstFailure { throw firstFailure }
        self.hubs = hubs
        self.clock = clock
        self.logger = logger
    }

    /// The hub to use for the next exchange, and its place in `hubs`.
    func current() -> (index: Int, hub: Hub) {
        let index = state.withLock { s -> Int in
            if s.current != 0, clock.nowMicroseconds() &- s.leftNearestAt >= Self.failbackMicroseconds {
                s.current = 0
                s.failedSinceSuccess = []
                logger.info("hub: trying the nearest hub again", metadata: ["hub": "\(hubs[0].label)"])
            }
            return s.current
        }
        return (index, hubs[index])
    }

    /// An exchange with hub `index` worked.
    func answered(_ index: Int) {
        state.withLock { s in if s.current == index { s.failedSinceSuccess = [] } }
    }

    /// Hub `index` did not answer (`error`): the next nearest is used. True when that one has not
    /// failed since the last answer (try it at once); false after a whole round (wait first).
    func didNotAnswer(_ index: Int, _ error: any Error) -> Bool {
        state.withLock { s -> Bool in
            s.failedSinceSuccess.insert(index)
            guard hubs.count > 1, s.current == index else { return s.failedSinceSuccess.count < hubs.count }
            s.current = (index + 1) % hubs.count
            if index == 0 { s.leftNearestAt = clock.nowMicroseconds() }
            logger.warning("hub: no answer; using the next nearest hub",
                           metadata: ["from": "\(hubs[index].label)", "to": "\(hubs[s.current].label)", "error": "\(error)"])
            return !s.failedSinceSuccess.contains(s.current)
        }
    }

    /// Whether `error` says the hub did not answer (rather than answering "no").
    static func isNoAnswer(_ error: any Error) -> Bool {
        guard let failure = error as? HubClient.Failure else { return false }
        switch failure {
        case .unreachable: return true
        case .refused(let status, _): return status >= 500
        case .badAnswer, .wrongHub, .tooLarge: return false
        }
    }

    func close() { for hub in hubs { hub.client.close() } }
}
