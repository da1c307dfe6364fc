import AuthLedgerTestSupport
import Foundation
import LMDB
import Testing

@Suite struct EnvironmentTests {
    func tempDir() throws -> String {
        TemporaryDirectory.make("lmdb-test")
    }

    @Test func writtenValuesAreReadBackAfterCommit() throws {
        let env = try Environment(path: try tempDir())
        let db = try env.database("t")
        try env.write { txn in try txn.put(db, Array("k".utf8), Array("v".utf8)) }
        let v = try env.read { txn in try txn.get(db, Array("k".utf8)) }
        #expect(v == Array("v".utf8))
    }

    @Test func aThrowingWriteLeavesNothingBehind() throws {
        let env = try Environment(path: try tempDir())
        let db = try env.database("t")
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try env.write { txn in
                try txn.put(db, Array("k".utf8), Array("v".utf8))
                throw Boom()
            }
        }
        #expect(try env.read { try $0.get(db, Array("k".utf8)) } == nil)
    }

    @Test func theMapGrowsInsteadOfFailingWhenFull() throws {
        let env = try Environment(path: try tempDir(), initialMapSize: 1 << 20)
        let db = try env.database("t")
        let value = [UInt8](repeating: 7, count: 4000)
        for batch in 0..<8 {
            try env.write { txn in
                for i in 0..<200 { try txn.put(db, UInt64(batch * 200 + i).bigEndianBytes, value) }
            }
        }
        #expect(env.mapSize > 1 << 20)
        #expect(try env.read { try $0.count(db) } == 1600)
    }

    @Test func anAbortedChildTransactionLeavesTheParentAsItWas() throws {
        let env = try Environment(path: try tempDir())
        let db = try env.database("t")
        try env.write { txn in
            try txn.put(db, Array("a".utf8), [1])
            let child = try txn.beginChild()
            try child.put(db, Array("b".utf8), [2])
            child.abort()
            let kept = try txn.beginChild()
            try kept.put(db, Array("c".utf8), [3])
            try kept.commit()
        }
        let (a, b, c) = try env.read { t in (try t.get(db, Array("a".utf8)), try t.get(db, Array("b".utf8)), try t.get(db, Array("c".utf8))) }
        #expect(a == [1] && b == nil && c == [3])
    }

    @Test func cursorsSeekAndIterateInKeyOrder() throws {
        let env = try Environment(path: try tempDir())
        let db = try env.database("t")
        try env.write { txn in for i: UInt64 in [5, 1, 3] { try txn.put(db, i.bigEndianBytes, [UInt8(i)]) } }
        let keys = try env.read { txn -> [UInt64] in
            let c = try txn.cursor(db)
            var out: [UInt64] = []
            var e = try c.seek(UInt64(2).bigEndianBytes)
            while let (k, _) = e { out.append(k.loadBigEndianUInt64()); e = try c.next() }
            return out
        }
        #expect(keys == [3, 5])
    }
}
