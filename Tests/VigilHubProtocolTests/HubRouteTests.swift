import Testing
import VigilHubProtocol

/// Where a box and its hubs are (`site.location`: "LATITUDE,LONGITUDE"), and which hub it tries first.
@Suite struct HubRouteTests {
    static func point(_ latitude: Double, _ longitude: Double) throws -> GeoPoint {
        try #require(GeoPoint(latitude: latitude, longitude: longitude))
    }

    @Test func aLocationReadsAsTwoNumbersInRange() throws {
        let berlin = try #require(GeoPoint(text: " 52.52 , 13.405 "))
        #expect(berlin.latitude == 52.52 && berlin.longitude == 13.405)
        #expect(berlin.text == "52.52,13.405")
        #expect(GeoPoint(text: berlin.text) == berlin)
        #expect(GeoPoint(text: "-90,-180") != nil && GeoPoint(text: "90,180") != nil, "the edges are places")
    }

    @Test func anythingElseIsNoLocation() {
        for text in ["", "52.52", "52.52,13.405,0", "91,0", "-90.5,0", "0,180.1", "nan,0", "0,nan", "inf,0", "north,east",
                     "52.52;13.405", "52,52 13,405"] {
            #expect(GeoPoint(text: text) == nil, "\(text)")
        }
        #expect(GeoPoint(latitude: .nan, longitude: 0) == nil && GeoPoint(latitude: 0, longitude: .infinity) == nil)
        #expect(BoxReport(location: "91,0", backlog: 0).coordinates == nil && BoxReport(backlog: 0).coordinates == nil)
        #expect(BoxReport(location: "52.52,13.405", backlog: 0).coordinates?.latitude == 52.52)
    }

    @Test func distancesAreGreatCircleKilometres() throws {
        let berlin = try Self.point(52.52, 13.405), paris = try Self.point(48.8566, 2.3522)
        #expect(abs(berlin.kilometres(to: paris) - 877.46) < 0.1)
        #expect(abs(paris.kilometres(to: berlin) - berlin.kilometres(to: paris)) < 1e-9)
        #expect(berlin.kilometres(to: berlin) == 0)
        let antipode = try Self.point(-52.52, 13.405 - 180)
        #expect(abs(berlin.kilometres(to: antipode) - 6_371.0088 * Double.pi) < 0.01, "no NaN at the far side")
    }

    @Test func theNearestHubComesFirstAndHubsWithoutALocationKeepTheirOrderLast() throws {
        let berlin = try Self.point(52.52, 13.405)
        let hubs: [GeoPoint?] = try [nil, Self.point(48.8566, 2.3522), Self.point(52.3906, 13.0645), nil, Self.point(48.1351, 11.5820)]
        #expect(HubRoute.order(hubs, from: berlin) == [2, 4, 1, 0, 3])   // Potsdam, Munich, Paris, then as joined
        #expect(HubRoute.order(hubs, from: nil) == [0, 1, 2, 3, 4], "no site: the order they were joined in")
        let twins: [GeoPoint?] = try [Self.point(48.8566, 2.3522), Self.point(48.8566, 2.3522)]
        #expect(HubRoute.order(twins, from: berlin) == [0, 1], "a tie keeps the joined order")
        #expect(HubRoute.order([], from: berlin) == [])
    }
}
