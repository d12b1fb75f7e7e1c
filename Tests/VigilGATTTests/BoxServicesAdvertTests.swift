import Testing
import VigilGATT

@Suite("The box's connectable advert")
struct BoxServicesAdvertTests {
    /// AD structures as (type, data); nil if a length runs past the end.
    func structures(_ bytes: [UInt8]) -> [(type: UInt8, data: [UInt8])]? {
        var out: [(UInt8, [UInt8])] = []
        var i = 0
        while i < bytes.count {
            let length = Int(bytes[i])
            guard length > 0, i + 1 + length <= bytes.count else { return nil }
            out.append((bytes[i + 1], Array(bytes[(i + 2)..<(i + 1 + length)])))
            i += 1 + length
        }
        return out
    }

    @Test func itCarriesFlagsTheChatServiceUUIDAndAShortNameWhileTheScanResponseHasItWhole() throws {
        let advert = BoxServices.connectableAdvertisement(name: "Vigil 1A2B")
        #expect(advert.count == 31)
        let ad = try #require(structures(advert))
        #expect(ad.map(\.type) == [0x01, 0x07, 0x08])
        #expect(ad[0].data == [0x06], "LE General Discoverable, no BR/EDR")
        #expect(ad[1].data == Array(BoxServices.chat.bytes128.reversed()), "128-bit UUIDs go little-endian")
        #expect(String(decoding: ad[2].data, as: UTF8.self) == "Vigil 1A")
        let response = try #require(structures(BoxServices.scanResponse(name: "Vigil 1A2B")))
        #expect(response.count == 1 && response[0].type == 0x09 && String(decoding: response[0].data, as: UTF8.self) == "Vigil 1A2B")
        // A short name fits whole in the advert itself.
        #expect(structures(BoxServices.connectableAdvertisement(name: "Box 7"))?.last?.type == 0x09)
    }

    @Test func aLongNameIsShortenedOnACharacterBoundaryWithinThirtyOneBytes() throws {
        for name in ["Notunterkunft Turnhalle Süd, Eingang B", "避難所の箱、体育館の入口です", String(repeating: "ü", count: 40)] {
            for bytes in [BoxServices.connectableAdvertisement(name: name), BoxServices.scanResponse(name: name)] {
                #expect(bytes.count <= 31, "\(name)")
                let ad = try #require(structures(bytes))
                let shortened = try #require(ad.last)
                #expect(shortened.type == 0x08, "a cut name is marked shortened")
                let text = try #require(String(validating: shortened.data, as: UTF8.self), "still valid UTF-8: \(shortened.data)")
                #expect(name.hasPrefix(text) && !text.isEmpty)
            }
        }
        #expect(structures(BoxServices.connectableAdvertisement(name: ""))?.count == 2, "no name, no name structure")
        #expect(BoxServices.scanResponse(name: "").isEmpty)
    }
}
