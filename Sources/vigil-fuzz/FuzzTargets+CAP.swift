import Foundation
import VigilCAP

extension FuzzTargets {
    /// The CAP corpus's test CA (scripts/cap-sign-corpus), which signed the signed seeds.
    static let capCorpus = "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/") + "/Tests/VigilCAPTests/Corpus"
    static let capTrusted: [String] = {
        (try? String(contentsOfFile: capCorpus + "/signed/ca.pem", encoding: .utf8)).map(CAPSignature.certificates) ?? []
    }()
    /// The one document the test CA's signer signed (every signed seed is it).
    static let capSigned: CAPAlert? = {
        (try? String(contentsOfFile: capCorpus + "/flood-warning.xml", encoding: .utf8)).flatMap { try? CAPReader.read(Array($0.utf8)) }
    }()

    /// CAP 1.2 public warnings (docs/warnings.md): libxml2 under the reader's bounds, then the
    /// strict decoder. What it reads keeps CAP's rules: times write back to the same instant,
    /// polygons are closed, the bounds hold.
    static func cap(_ bytes: [UInt8]) {
        // A feed's answer: a CAP document, or an Atom or RSS index of them.
        if case .index(let entries)? = try? CAPFeedReader.read(bytes) {
            check(entries.count <= CAPFeedReader.maximumEntries, "an index gives at most maximumEntries entries")
        }
        guard let alert = try? CAPReader.read(bytes) else { return }
        // What the box writes of what it read reads back the same (CAP out's writer).
        var unsigned = alert
        unsigned.hasSignature = false
        check((try? CAPReader.read(CAPWriter.write(alert))) == unsigned, "a document written again reads back the same (but its signature)")
        // A signature is verified (libxmlsec1) under the corpus's test CA: never fetched, never trusted unproven.
        if alert.hasSignature, case .verified = CAPSignature.verify(bytes, trusted: Self.capTrusted) {
            check(unsigned == Self.capSigned, "what verifies under the test CA reads as what it signed (the corpus's flood warning)")
        }
        check(CAPTime(alert.sent.description) == alert.sent, "a sent time writes back as the same instant")
        check(alert.infos.count <= CAPLimits.standard.maxInfos, "at most maxInfos infos")
        check(!alert.identifier.isEmpty && !alert.identifier.contains(" ") && !alert.identifier.contains(","),
              "an identifier has no spaces or commas")
        for info in alert.infos {
            check(!info.categories.isEmpty && !info.event.isEmpty, "an info has a category and an event")
            check(info.areas.count <= CAPLimits.standard.maxAreasPerInfo, "at most maxAreasPerInfo areas")
            for area in info.areas {
                for polygon in area.polygons {
                    check(polygon.points.count >= 4 && polygon.points.first == polygon.points.last, "a polygon is closed")
                    _ = polygon.contains(CAPPoint(latitude: -33.8688, longitude: 151.2093))
                }
                for circle in area.circles { check(circle.radiusKilometres >= 0, "a radius is not negative") }
            }
        }
    }
}
