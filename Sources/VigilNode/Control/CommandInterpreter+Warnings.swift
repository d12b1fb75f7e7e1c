import Foundation
import VigilCAP
import VigilCore
import VigilEvents

/// Public warnings (docs/warnings.md).
extension CommandInterpreter {
    /// A CAP document staff hand the box: read as a feed's would be, and logged only when it
    /// changes the warnings (the reason otherwise: a copy, superseded, expired...).
    func warning(_ r: WarningImport) -> Outcome {
        guard let data = Data(base64Encoded: r.document), data.count <= WarningImport.maximumBytes, case let bytes = [UInt8](data) else {
            return .refused(.invalid, "a warning to import is a CAP 1.2 document of at most \(WarningImport.maximumBytes / 1024) KiB (larger ones come from a feed)")
        }
        let alert: CAPAlert
        do {
            alert = try CAPReader.read(bytes)
        } catch {
            return .refused(.invalid, "not a CAP 1.2 alert: " + CAPText.oneLine("\(error)", limit: 300))
        }
        var w = WarningReceived()
        w.feed = String(r.source.prefix(256))
        w.byStaff = true
        if let why = context.projections.warnings.whyNot(alert, atMicroseconds: context.nowMicroseconds, origin: WarningBook.origin(w)) {
            return .refused(.conflict, "nothing changes: \(why)")
        }
        w.document = Data(bytes)
        return .event(.warningReceived(w))
    }
}
