import AuthLedger
import AuthLedgerCore
import CLMDB
import Foundation
import LMDB

/// What a durable group commit costs on this disk by the pages it dirties: the ceiling of
/// `append_concurrent` in the same run (the Swift form of tools/lmdb-group-commit.c).
///
/// Each transaction carries `group` events, as one group commit of the ledger does: per
/// event one 300-byte put appended to a log (sequential keys, as the `events` and `tree`
/// databases take them) and `randomPuts` puts at the keys of random users among 10,000
/// already stored (as each event's `streams` entry and its user's state: each lands on
/// another leaf page, which the commit writes and syncs). The ledger's layout is two such
/// puts per event (plus personal values and records for the events that carry them).
extension BenchRun {
    struct GroupCommitCeiling {
        var group: Int
        var randomPuts: Int
        var commitsPerSecond: Double
        var kbWrittenPerCommit: Double
        var eventsPerSecond: Double { commitsPerSecond * Double(group) }
        var commitMilliseconds: Double { 1000 / commitsPerSecond }
    }

    func rawLMDBGroupCommit(group: Int = 50, randomPuts: Int, users: Int = 10_000, seconds: Double = 2) throws -> GroupCommitCeiling {
        let env = try Environment(path: try makeDir("raw-lmdb-group-commit-\(randomPuts)"))
        let log = try env.database("log")
        let names = ["streams", "states", "records"]
        let indexes = try names.prefix(randomPuts).map { try env.database($0) }
        let event = [UInt8](repeating: 0x65, count: 300), state = [UInt8](repeating: 0x73, count: 600)
        // What the streams and records entries hold: a seq (8 bytes); 32 bytes as found in the store.
        let entry = Array(state.prefix(8)), stored = Array(state.prefix(32))
        func userKey(_ u: UInt64) -> [UInt8] { var g = SplitMix64(seed: u); return g.next().bigEndianBytes8 }
        // Every user present already (a store in use): puts replace among existing keys.
        try env.write { txn in
            for (d, db) in indexes.enumerated() {
                for u in 0..<UInt64(users) { try txn.put(db, userKey(u), d == 1 ? state : stored) }
            }
        }
        var seq: UInt64 = 0, next: UInt64 = 1, commits = 0
        let written = BenchRun.bytesWritten()
        let t0 = DispatchTime.now().uptimeNanoseconds
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9 }
        while elapsed() < seconds {
            try env.write { txn in
                for _ in 0..<group {
                    seq += 1
                    try txn.put(log, seq.bigEndianBytes8, event, append: true)
                    for (d, db) in indexes.enumerated() {
                        let user = userKey(next % UInt64(users))
                        next += 1
                        // The streams entry is (user, version); the state and record keys the user.
                        try txn.put(db, d == 0 ? user + seq.bigEndianBytes8 : user, d == 1 ? state : entry)
                    }
                }
            }
            commits += 1
        }
        return GroupCommitCeiling(group: group, randomPuts: randomPuts, commitsPerSecond: Double(commits) / elapsed(),
                                  kbWrittenPerCommit: (BenchRun.bytesWritten() - written) / 1024 / Double(commits))
    }
}
