import AuthLedger
import AuthLedgerLMDB
@testable import AuthLedgerServer
import Crypto
import Foundation
import AuthLedgerTestSupport
import Testing

/// `Tests/Console/vectors.json`, which the console's JavaScript tests check too, agrees
/// with the ledger: its JCS cases with `JSON.canonical()`, its commitments with
/// `PersonalData.digest`, its events import into a fresh store with their recorded hashes
/// (the ledger recomputes every leaf and refuses a mismatch), and its proofs and signed
/// checkpoint are the ones that store gives, and so are its user proofs' values and index root.
@Suite struct ConsoleVectorsTests {
    static func vectors() throws -> JSON {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("Console/vectors.json"))
        return try JSON.parse(Array(data))
    }

    @Test func canonicalJSONAndCommitmentsAgree() throws {
        let v = try Self.vectors()
        let cases = try #require(v["jcs"]?.arrayValue)
        #expect(cases.count >= 5)
        for c in cases {
            let input = try #require(c["input"])
            #expect(input.canonical() == c["canonical"]?.stringValue, "\(input.serialized())")
        }
        let commitments = try #require(v["commitments"]?.arrayValue)
        #expect(commitments.count >= 2)
        for c in commitments {
            let (salt, value) = (try #require(c["salt"]?.stringValue), try #require(c["value"]?.stringValue))
            #expect(PersonalData.digest(salt: salt, value: value) == c["commitment"]?.stringValue)
        }
    }

    @Test func theEventsProofsAndCheckpointAreTheLedgers() async throws {
        let v = try Self.vectors()
        let events = try #require(v["events"]?.arrayValue)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("console-vectors-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ledger = try await Ledger(lmdb: dir)
        let text = events.map { $0.serialized() }.joined(separator: "\n")
        _ = try await ledger.append(try EventDecoder.decodeLines(Array(text.utf8)).map(\.input))
        #expect(try await ledger.head().seq == UInt64(events.count))
        #expect(try await ledger.head().hash.description == events.last?["hash"]?.stringValue)
        let b64 = { (h: Hash32) in Data(h.bytes).base64EncodedString() }
        for p in try #require(v["inclusion"]?.arrayValue) {
            let seq = UInt64(try #require(p["seq"]?.intValue)), size = UInt64(try #require(p["treeSize"]?.intValue))
            let mine = try await ledger.inclusionProof(seq: seq, size: size)
            #expect(mine.proof.map(b64) == p["proof"]?.arrayValue?.compactMap(\.stringValue), "seq \(seq)")
            #expect(Int64(mine.leafIndex) == p["leafIndex"]?.intValue)
        }
        let note = try #require(v["checkpoint"]?["note"]?.stringValue)
        let lines = note.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines[1] == "\(events.count)")
        #expect(b64(try await ledger.inclusionProof(seq: 1, size: UInt64(events.count)).root) == String(lines[2]))
        for c in try #require(v["consistency"]?.arrayValue) {
            let old = UInt64(try #require(c["oldSize"]?.intValue))
            let mine = try await ledger.consistencyProof(from: old, to: UInt64(events.count))
            #expect(mine.proof.map(b64) == c["proof"]?.arrayValue?.compactMap(\.stringValue), "from \(old)")
            let oldNote = try #require(c["oldCheckpoint"]?.stringValue).split(separator: "\n")
            #expect(String(oldNote[2]) == b64(mine.oldRoot))
        }
        // The user proofs: the same index root, and each user's count, stream hash and last seq
        _ = try await ledger.updateUserIndex()
        let proofs = try #require(v["userProofs"]?.arrayValue)
        #expect(proofs.count >= 3)
        for p in proofs {
            let user = try #require(p["user"]?.stringValue)
            let mine = try await ledger.userIndexAnswer(user)
            #expect(Int64(mine.size) == p["size"]?.intValue, "\(user)")
            #expect(b64(mine.root) == p["indexRoot"]?.stringValue, "\(user)")
            #expect(Int64(mine.count) == p["count"]?.intValue, "\(user)")
            #expect(b64(mine.streamHash) == p["streamHash"]?.stringValue, "\(user)")
            #expect(Int64(mine.last) == p["last"]?.intValue, "\(user)")
        }
        // The note's signature checks under the vectors' verifier key (and not under the other one)
        let vkey = try #require(v["checkpoint"]?["vkey"]?.stringValue)
        let (name, key) = try ConsoleRouteTests.publicKey(vkey)
        #expect(try ConsoleRouteTests.signed(note, by: name, key))
        let (_, other) = try ConsoleRouteTests.publicKey(try #require(v["checkpoint"]?["otherVkey"]?.stringValue))
        #expect(try !ConsoleRouteTests.signed(note, by: name, other))
    }
}
