import CLMDB
import Crypto
import Foundation
import LMDB

/// `raw_ledger_equiv`: the ledger's own work per event done by a plain loop over the raw
/// LMDB C API and SHA-256, with no rules, no decoding and no typed values — the floor
/// "as fast as the same work in C" that `append_bulk` and `replay` are held against in the
/// same run (`append_bulk_vs_raw_ledger_equiv`, `replay_vs_raw_ledger_equiv`).
///
/// Per event, as the ledger does: ~300 bytes of canonical JSON `C`, the leaf
/// `SHA-256(0x00 ‖ C)`, the chain `SHA-256(prev ‖ leaf)`, one salted-commitment hash of ~60
/// bytes, the RFC 6962 interior nodes completed by the leaf (each put), the event put
/// (`C ‖ prev ‖ hash`, appended in key order), one per-user index put, and each touched
/// user's 200-byte state put once per 10,000-event durable transaction; the users as in
/// the bench's workload (40 events each, 1,000 interleaved). Replay: one cursor scan, each
/// leaf re-hashed and the chain checked, a state per user folded, all states written in one
/// transaction.
struct BenchLedgerEquiv {
    static let canonicalSize = 300, stateSize = 200, batch = 10_000, group = 1_000, perUser = 40

    let events: Int
    let dir: String

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func check(_ rc: Int32, _ what: String) throws {
        if rc != 0 { throw Failure(description: "\(what): \(String(cString: mdb_strerror(rc)))") }
    }

    static func bigEndian(_ v: UInt64, into p: UnsafeMutablePointer<UInt8>) {
        var v = v
        for i in stride(from: 7, through: 0, by: -1) { p[i] = UInt8(truncatingIfNeeded: v); v >>= 8 }
    }

    static func mix(_ x: UInt64) -> UInt64 {
        var x = x &+ 0x9e37_79b9_7f4a_7c15
        x = (x ^ (x >> 30)) &* 0xbf58_476d_1ce4_e5b9
        x = (x ^ (x >> 27)) &* 0x94d0_49bb_1331_11eb
        return x ^ (x >> 31)
    }

    /// The event's canonical bytes, padded with spaces to `canonicalSize`, after a 0x00 prefix
    /// byte: written byte by byte, as `snprintf` would, with no allocation.
    static func canonical(seq: UInt64, user: UInt64, into c: UnsafeMutablePointer<UInt8>) {
        var n = 1
        func put(_ s: StaticString) {
            s.withUTF8Buffer { b in for x in b where n <= canonicalSize { c[n] = x; n += 1 } }
        }
        func hex16(_ v: UInt64) {
            for shift in stride(from: 60, through: 0, by: -4) where n <= canonicalSize {
                let d = UInt8((v >> UInt64(shift)) & 0xF)
                c[n] = d < 10 ? 48 + d : 87 + d
                n += 1
            }
        }
        func decimal(_ v: UInt64, width: Int = 0) {
            var digits = 1, p: UInt64 = 10
            while p <= v && digits < 20 { digits += 1; p = p &* 10 }
            let total = max(digits, width)
            guard n + total <= canonicalSize + 1 else { return }
            var x = v
            for i in stride(from: n + total - 1, through: n, by: -1) {
                c[i] = 48 + UInt8(x % 10)
                x /= 10
            }
            n += total
        }
        c[0] = 0
        put("{\"at\":\"2026-01-01T00:00:00.000Z\",\"data\":{\"binding\":\"permanent\",\"deviceId\":\"d")
        decimal(seq % 7)
        put("\",\"kind\":\"mobile\",\"name\":{\"_sd\":\"")
        hex16(mix(seq)); hex16(mix(seq + 1))
        put("\"},\"via\":\"initial\"},\"id\":\"")
        hex16(mix(seq + 2))
        put("\",\"seq\":")
        decimal(seq)
        put(",\"type\":\"device.registered\",\"user\":\"user-")
        decimal(user, width: 8)
        put("\"}")
        while n <= canonicalSize { c[n] = 0x20; n += 1 }
    }

    /// Lets go of the map's pages in this process, as the ledger's LMDB backend does after
    /// appends and behind a scan (`MADV_DONTNEED` on the read-only shared map; the page
    /// cache keeps them): without it, the scan alone pins the whole log in the resident set.
    func releaseMap() { Environment.release(Environment.mappedRegions(of: dir)) }

    static func sha256(_ p: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>) {
        let d = SHA256.hash(data: p)
        d.withUnsafeBytes { out.update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: 32) }
    }

    /// Events per second of the append loop and of the replay.
    func run() throws -> (append: Double, replay: Double) {
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let n = events, users = (n + Self.perUser - 1) / Self.perUser + Self.group
        var env: OpaquePointer?
        try Self.check(mdb_env_create(&env), "env_create")
        defer { mdb_env_close(env) }
        try Self.check(mdb_env_set_mapsize(env, 16 << 30), "set_mapsize")
        try Self.check(mdb_env_set_maxdbs(env, 8), "set_maxdbs")
        try Self.check(mdb_env_open(env, dir, 0, 0o644), "env_open")
        var txn: OpaquePointer?
        var log = MDB_dbi(), idx = MDB_dbi(), tree = MDB_dbi(), state = MDB_dbi()
        try Self.check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        try Self.check(mdb_dbi_open(txn, "log", UInt32(MDB_CREATE), &log), "dbi_open")
        try Self.check(mdb_dbi_open(txn, "idx", UInt32(MDB_CREATE), &idx), "dbi_open")
        try Self.check(mdb_dbi_open(txn, "tree", UInt32(MDB_CREATE), &tree), "dbi_open")
        try Self.check(mdb_dbi_open(txn, "state", UInt32(MDB_CREATE), &state), "dbi_open")
        try Self.check(mdb_txn_commit(txn), "txn_commit")

        let cs = Self.canonicalSize
        let c = UnsafeMutablePointer<UInt8>.allocate(capacity: 1 + cs)
        let rec = UnsafeMutablePointer<UInt8>.allocate(capacity: cs + 64)
        let frontier = UnsafeMutablePointer<UInt8>.allocate(capacity: 64 * 32)
        let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 65 + 32 + 32 + 32 + 24)
        let st = UnsafeMutablePointer<UInt8>.allocate(capacity: Self.stateSize)
        defer { [c, rec, frontier, scratch, st].forEach { $0.deallocate() } }
        st.initialize(repeating: UInt8(ascii: "s"), count: Self.stateSize)
        let prev = scratch + 65, leaf = prev + 32, h = leaf + 32, key = h + 32
        prev.initialize(repeating: 0, count: 32)
        var dirty = [Bool](repeating: false, count: users)
        var touched: [Int] = []
        touched.reserveCapacity(Self.batch)

        let t0 = DispatchTime.now().uptimeNanoseconds
        var done = 0
        while done < n {
            try Self.check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
            touched.removeAll(keepingCapacity: true)
            var i = 0
            while i < Self.batch && done < n {
                let seq = UInt64(done + 1)
                let user = done / (Self.group * Self.perUser) * Self.group + done % Self.group
                Self.canonical(seq: seq, user: UInt64(user), into: c)
                Self.sha256(UnsafeRawBufferPointer(start: c, count: 1 + cs), into: leaf)
                // chain = SHA-256(prev ‖ leaf), in scratch[0..<64]
                scratch.update(from: prev, count: 32)
                (scratch + 32).update(from: leaf, count: 32)
                Self.sha256(UnsafeRawBufferPointer(start: scratch, count: 64), into: h)
                prev.update(from: h, count: 32)
                // The salted commitment of a personal value (~60 bytes).
                Self.sha256(UnsafeRawBufferPointer(start: c + 40, count: 60), into: scratch)
                // RFC 6962: the subtrees the leaf completes, each interior node put.
                let cur = scratch + 33
                cur.update(from: leaf, count: 32)
                var level = 0, index = UInt64(done)
                while index & 1 == 1 {
                    scratch[0] = 1
                    (scratch + 1).update(from: frontier + level * 32, count: 32)
                    // scratch[1..<33] = left, scratch[33..<65] = right (cur): hash in place
                    Self.sha256(UnsafeRawBufferPointer(start: scratch, count: 65), into: cur)
                    level += 1
                    index >>= 1
                    Self.bigEndian(UInt64(level) << 56 | index, into: key)
                    var k = MDB_val(mv_size: 8, mv_data: UnsafeMutableRawPointer(key))
                    var v = MDB_val(mv_size: 32, mv_data: UnsafeMutableRawPointer(cur))
                    try Self.check(mdb_put(txn, tree, &k, &v, 0), "put tree")
                }
                (frontier + level * 32).update(from: cur, count: 32)
                rec.update(from: c + 1, count: cs)
                (rec + cs).update(from: prev, count: 32)
                (rec + cs + 32).update(from: h, count: 32)
                Self.bigEndian(seq, into: key)
                var k = MDB_val(mv_size: 8, mv_data: UnsafeMutableRawPointer(key))
                var v = MDB_val(mv_size: cs + 64, mv_data: UnsafeMutableRawPointer(rec))
                try Self.check(mdb_put(txn, log, &k, &v, UInt32(MDB_APPEND)), "put log")
                Self.bigEndian(UInt64(user), into: key)
                Self.bigEndian(seq, into: key + 8)
                var ik = MDB_val(mv_size: 16, mv_data: UnsafeMutableRawPointer(key))
                var iv = MDB_val(mv_size: 0, mv_data: nil)
                try Self.check(mdb_put(txn, idx, &ik, &iv, 0), "put index")
                if !dirty[user] { dirty[user] = true; touched.append(user) }
                i += 1
                done += 1
            }
            for u in touched {
                Self.bigEndian(UInt64(u), into: key)
                var k = MDB_val(mv_size: 8, mv_data: UnsafeMutableRawPointer(key))
                var v = MDB_val(mv_size: Self.stateSize, mv_data: UnsafeMutableRawPointer(st))
                try Self.check(mdb_put(txn, state, &k, &v, 0), "put state")
                dirty[u] = false
            }
            try Self.check(mdb_txn_commit(txn), "txn_commit")
            // The ledger: every 64 MB of growth (~170,000 events here).
            if done % 170_000 < Self.batch { releaseMap() }
        }
        let append = Double(n) / (Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9)

        // Replay: one scan, leaves re-hashed, the chain checked, states folded and written.
        let states = UnsafeMutablePointer<UInt8>.allocate(capacity: users * Self.stateSize)
        defer { states.deallocate() }
        states.initialize(repeating: 0, count: users * Self.stateSize)
        let t1 = DispatchTime.now().uptimeNanoseconds
        try Self.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "txn_begin")
        var cursor: OpaquePointer?
        try Self.check(mdb_cursor_open(txn, log, &cursor), "cursor_open")
        var k = MDB_val(), v = MDB_val()
        prev.update(repeating: 0, count: 32)
        var seen = 0, bad = 0
        while mdb_cursor_get(cursor, &k, &v, MDB_NEXT) == 0 {
            let r = v.mv_data.assumingMemoryBound(to: UInt8.self)
            c[0] = 0
            (c + 1).update(from: r, count: cs)
            Self.sha256(UnsafeRawBufferPointer(start: c, count: 1 + cs), into: leaf)
            scratch.update(from: prev, count: 32)
            (scratch + 32).update(from: leaf, count: 32)
            Self.sha256(UnsafeRawBufferPointer(start: scratch, count: 64), into: h)
            if memcmp(h, r + cs + 32, 32) != 0 { bad += 1 }
            prev.update(from: h, count: 32)
            let user = seen / (Self.group * Self.perUser) * Self.group + seen % Self.group
            seen += 1
            states[user * Self.stateSize + seen % Self.stateSize] ^= leaf[0]
            // The ledger: the pages behind the cursor every 16,384 events.
            if seen % 16_384 == 0 { releaseMap() }
        }
        mdb_cursor_close(cursor)
        mdb_txn_abort(txn)
        try Self.check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        for u in 0..<users {
            Self.bigEndian(UInt64(u), into: key)
            var sk = MDB_val(mv_size: 8, mv_data: UnsafeMutableRawPointer(key))
            var sv = MDB_val(mv_size: Self.stateSize, mv_data: UnsafeMutableRawPointer(states + u * Self.stateSize))
            try Self.check(mdb_put(txn, state, &sk, &sv, 0), "put state")
        }
        try Self.check(mdb_txn_commit(txn), "txn_commit")
        let replay = Double(seen) / (Double(DispatchTime.now().uptimeNanoseconds - t1) / 1e9)
        guard bad == 0, seen == n else { throw Failure(description: "raw_ledger_equiv: \(bad) chain mismatches, \(seen) of \(n) events") }
        return (append, replay)
    }
}
