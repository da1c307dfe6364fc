import Crypto
import Foundation
import Testing
@testable import AuthLedger
@testable import AuthLedgerCore
import AuthLedgerTestSupport

/// The leaf written straight from the stored bytes must be the leaf of the decoded event,
/// byte for byte, or replay would find every intact tree "different" and rewrite it — or,
/// worse, take a changed tree for intact. Where it cannot write an event it must say so
/// (nil), never guess.
@Suite struct StoredLeafTests {
    /// The stored bytes of `e` recorded at `seq`, `version`, as the log keeps them.
    static func stored(_ e: Event, seq: UInt64, version: UInt64) -> [UInt8] {
        let leaf = RecordedEvent.leaf(e, seq: seq, version: version)
        return EventCodec.encode(RecordedEvent(event: e, seq: seq, version: version, prev: .zero,
                                               hash: RecordedEvent.chain(prev: .zero, leaf: leaf)))
    }

    static func isASCII(_ e: Event) -> Bool {
        let texts = [e.user ?? ""] + (e.meta?.pairs.flatMap { [$0.key, $0.value] } ?? [])
            + e.data.entries.flatMap { entry -> [String] in
                switch entry.value {
                case let .string(s): [s]
                case let .map(m): m.pairs.flatMap { [$0.key, $0.value] }
                default: []
                }
            }
        return texts.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } }
    }

    /// `CanonicalEventTests`' events (every type, escapes, extreme times and numbers, non-ASCII
    /// text) and the same events with their text made ASCII.
    static func events() -> [(Event, UInt64, UInt64)] {
        func ascii(_ s: String) -> String { String(s.unicodeScalars.filter(\.isASCII).map(Character.init)) }
        func ascii(_ m: StringMap) -> StringMap { StringMap(m.pairs.map { (ascii($0.key), ascii($0.value)) }.filter { !$0.0.isEmpty }) }
        let all = CanonicalEventTests.events()
        return all + all.map { e, seq, version in
            var data = EventData()
            for (field, value) in e.data.entries {
                switch value {
                case let .string(s): data[field] = .string(ascii(s))
                case let .map(m): data[field] = .map(ascii(m))
                default: data[field] = value
                }
            }
            return (Event(id: e.id, type: e.type, user: e.user.map(ascii), at: e.at, data: data, meta: e.meta.map(ascii)), seq, version)
        }
    }

    @Test func theDirectLeafIsTheDecodedEventsLeafForEveryKindOfEvent() throws {
        var leaves = StoredLeaf()
        var direct = 0, decoded = 0
        for (e, seq, version) in Self.events() {
            var sealed = e
            try PersonalData.seal(&sealed, disclosures: nil)
            for form in [e, sealed] {
                let bytes = Self.stored(form, seq: seq, version: version)
                let expected = TreeFrontier.Node(RecordedEvent.leaf(form, seq: seq, version: version))
                let fast = bytes.withUnsafeBytes { leaves.leaf($0, seq: seq) }
                if let fast {
                    #expect(fast == expected, "\(form.type.name) seq \(seq)")
                    let input = bytes.withUnsafeBytes { leaves.leafInput($0, seq: seq) }!
                    #expect(Array(input.dropFirst()) == RecordedEvent.leafInput(form, seq: seq, version: version))
                    direct += 1
                } else {
                    decoded += 1
                }
                // An ASCII event is written directly, unless a context key needs escaping in its pointer.
                let escaped = form.personal?.entries.contains {
                    $0.pointer.hasPrefix(PersonalData.contextPrefix) && $0.pointer.dropFirst(PersonalData.contextPrefix.count).contains("~")
                } ?? false
                if Self.isASCII(form) && !escaped { #expect(fast != nil, "\(form.type.name) should not need the decoder") }
                #expect(try bytes.withUnsafeBytes { try leaves.leafOrDecode($0, seq: seq) } == expected)
            }
        }
        // Both paths ran: the events cover direct writing and the decoder's fallback.
        #expect(direct >= 10)
        #expect(decoded >= 5)
    }

    @Test func escapesAndMapOrderMatchTheCanonicalWriter() throws {
        let id = EventID("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0ff")!
        var d = EventData()
        d[.challengeId] = .string("c\"1\\x\t\u{1}\u{7f}")
        d[.context] = .map(StringMap([("z", "1"), ("A", "2"), ("a", "3"), ("_", "4"), ("ab", "5"), ("a~b", "6")]))
        d[.expiresAt] = .time(Timestamp(milliseconds: -1))
        d[.requestingDeviceId] = .string("d1")
        let e = Event(id: id, type: .challengeIssued, user: "u", at: .min, data: d,
                      meta: StringMap([("requestId", "r\n"), ("actor", "")]))
        var leaves = StoredLeaf()
        let bytes = Self.stored(e, seq: 12_345, version: 7)
        let input = bytes.withUnsafeBytes { leaves.leafInput($0, seq: 12_345) }
        #expect(input.map { Array($0.dropFirst()) } == RecordedEvent.leafInput(e, seq: 12_345, version: 7))
    }

    /// Personal values in `context` (every value of a challenge's context) and at `meta.ip`,
    /// sealed and as stored, partly erased: commitments sorted in among the stored members.
    @Test func commitmentsInContextAndMetaAreWrittenInKeyOrder() throws {
        var d = EventData()
        d[.challengeId] = .string("c1")
        d[.context] = .map(StringMap([("location", "Berlin, DE"), ("app", "bank"), ("ip", "198.51.100.7"), ("Zeta", "z")]))
        d[.expiresAt] = .time(Timestamp(milliseconds: 1_772_355_600_123))
        d[.requestingDeviceId] = .string("d1")
        var leaves = StoredLeaf()
        for (metaPairs, slashKey) in [([("ip", "192.0.2.10"), ("actor", "user"), ("zz", "1")], false), ([("ip", "192.0.2.10")], false), ([], true)] {
            var data = d
            if slashKey { data[.context] = .map(StringMap([("a/b", "x"), ("k", "v")])) }
            var e = Event(id: .random(), type: .challengeIssued, user: "u1", at: Timestamp(milliseconds: 5), data: data,
                          meta: metaPairs.isEmpty ? nil : StringMap(metaPairs))
            try PersonalData.seal(&e, disclosures: nil)
            let bytes = Self.stored(e, seq: 3, version: 2)
            let fast = bytes.withUnsafeBytes { leaves.leaf($0, seq: 3) }
            // A key with `/` is escaped in its pointer (`~1`): left to the decoder.
            #expect((fast == nil) == slashKey)
            #expect(try bytes.withUnsafeBytes { try leaves.leafOrDecode($0, seq: 3) } == TreeFrontier.Node(RecordedEvent.leaf(e, seq: 3, version: 2)))
            if let fast { #expect(fast == TreeFrontier.Node(RecordedEvent.leaf(e, seq: 3, version: 2))) }
        }
    }

    @Test func aCorruptRecordIsLeftToTheDecoder() throws {
        let (e, seq, version) = CanonicalEventTests.events().first { Self.isASCII($0.0) }!
        let bytes = Self.stored(e, seq: seq, version: version)
        var leaves = StoredLeaf()
        // Cut short, a trailing byte, an unknown type, an unknown format: nil, and the decoder names it.
        let corrupt: [[UInt8]] = [Array(bytes.dropLast()), bytes + [0], [bytes[0], 250] + bytes.dropFirst(2), [9] + bytes.dropFirst()]
        for b in corrupt {
            #expect(b.withUnsafeBytes { leaves.leaf($0, seq: seq) } == nil)
            #expect(throws: LedgerError.self) { try b.withUnsafeBytes { try leaves.leafOrDecode($0, seq: seq) } }
        }
    }

    /// Over a whole log of the scenarios: every stored event's direct leaf is the leaf the
    /// Merkle tree stored when it was appended.
    @Test func everyScenarioEventHashesToItsStoredTreeLeaf() async throws {
        let ledger = try await Support.freshLedger()
        for name in ScenarioFixtureTests.scenarios {
            _ = try await ledger.append(AppendRequest(try ScenarioFixtureTests.load(name).events))
        }
        var leaves = StoredLeaf()
        var direct = 0
        let head = try ledger.inPlace.read { try $0.head().seq }
        #expect(head > 20)
        try ledger.inPlace.read { r in
            try r.scan(from: 1) { seq, bytes in
                let stored = try r.withTreeHash(MerkleTree.storedHashIndex(level: 0, seq - 1)) { Array($0!) }
                if let fast = leaves.leaf(bytes, seq: seq) {
                    #expect(fast.hash.bytes == stored, "seq \(seq)")
                    direct += 1
                }
                #expect(try leaves.leafOrDecode(bytes, seq: seq).hash.bytes == stored, "seq \(seq)")
                return true
            }
        }
        #expect(direct * 2 > Int(head), "most events are written directly (\(direct) of \(head))")
    }
}
