@testable import AuthLedger
import AuthLedgerTestSupport
import Foundation
import Testing

/// The typed payloads (`EventPayload`) against the recorded form: a payload's `data` is the
/// event's `data`, field for field and byte for byte, for every event the fixtures, the
/// command side and erasure produce; text reaches the typed values through one check each.
@Suite struct EventPayloadTests {
    static let scenarios = ["01-first-device-email-link", "02-trusted-device-approval", "03-device-management-cooling",
                            "04-push-enrollment", "05-otp-reregistration"]

    /// Every event of every scenario, and of a store after erasure: payload ⇄ data is lossless.
    @Test func everyRecordedEventRoundTripsThroughItsPayload() async throws {
        let ledger = try await Support.freshLedger()
        for s in Self.scenarios {
            try await ledger.importText(String(contentsOf: Support.fixture("scenarios/\(s).jsonl"), encoding: .utf8))
        }
        let users = Set(try await ledger.events().compactMap(\.event.user))
        for u in users.sorted() { _ = try await ledger.erase(u, now: t("2030-01-01T00:00:00Z")) }
        var types = Set<EventType>()
        var erasedNames = 0
        for r in try await ledger.events() {
            let payload = try r.event.payload
            #expect(payload.type == r.event.type)
            #expect(payload.data == r.event.data, "seq \(r.seq) \(r.event.type.name)")
            #expect(payload.data.json.canonicalBytes() == r.event.data.json.canonicalBytes())
            // Rebuilt from its payload, the event hashes to what the log recorded.
            let rebuilt = Event(id: r.event.id, user: r.event.user, at: r.event.at, payload: payload, meta: r.event.meta,
                                personal: r.event.personal)
            #expect(RecordedEvent.computeHash(rebuilt, seq: r.seq, version: r.version, prev: r.prev) == r.hash)
            if case let .registered(p) = payload, p.name == nil { erasedNames += 1 }
            types.insert(r.event.type)
        }
        // The fixtures cover every type but policy.set; erasure added user.erased and erased names.
        #expect(types.count >= 15, "types seen: \(types.map(\.name).sorted())")
        #expect(types.contains(.userErased))
        #expect(erasedNames > 0)
    }

    /// `via` carries its proof: what the decoder refuses as a pairing cannot be built, and text
    /// that names a proof without its via, or both proofs, is refused once, where it is parsed.
    @Test func viaCarriesExactlyTheProofItNeeds() throws {
        #expect(try Via(name: "otp", grantId: "g1", challengeId: nil, prefix: "data.") == .otp(grantId: "g1"))
        #expect(try Via.given(name: nil, grantId: nil, challengeId: "c1") == .trustedDevice(challengeId: "c1"))
        #expect(try Via.given(name: nil, grantId: nil, challengeId: nil) == nil)
        for (name, grant, challenge, field) in [("otp", nil, nil, "data.grantId"), ("initial", "g1", nil, "data.grantId"),
                                                ("trusted_device", nil, nil, "data.challengeId"), ("bogus", nil, nil, "data.via")] as [(String, String?, String?, String)] {
            let e = refusal { _ = try Via(name: name, grantId: grant, challengeId: challenge, prefix: "data.") }
            #expect(e?.code == .invalidEvent && e?.field == field, "\(name) \(grant ?? "-") \(challenge ?? "-")")
        }
        #expect(refusal { _ = try Via.given(name: nil, grantId: "g", challengeId: "c") }?.field == "via")
        let data = EventPayload.registered(DeviceRegistered(deviceId: "d", name: "Phone", kind: .mobile, binding: .permanent, via: .otp(grantId: "g9"))).data
        #expect(data.string(.via) == "otp" && data.string(.grantId) == "g9" && data[.challengeId] == nil)
    }

    /// A command from text gets `kind`, `binding`, `via` and `channel` checked as it is built,
    /// with the decoder's wording; nothing reaches the ledger.
    @Test func commandsFromTextCheckTheirNamedValues() throws {
        let cases: [(() throws -> Command, String)] = [
            ({ try .register(user: "u", deviceId: "d", name: "Phone", kind: "toaster") }, "kind"),
            ({ try .register(user: "u", deviceId: "d", name: "Phone", binding: "forever") }, "binding"),
            ({ try .register(user: "u", deviceId: "d", name: "Phone", via: "magic") }, "via"),
            ({ try .register(user: "u", deviceId: "d", name: "Phone", via: "otp") }, "grantId"),
            ({ try .requestVerification(user: "u", deviceId: "d", name: nil, kind: "toaster", platform: nil) }, "kind"),
            ({ try .sendOTP(user: "u", channel: "fax", target: "x@example.com") }, "channel"),
        ]
        for (build, field) in cases {
            let e = refusal { _ = try build() }
            #expect(e?.code == .invalidEvent && e?.field == field, "\(field): \(String(describing: e))")
        }
        // Defaults come from one place.
        guard case let .register(r) = try Command.register(user: "u", deviceId: "d", name: "Phone") else { Issue.record("not a registration"); return }
        #expect(r.kind == Command.Default.kind && r.binding == Command.Default.binding && r.via == nil)
    }

    /// The command side appends exactly the payload it decided: typed in, typed out.
    @Test(arguments: StorageKind.all) func decidedEventsReadBackAsTheirPayloads(_ storage: StorageKind) async throws {
        let (ledger, dir) = try await FeedFixture.temporaryLedger(storage)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let at = t("2026-03-01T09:00:00Z")
        _ = try await ledger.perform(.register(Registration(user: "u", deviceId: "d1", name: "  Work laptop ", kind: .desktop,
                                                      platform: "linux", binding: .temporary)), clock: { at })
        _ = try await ledger.perform(.setPolicy(PolicySet(coolingSeconds: 0, maxDevices: 3)), clock: { at })
        let r = try await ledger.perform(.issueChallenge(ChallengeRequest(user: "u", requestingDeviceId: "d1", action: "transaction",
                                                                    context: StringMap([("ip", "203.0.113.9")]))), clock: { at })
        let events = try await ledger.events()
        let nonce = try #require(r.nonce)
        #expect(try events.map { try $0.event.payload } == [
            .registered(DeviceRegistered(deviceId: "d1", name: "Work laptop", kind: .desktop, platform: "linux", binding: .temporary, via: .initial)),
            .policySet(PolicySet(coolingSeconds: 0, maxDevices: 3)),
            .challengeIssued(ChallengeIssued(challengeId: r.challengeId!, action: "transaction", requestingDeviceId: "d1",
                                             expiresAt: at.adding(seconds: 60), context: StringMap([("ip", "203.0.113.9")]),
                                             nonce: nonce)),
            .challengeApproved(ChallengeApproved(challengeId: r.challengeId!, approverDeviceId: "d1")),
        ])
        #expect(try await ledger.devices(of: "u", QueryOptions(asOf: at)).devices.first?.kind == "desktop")
    }

    /// A hand-built event whose `data` does not fit its type is refused by the rules, not a crash.
    @Test func dataThatDoesNotFitItsTypeIsInvalidNotACrash() throws {
        var data = EventData()
        data[.name] = .string("Phone")
        let e = refusal { _ = try Event(type: .renamed, user: "u", at: t("2026-03-01T09:00:00Z"), data: data).payload }
        #expect(e?.code == .invalidEvent && e?.field == "data.deviceId")
        var state = UserState(user: "u")
        #expect(refusal { try state.evolve(Event(type: .accessed, user: "u", at: t("2026-03-01T09:00:00Z"), data: data), policy: Policy()) }?.code == .invalidEvent)
    }
}
