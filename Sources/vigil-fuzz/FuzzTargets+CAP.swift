import VigilCAP

extension FuzzTargets {
    /// CAP 1.2 public warnings (docs/warnings.md): libxml2 under the reader's bounds, then the
    /// strict decoder. What it reads keeps CAP's rules: times write back to the same instant,
    /// polygons are closed, the bounds hold.
    static func cap(_ bytes: [UInt8]) {
        // A feed's answer: a CAP document, or an Atom or RSS index of them.
        if case .index(let entries)? = try? CAPFeedReader.read(bytes) {
            check(entries.count <= CAPFeedReader.maximumEntries, "an index gives at most maximumEntries entries")
        }
        guard let alert = try? CAPReader.read(bytes) else { return }
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
