import Foundation
@testable import AuthLedger
import AuthLedgerCore
import Testing

/// A large request's events are hashed on the writer's second thread (`HashPipeline`): what
/// is stored must be exactly what hashing inline stores, refusals must leave nothing behind,
/// and duplicates inside the request must still be seen.
@Suite struct HashPipelineTests {
    /// `users` users with `each` events apiece, interleaved in time: a registration, then
    /// accesses, some with the caller's address (names and addresses are personal values). Explicit ids: two stores fed these
    /// get the same events.
    static func events(users: Int = 10, each: Int = 20) -> [String] {
        var lines: [String] = []
        for k in 0..<each {
            for u in 0..<users {
                let at = Timestamp(milliseconds: 1_772_355_600_000 + Int64(k * users + u) * 1000).description
                let id = String(format: "%08x-0000-4000-8000-%012x", u + 1, k + 1)
                let user = "user-\(u)"
                switch k {
                case 0:
                    lines.append(line("device.registered", user: user, at: at, data: #"{"deviceId":"d1","name":"Phone \#(u)","kind":"mobile","platform":"ios","binding":"permanent","via":"initial"}"#, id: id))
                case _ where k % 3 == 1:
                    lines.append(line("device.accessed", user: user, at: at, data: #"{"deviceId":"d1"}"#,
                                      meta: #"{"actor":"device:d1","ip":"192.0.2.\#(k)"}"#, id: id))
                default:
                    lines.append(line("device.accessed", user: user, at: at, data: #"{"deviceId":"d1"}"#, id: id))
                }
            }
        }
        return lines
    }

    /// A ledger whose personal values are hashed in clear (no random salts), so that two
    /// stores given the same events store the same bytes and hashes.
    static func unsalted() async throws -> Ledger {
        let ledger = try await Support.freshLedger()
        ledger.appendSwitches.sealPersonalData.store(false, ordering: .relaxed)
        return ledger
    }

    static func hashedByPipeline(_ ledger: Ledger) -> Int { ledger.writer.hashing.hashedEvents }

    @Test func aLargeRequestStoresWhatSmallRequestsStore() async throws {
        let lines = Self.events()
        let large = try await Self.unsalted(), small = try await Self.unsalted()
        let outcome = try await large.importText(lines.joined(separator: "\n"))
        for l in lines { try await small.importText(l) }
        // The large request went through the second thread; the small ones did not.
        #expect(Self.hashedByPipeline(large) == lines.count)
        #expect(Self.hashedByPipeline(small) == 0)
        // The same bytes, chain and tree
        await #expect(try large.exportText() == (try small.exportText()))
        #expect(try await large.treeHead() == (try await small.treeHead()))
        #expect(try await large.verify() == (try await small.verify()))
        // And the outcome tells what was stored, in order
        let stored = try await large.events()
        #expect(outcome.appended.map(\.hash) == stored.map(\.hash))
        #expect(outcome.appended.map(\.seq) == Array(1...UInt64(lines.count)))
    }

    @Test func aLargeRequestWithCommitmentsVerifiesAndHoldsTheSameContent() async throws {
        let lines = Self.events(users: 7, each: 15)
        let large = try await Support.freshLedger(), small = try await Support.freshLedger()
        try await large.importText(lines.joined(separator: "\n"))
        for l in lines { try await small.importText(l) }
        #expect(Self.hashedByPipeline(large) == lines.count)
        _ = try await large.verify()
        await #expect(try large.contentText() == (try small.contentText()))
        // The second thread sealed them (fresh salts): every personal value has its
        // commitment and its own salt, read back from the values store, as inline sealing gives
        let a = try await large.events(), b = try await small.events()
        #expect(a.map { $0.event.personal?.entries.map(\.pointer) } == b.map { $0.event.personal?.entries.map(\.pointer) })
        let salts = a.flatMap { $0.event.personal?.entries.map(\.salt) ?? [] }
        #expect(salts.count == 7 + 7 * 5, "each user's device name, and the address of 5 of its 14 accesses")
        #expect(!salts.contains(nil) && Set(salts).count == salts.count)
        #expect(a.map(\.event.personal) == (try await large.events()).map(\.event.personal))
        #expect(try await large.devices(of: "user-3", QueryOptions(asOf: .max)).json == (try await small.devices(of: "user-3", QueryOptions(asOf: .max)).json))
    }

    @Test func aDuplicateInsideALargeRequestIsSeen() async throws {
        var lines = Self.events(users: 5, each: 20)
        // An identical copy of an earlier event of the same request: a duplicate, not a second event
        lines.append(lines[70])
        let ledger = try await Self.unsalted()
        let outcome = try await ledger.importText(lines.joined(separator: "\n"))
        #expect(outcome.appended.count == lines.count - 1 && outcome.duplicates == 1)
        // The same id with other content is refused, and nothing of the request is appended
        var conflicting = Self.events(users: 5, each: 20).map { $0.replacingOccurrences(of: "00000000", with: "00000001") }
        conflicting.append(conflicting[10].replacingOccurrences(of: "\"d1\"}", with: "\"d2\"}"))
        let fresh = try await Self.unsalted()
        let e = await refusal { try await fresh.importText(conflicting.joined(separator: "\n")) }
        #expect(e?.code == .duplicateEventId && e?.index == conflicting.count - 1)
        #expect(try await fresh.head() == .empty)
    }

    @Test func aRefusedLargeRequestLeavesNothingAndTheNextOneIsRight() async throws {
        let lines = Self.events()
        var bad = lines
        // A rename of a device the user does not have, late in the request
        bad.insert(line("device.renamed", user: "user-2", at: "2026-03-01T09:00:00Z", data: #"{"deviceId":"nope","name":"x"}"#), at: 150)
        let ledger = try await Self.unsalted(), reference = try await Self.unsalted()
        let e = await refusal { try await ledger.importText(bad.joined(separator: "\n")) }
        #expect(e != nil && e?.index == 150)
        #expect(try await ledger.head() == .empty)
        // Then the request without it appends from the same head as a store that never saw the refusal
        try await ledger.importText(lines.joined(separator: "\n"))
        try await reference.importText(lines.joined(separator: "\n"))
        await #expect(try ledger.exportText() == (try reference.exportText()))
        #expect(try await ledger.verify() == (try await reference.verify()))
    }

    @Test func largeRequestsBetweenSmallOnesGrowTheTreeFromWhereItStands() async throws {
        // Given the same events appended one by one, and as small and large requests in turn
        // (the second thread hashes the tree's nodes from the edge the earlier requests left)
        let lines = Self.events(users: 10, each: 30)
        let mixed = try await Self.unsalted(), single = try await Self.unsalted()
        for l in lines { try await single.importText(l) }
        var k = 0
        for (n, large) in [(5, false), (100, true), (3, false), (92, true), (1, false), (64, true)] {
            let part = lines[k..<(k + n)]
            if large { try await mixed.importText(part.joined(separator: "\n")) } else { for l in part { try await mixed.importText(l) } }
            k += n
            // A large request refused at its end leaves the edge where it was
            if large && k + 70 <= lines.count {
                var bad = Array(lines[k..<(k + 70)])
                bad.append(line("device.renamed", user: "user-1", at: "2026-03-01T09:00:00Z", data: #"{"deviceId":"nope","name":"x"}"#))
                #expect(await refusal { try await mixed.importText(bad.joined(separator: "\n")) }?.index == 70)
            }
        }
        for l in lines[k...] { try await mixed.importText(l) }
        #expect(Self.hashedByPipeline(mixed) >= 256)
        // Then the stored tree, its proofs and the chain are the ones single appends give
        #expect(try await mixed.treeHead() == (try await single.treeHead()))
        #expect(try await mixed.verify() == (try await single.verify()))
        #expect(try await mixed.consistencyProof(from: 105, to: 300) == (try await single.consistencyProof(from: 105, to: 300)))
    }
}
