import AuthLedger
import Foundation
import AuthLedgerTestSupport
import Testing

@Suite(.timeLimit(.minutes(2))) struct SubscriptionRouteTests {
    @Test(arguments: StorageKind.all) func aDurableSubscriptionsCheckpointSurvivesARestart(_ storage: StorageKind) async throws {
        let place = TestStore(storage)
        defer { place.remove() }
        var alice: [UInt64] = []
        do {
            let s = try await TestServer.start(at: place)
            // Given alice's and bob's events, interleaved: alice at 1, 3, 5
            try await s.call(.POST, "/v1/events", body: Fixture.array([
                Fixture.registered("alice", "phone"), Fixture.registered("bob", "phone"),
                Fixture.accessed("alice", "phone", second: 10), Fixture.accessed("bob", "phone", second: 11),
                Fixture.accessed("alice", "phone", second: 12),
            ]))
            var r = try await s.call(.PUT, "/v1/subscriptions/mailer", token: "reader-token", body: #"{"user":"alice"}"#)
            #expect(r.status == 201)
            #expect(r.json == .object([("name", .string("mailer")), ("user", .string("alice")), ("checkpoint", .int(0))]))
            r = try await s.call(.PUT, "/v1/subscriptions/mailer", token: "reader-token", body: #"{"user":"alice"}"#)
            #expect(r.status == 200)

            let sub = try await s.subscribe("/v1/subscriptions/mailer/events")
            alice = try await sub.waitFor(count: 3).compactMap(\.id)
            #expect(alice == [1, 3, 5])
            sub.close()
            // The consumer processed the first two
            r = try await s.call(.POST, "/v1/subscriptions/mailer/ack", token: "reader-token", body: #"{"seq":3}"#)
            #expect(r.status == 200 && r["checkpoint"] == .int(3))
            r = try await s.call(.POST, "/v1/subscriptions/mailer/ack", token: "reader-token", body: #"{"seq":1}"#)
            #expect(r["checkpoint"] == .int(3))
            r = try await s.call(.POST, "/v1/subscriptions/mailer/ack", token: "reader-token", body: #"{"seq":99}"#)
            #expect(r.status == 400 && r["field"] == .string("seq"))
            r = try await s.call(.POST, "/v1/subscriptions/ghost/ack", token: "reader-token", body: #"{"seq":1}"#)
            #expect(r.status == 404)
            r = try await s.call(.PUT, "/v1/subscriptions/bad%20name", token: "reader-token", body: "{}")
            #expect(r.status == 400)
            try await s.stop()
        }
        // When the server restarts on the same store
        let s = try await TestServer.start(at: place)
        var r = try await s.call(.GET, "/v1/subscriptions/mailer", token: "reader-token")
        #expect(r["checkpoint"] == .int(3))
        // Then the subscription resumes after the checkpoint, then live
        let sub = try await s.subscribe("/v1/subscriptions/mailer/events")
        try await s.call(.POST, "/v1/events", body: Fixture.array([Fixture.accessed("bob", "phone", second: 20), Fixture.accessed("alice", "phone", second: 21)]))
        let events = try await sub.waitFor(count: 2)
        #expect(events.compactMap(\.id) == [5, 7])
        sub.close()
        // A type filter, and deletion
        r = try await s.call(.PUT, "/v1/subscriptions/registrations", token: "reader-token", body: #"{"types":["device.registered"],"from":2}"#)
        #expect(r["checkpoint"] == .int(1))
        let regs = try await s.subscribe("/v1/subscriptions/registrations/events")
        #expect(try await regs.waitFor(count: 1).first?.id == 2)
        regs.close()
        r = try await s.call(.DELETE, "/v1/subscriptions/mailer", token: "reader-token")
        #expect(r.status == 204)
        r = try await s.call(.GET, "/v1/subscriptions/mailer", token: "reader-token")
        #expect(r.status == 404)
        try await s.stop()
    }
}
