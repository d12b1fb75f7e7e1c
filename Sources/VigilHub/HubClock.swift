import Foundation
import HTTPTypes
import Hummingbird
import VigilSystem

/// Whether the hub's own clock is synchronised, on every answer (`Vigil-Clock: synchronised`),
/// so that a box takes the hub's `Date` as a time it can vouch for only when the hub can
/// (docs/signed-frames.md "Time"). A hub on a machine without NTP says nothing: its boxes then
/// judge frames as they would without a hub, rather than sign their frames "vouched" at whatever
/// time the hub's machine keeps.
///
/// The hub reads what systemd-timesyncd keeps (`clock_synchronised_file` in hub.yaml), a stat
/// per answer: as cheap as the check is, it never says more than the file does.
struct HubClockMiddleware<Context: RequestContext>: RouterMiddleware {
    static var field: HTTPField.Name { HTTPField.Name("Vigil-Clock")! }
    let synchronisedFile: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        if FileSystem.exists(synchronisedFile) { response.headers[Self.field] = "synchronised" }
        return response
    }
}
