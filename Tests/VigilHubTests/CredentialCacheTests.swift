import Testing
import VigilHubProtocol
@testable import VigilHub

/// Long polls may be let in by a credential check of the last few seconds; nothing else is.
@Suite struct CredentialCacheTests {
    let box = BoxCredential(node: 0xB0C5_0000, secret: "the-box-secret")
    let start = ContinuousClock.now

    @Test func aCredentialTheDatabaseAcceptedIsAcceptedUntilItsLifetimeEnds() {
        let cache = CredentialCache()
        #expect(!cache.accepts(box, now: start), "nothing is accepted before the database said so")
        cache.remember(box, now: start)
        #expect(cache.accepts(box, now: start + .seconds(4)))
        #expect(!cache.accepts(box, now: start + CredentialCache.lifetime), "after its lifetime the database is asked again")
    }

    @Test func anotherSecretForTheSameBoxIsNotAccepted() {
        let cache = CredentialCache()
        cache.remember(box, now: start)
        #expect(!cache.accepts(BoxCredential(node: box.node, secret: "a-guess"), now: start))
        #expect(!cache.accepts(BoxCredential(node: 0xB0C6_0000, secret: box.secret), now: start), "nor the secret for another box")
    }

    @Test func aRefusalOfTheCredentialForgetsItButAJunkOneForTheSameBoxDoesNot() {
        let cache = CredentialCache()
        cache.remember(box, now: start)
        // Node ids are public: anyone can send a wrong secret for this box.
        cache.forget(BoxCredential(node: box.node, secret: "junk"))
        #expect(cache.accepts(box, now: start), "a junk credential does not evict the box")
        cache.forget(box)
        #expect(!cache.accepts(box, now: start), "its own credential refused (revoked): forgotten")
    }

    @Test func theCacheHoldsAtMostItsCapacityDroppingExpiredBoxesFirst() {
        let cache = CredentialCache()
        for node in 1...UInt64(CredentialCache.capacity) {
            cache.remember(BoxCredential(node: node, secret: "s"), now: start)
        }
        #expect(cache.count == CredentialCache.capacity)
        // Full of live entries: a new box empties it rather than growing it.
        cache.remember(box, now: start + .seconds(1))
        #expect(cache.count == 1 && cache.accepts(box, now: start + .seconds(1)))
        // Full of expired ones: they go, the live ones stay.
        for node in 1..<UInt64(CredentialCache.capacity) {
            cache.remember(BoxCredential(node: node, secret: "s"), now: start + .seconds(1))
        }
        let later = start + .seconds(1) + CredentialCache.lifetime
        cache.remember(box, now: later - .seconds(1))
        cache.remember(BoxCredential(node: 0xFFFF_FFFF, secret: "s"), now: later)
        #expect(cache.count == 2 && cache.accepts(box, now: later))
    }
}
