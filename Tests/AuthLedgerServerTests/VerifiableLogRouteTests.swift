import AsyncHTTPClient
import AuthLedger
@testable import AuthLedgerServer
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import AuthLedgerTestSupport
import Testing

/// SPEC 6 over HTTP: `/checkpoint`, C2SP tlog-tiles hash tiles and entry bundles, and
/// the JSON proofs, audit scope, bad input answered 400/404.
@Suite(.timeLimit(.minutes(2))) struct VerifiableLogRouteTests {
    static func raw(_ s: TestServer, _ path: String, token: String = "auditor-token") async throws -> (status: Int, headers: HTTPHeaders, body: [UInt8]) {
        let resp = try await s.client.execute(s.request(.GET, path, token: token), timeout: .seconds(30))
        let buffer = try await resp.body.collect(upTo: 1 << 20)
        return (Int(resp.status.code), resp.headers, Array(buffer.readableBytesView))
    }

    /// 300 events: one full level-0 tile and a partial one of 44.
    static func populate(_ s: TestServer) async throws {
        var items = [Fixture.registered("alice", "phone")]
        for k in 1..<300 { items.append(Fixture.accessed("alice", "phone", second: k)) }
        let r = try await s.call(.POST, "/v1/events", token: "importer-token", body: Fixture.array(items))
        try #require(r.status == 200 || r.status == 201, "\(r.body)")
    }

    static func hashes(_ bytes: [UInt8]) -> [Hash32] {
        stride(from: 0, to: bytes.count, by: 32).map { Hash32(bytes: Array(bytes[$0..<($0 + 32)])) }
    }

    static func entries(_ bytes: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var k = 0
        while k + 2 <= bytes.count {
            let n = Int(bytes[k]) << 8 | Int(bytes[k + 1])
            out.append(Array(bytes[(k + 2)..<min(bytes.count, k + 2 + n)]))
            k += 2 + n
        }
        return out
    }

    @Test(arguments: StorageKind.all) func tilesCheckpointAndProofs(_ storage: StorageKind) async throws {
        try await withServer(storage, configure: { $0.checkpointOrigin = "test.example/log" }) { s in
            try await Self.populate(s)
            // The checkpoint: text, origin, size, root, one signature line
            let cp = try await Self.raw(s, "/checkpoint")
            let note = String(decoding: cp.body, as: UTF8.self)
            #expect(cp.status == 200 && cp.headers["Content-Type"].first?.hasPrefix("text/plain") == true)
            #expect(note.hasPrefix("test.example/log\n300\n") && note.contains("\n\n\u{2014} test.example/log "))
            let root = Hash32(bytes: Array(try #require(Data(base64Encoded: String(note.split(separator: "\n")[2])))))
            // Hash tiles: the full one is immutable, the partial one is not
            let full = try await Self.raw(s, "/tile/0/000")
            #expect(full.status == 200 && full.body.count == 256 * 32)
            #expect(full.headers["Cache-Control"].first?.contains("immutable") == true)
            // …served again from memory: the same bytes; only full hash tiles are kept
            #expect(s.server.fullTiles.count == 1)
            #expect(try await Self.raw(s, "/tile/0/000").body == full.body)
            let partial = try await Self.raw(s, "/tile/0/001.p/44")
            #expect(partial.status == 200 && partial.body.count == 44 * 32)
            #expect(s.server.fullTiles.count == 1)
            #expect(partial.headers["Cache-Control"].first?.contains("immutable") == false)
            let leaves = Self.hashes(full.body) + Self.hashes(partial.body)
            // Entry bundles: each entry's leaf hash is the tile's leaf, and it is the event's JSON
            let bundle0 = Self.entries(try await Self.raw(s, "/tile/entries/000").body)
            let bundle1 = Self.entries(try await Self.raw(s, "/tile/entries/001.p/44").body)
            #expect(bundle0.count == 256 && bundle1.count == 44)
            for (k, e) in (bundle0 + bundle1).enumerated() {
                #expect(MerkleTree.leafHash(e) == leaves[k], "entry \(k)")
            }
            #expect(try JSON.parse(String(decoding: bundle1[0], as: UTF8.self))["seq"]?.intValue == 257)
            // The level-1 tile holds the root of the first 256 leaves, and the root is the one signed
            let level1 = try await Self.raw(s, "/tile/1/000.p/1")
            #expect(level1.status == 200 && level1.body.count == 32)
            var first256 = leaves[0..<256].map { $0 }
            while first256.count > 1 { first256 = stride(from: 0, to: first256.count, by: 2).map { MerkleTree.nodeHash(first256[$0], first256[$0 + 1]) } }
            #expect(Self.hashes(level1.body) == first256)
            // Inclusion proofs as JSON verify against the signed root
            for seq in [1, 5, 256, 257, 300] {
                let p = try await s.call(.GET, "/v1/proofs/inclusion?seq=\(seq)&size=300", token: "auditor-token")
                #expect(p.status == 200 && p["treeSize"]?.intValue == 300 && p["leafIndex"]?.intValue == Int64(seq - 1))
                let proof = try #require(p["proof"]?.arrayValue).map { Hash32(bytes: Array(Data(base64Encoded: $0.stringValue!)!)) }
                #expect(p["root"]?.stringValue == Data(root.bytes).base64EncodedString())
                #expect(p["checkpoint"]?.stringValue?.hasPrefix("test.example/log\n300\n") == true)
                #expect(MerkleTree.verifyInclusion(leafHash: leaves[seq - 1], index: UInt64(seq - 1), size: 300, proof: proof, root: root))
            }
            let c = try await s.call(.GET, "/v1/proofs/consistency?from=10&to=300", token: "auditor-token")
            #expect(c.status == 200 && c["oldSize"]?.intValue == 10 && c["treeSize"]?.intValue == 300)
            let cproof = try #require(c["proof"]?.arrayValue).map { Hash32(bytes: Array(Data(base64Encoded: $0.stringValue!)!)) }
            let oldRoot = Hash32(bytes: Array(Data(base64Encoded: c["oldRoot"]!.stringValue!)!))
            #expect(MerkleTree.verifyConsistency(oldSize: 10, oldRoot: oldRoot, newSize: 300, newRoot: root, proof: cproof))
        }
    }

    @Test(arguments: StorageKind.all) func badInputIs400AndMissingTilesAre404(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            try await Self.populate(s)
            for q in ["seq=0", "seq=301", "seq=abc", "seq=-1", "", "seq=1&size=301", "seq=5&size=4", "seq=99999999999999999999999",
                      "seq=1&size=1e3"] {
                let r = try await s.call(.GET, "/v1/proofs/inclusion?\(q)", token: "auditor-token")
                #expect(r.status == 400 && r.error == "invalid_event", "\(q): \(r.status) \(r.body)")
            }
            for q in ["from=0&to=5", "from=6&to=5", "from=1&to=301", "from=1", "to=5", "from=x&to=5"] {
                let r = try await s.call(.GET, "/v1/proofs/consistency?\(q)", token: "auditor-token")
                #expect(r.status == 400 && r.error == "invalid_event", "\(q): \(r.status) \(r.body)")
            }
            for path in ["/tile/0/001", "/tile/0/001.p/45", "/tile/0/1", "/tile/0/x000/000", "/tile/0/000.p/256", "/tile/0/000.p/0",
                         "/tile/0/000.p/007", "/tile/1/000", "/tile/8/000", "/tile/00/000", "/tile/entries/001", "/tile/x/000",
                         "/tile/0", "/tile/0/x001", "/tile/0/x999/x999/x999/x999/x999/x999/999"] {
                let r = try await Self.raw(s, path)
                #expect(r.status == 404, "\(path): \(r.status)")
            }
            // Audit scope
            #expect(try await Self.raw(s, "/checkpoint", token: "reader-token").status == 403)
            #expect(try await Self.raw(s, "/tile/0/000", token: "writer-token").status == 403)
            #expect(try await s.call(.GET, "/v1/proofs/inclusion?seq=1", token: nil).status == 401)
        }
    }

    @Test func theFullTileCacheIsBoundedAndReadsOnlyOnAMiss() async throws {
        let cache = FullTileCache(capacity: 3)
        var reads = 0
        for round in 0..<2 {
            for i in 0..<UInt64(3) {
                let b = await cache.tile(level: 0, index: i) { reads += 1; return [UInt8(i)] }
                #expect(Array(b.readableBytesView) == [UInt8(i)], "round \(round)")
            }
        }
        #expect(reads == 3 && cache.count == 3)
        for i in 3..<UInt64(10) { _ = await cache.tile(level: 1, index: i) { [0] } }
        #expect(cache.count == 3)
        #expect(await FullTileCache(capacity: 0).tile(level: 0, index: 0) { [7] }.readableBytes == 1)
    }

    @Test func tilePathsParseOnlyTheirCanonicalSpelling() throws {
        func parts(_ t: TilePath) -> [UInt64?] { [t.level.map { UInt64($0) }, t.index, UInt64(t.width)] }
        #expect(parts(try TilePath(["0", "x001", "x234", "067"])) == [0, 1_234_067, 256])
        #expect(parts(try TilePath(["entries", "x001", "002.p", "17"])) == [nil, 1002, 17])
        #expect(parts(try TilePath(["2", "000"])) == [2, 0, 256])
        for bad in [["0", "01"], ["0", "x01", "000"], ["0", "001", "002"], ["0", "000.p", "256"], ["0", "000.p"], ["-1", "000"], ["0", "x000", "001"]] {
            #expect(throws: LedgerError.self) { try TilePath(bad.map { Substring($0) }) }
        }
    }
}
