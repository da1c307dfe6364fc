import AuthLedger
import AuthLedgerCore
import Foundation
import Testing
@testable import AuthLedgerWitness

/// The witness's answers (C2SP tlog-witness, in the order it checks them) over a real
/// LMDB store in a temporary directory.
@Suite struct WitnessTests {
    static func make(_ log: TestLog) throws -> (Witness, String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("witness-\(UUID())").path
        let w = Witness(cosigner: try Cosigner(name: "w.example/1", seed: [UInt8](repeating: 3, count: 32)), logs: [try log.key],
                        store: try WitnessStore(path: dir), now: { 1_700_000_000 })
        return (w, dir)
    }

    @Test func answersEveryCodeInTheSpecOrder() async throws {
        var log = try TestLog()
        log.grow(to: 40)
        let (w, dir) = try Self.make(log)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Malformed (400), even for an unknown origin.
        #expect(await w.addCheckpoint(Array("old 0\n".utf8)).status == 400)
        // Unknown origin (404) before the signature.
        let stranger = try TestLog(origin: "stranger.example/log")
        #expect(await w.addCheckpoint(try stranger.request(old: 0, size: 0)).status == 404)
        // Signed by another key of the same origin (403), even with a bad old size.
        let impostor = try TestLog(seedByte: 9)
        #expect(await w.addCheckpoint(try impostor.request(old: 99, size: 0, proof: [])).status == 403)
        // Old size beyond the checkpoint's (400) before the held size (409).
        #expect(await w.addCheckpoint(try log.request(old: 11, size: 10, proof: [])).status == 400)
        // First contact at 10.
        let first = await w.addCheckpoint(try log.request(old: 0, size: 10))
        #expect(first.status == 200)
        let note = try SignedNote(parsing: Array((try log.checkpoint(10) + first.body).utf8))
        #expect(note.cosignatures(by: w.cosigner.verifierKey) == [1_700_000_000])
        // The wrong old size: 409 with the held size.
        let conflict = await w.addCheckpoint(try log.request(old: 0, size: 20))
        #expect(conflict == WitnessAnswer(status: 409, contentType: "text/x.tlog.size", body: "10\n"))
        // A proof for another tree (422), then a good one (200).
        var fork = log
        fork.leaves[3] = Array(repeating: 1, count: 32)
        #expect(await w.addCheckpoint(try log.request(old: 10, size: 20, proof: fork.proof(10, 20))).status == 422)
        #expect(await w.addCheckpoint(try log.request(old: 10, size: 20, proof: Array(log.proof(10, 20).dropLast()))).status == 422)
        #expect(await w.addCheckpoint(try log.request(old: 10, size: 20)).status == 200)
        // The held checkpoint again: 200; the held size with another root: 422.
        #expect(await w.addCheckpoint(try log.request(old: 20, size: 20)).status == 200)
        #expect(await w.addCheckpoint(try fork.request(old: 20, size: 20)).status == 422)
        // A forked tree of a bigger size, signed by the log: 422, and the witness still holds 20.
        #expect(await w.addCheckpoint(try fork.request(old: 20, size: 30)).status == 422)
        #expect(try w.store.held(log.signer.origin) == WitnessStore.Held(size: 20, root: log.root(20)))
        // A smaller tree is never cosigned.
        #expect(await w.addCheckpoint(try log.request(old: 20, size: 15, proof: [])).status == 400)
        #expect(await w.addCheckpoint(try log.request(old: 15, size: 15, proof: [])).status == 409)
    }

    @Test func proofWithOldZeroIs422AndExtensionLinesAreCosigned() async throws {
        var log = try TestLog()
        log.grow(to: 8)
        let (w, dir) = try Self.make(log)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(await w.addCheckpoint(try log.request(old: 0, size: 8, proof: [log.leaves[0]])).status == 422)
        let note = try log.checkpoint(8, extensions: ["rekor-ish extension"])
        let a = await w.addCheckpoint(try log.request(old: 0, size: 8, note: note))
        #expect(a.status == 200)
        let cosigned = try SignedNote(parsing: Array((note + a.body).utf8))
        #expect(cosigned.cosignatures(by: w.cosigner.verifierKey).count == 1)
    }

    @Test func aSizeZeroCheckpointWithAnotherRootThanTheEmptyTreesIs422() async throws {
        var log = try TestLog()
        log.grow(to: 4)
        let (w, dir) = try Self.make(log)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Given a size-0 checkpoint signed by the log whose root is not SHA-256("") (here the root of size 4)
        let impossible = try log.signer.signNote("\(log.signer.origin)\n0\n\(Data(log.root(4).bytes).base64EncodedString())\n")
        // When it is submitted with old 0: 422, and the witness holds nothing
        let a = await w.addCheckpoint(try log.request(old: 0, size: 0, note: impossible))
        #expect(a.status == 422, "\(a.body)")
        #expect(try w.store.held(log.signer.origin) == nil)
        // The empty tree's checkpoint is cosigned, and the impossible one is still 422 against it
        #expect(await w.addCheckpoint(try log.request(old: 0, size: 0)).status == 200)
        #expect(await w.addCheckpoint(try log.request(old: 0, size: 0, note: impossible)).status == 422)
        // The log goes on from there
        #expect(await w.addCheckpoint(try log.request(old: 0, size: 4)).status == 200)
    }

    @Test(arguments: [
        "", "old\n\n", "old 01\n\n", "old -1\n\n", "old 1 \n\n", "old 0\nAAAA\n\n", "old 0\n" + String(repeating: "\u{1}", count: 44) + "\n\n",
        "old 0\n\n\u{FF}", "old 99999999999999999999\n\n", "old 0\n\ntext\n\n— x AAAAAAA=\n",
    ])
    func garbageBodiesAre400(_ body: String) async throws {
        let (w, dir) = try Self.make(try TestLog())
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(await w.addCheckpoint(Array(body.utf8)).status == 400)
    }

    @Test func binaryTruncatedAndOverlongBodiesAre400() async throws {
        var log = try TestLog()
        log.grow(to: 100)
        let (w, dir) = try Self.make(log)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var g = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            #expect(await w.addCheckpoint((0..<Int.random(in: 0...300, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) }).status == 400)
        }
        let good = try log.request(old: 0, size: 100)
        for cut in stride(from: 0, to: good.count - 1, by: 7) {
            let a = await w.addCheckpoint(Array(good.prefix(cut)))
            #expect(a.status == 400, "cut at \(cut): \(a)")
        }
        let tooMany = try log.request(old: 0, size: 100, proof: Array(repeating: log.leaves[0], count: 64))
        #expect(await w.addCheckpoint(tooMany).status == 400)
        #expect(try w.store.held(log.signer.origin) == nil)
    }

    @Test func concurrentSubmissionsNeverRollBack() async throws {
        var log = try TestLog()
        log.grow(to: 64)
        let (w, dir) = try Self.make(log)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(await w.addCheckpoint(try log.request(old: 0, size: 1)).status == 200)
        // From 1 to every size at once: exactly one wins; the rest see 409 (or 200 for the same size).
        let requests = try (2...64).map { try log.request(old: 1, size: $0) }
        let answers = await withTaskGroup(of: WitnessAnswer.self) { g in
            for r in requests { g.addTask { await w.addCheckpoint(r) } }
            return await g.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.filter { $0.status == 200 }.count == 1)
        let held = try #require(try w.store.held(log.signer.origin))
        #expect(answers.filter { $0.status == 409 }.allSatisfy { $0.body == "\(held.size)\n" })
        #expect(held.root == log.root(Int(held.size)))
    }
}
