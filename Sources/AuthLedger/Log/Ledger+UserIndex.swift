import AuthLedgerCore

/// The user index's position and a user's proof in it (section 14 of the reference).
package struct UserIndexAnswer: Sendable {
    /// The log size the index covers, and its root `I_S`.
    package var size: UInt64
    package var root: Hash32
    /// The user's event count at `size` (0: none), stream hash and newest seq.
    package var count: UInt64
    package var streamHash: Hash32
    package var last: UInt64
    /// Inclusion (count > 0) or non-inclusion of the user's key.
    package var proof: UserIndexProof
}

/// An entry appended to the index log: `u64be(size) ‖ logRoot ‖ indexRoot` at `index`.
package struct UserIndexEntry: Sendable, Equatable {
    package var index: UInt64
    package var size: UInt64
    package var logRoot: Hash32
    package var indexRoot: Hash32
    /// How many users' commitments the update changed.
    package var changed: Int
}

extension Ledger {
    /// Brings the stored user index up to the head and appends its entry to the index log,
    /// in one transaction of its own on the writer: the users with events since the size it
    /// covers (read from the log), each path rehashed once. Nil when the log has not grown.
    ///
    /// LMDB reads and writes in place, in one write transaction. PostgreSQL holds no thread
    /// waiting: its transaction locks the head, then awaits what the update reads — the log
    /// since the index's size, the users' stream heads, the index pages on their paths and
    /// the index log's tree frontier, found on a snapshot (`userIndexUpdate`) while no other
    /// writer can commit — loads the pages and the frontiers with the head's lock held, and
    /// the update runs once over them (`applyUserIndex`), a read of anything else refused.
    @discardableResult
    package func updateUserIndex() async throws -> UserIndexEntry? {
        guard let scanning = storage as? AsyncBatchScanning else {
            let storage = try inPlace
            return try await writer.exclusive { try storage.write { w in try Ledger.updateUserIndex(w) } }
        }
        return try await writer.exclusiveAsync {
            try await scanning.writeAwaiting({ head in try await Ledger.userIndexUpdate(scanning, head: head) },
                                             load: { update in
                                                 var load = StorageLoad()
                                                 load.meta = update?.meta ?? []
                                                 load.appends = update != nil
                                                 return load
                                             }) { w, update in try update.map { try Ledger.applyUserIndex(w, $0) } }
        }
    }

    static func updateUserIndex(_ w: any StorageWriter) throws -> UserIndexEntry? {
        let head = try w.head()
        guard let from = try userIndexFrom(w, head: head) else { return nil }
        var users = Set<String>()
        try w.scan(from: from) { seq, bytes in
            guard seq <= head.seq else { return false }
            try userIndexUser(seq, bytes, into: &users)
            return true
        }
        // (On PostgreSQL, `userIndexUpdate` reads the states and pages this reads in its own steps.)
        var items: [UserIndexPages.Item] = []
        items.reserveCapacity(users.count)
        for user in users {
            let (count, stored) = try storedStreamHead(w, user)
            let head = try stored ?? streamHead(w, user)
            items.append((UserIndex.key(user), head.commitment(count: count)))
        }
        return try applyUserIndex(w, UserIndexUpdate(head: head, items: items, meta: []))
    }

    /// The first seq the update reads (after the size the index covers); nil when the log
    /// has not grown beyond it.
    private static func userIndexFrom(_ r: any StorageReader, head: Head) throws -> UInt64? {
        let from = try UserIndexPages.position(r).size
        guard head.seq > from else {
            if head.seq < from { throw LedgerError(.tampered, "the user index covers more than the log", seq: head.seq + 1) }
            return nil
        }
        return from + 1
    }

    /// Adds the user of the stored event at `seq` (none for a system event).
    private static func userIndexUser(_ seq: UInt64, _ bytes: UnsafeRawBufferPointer, into users: inout Set<String>) throws {
        guard let user = EventCodec.user(bytes) else { throw LedgerError(.tampered, "stored event is not decodable", seq: seq) }
        if !user.isEmpty { users.insert(user) }
    }

    /// What the user index's update writes from: the head it brings the index to, each
    /// changed user's key and commitment, and (PostgreSQL) the meta values it reads.
    struct UserIndexUpdate: Sendable {
        let head: Head
        var items: [UserIndexPages.Item]
        let meta: [String]
    }

    /// The update over a snapshot of the store at the locked `head` (PostgreSQL): the users
    /// from the log in runs, their stream heads (their states; the streams of those whose
    /// state has none), and the meta values the update will read — the pages on the users'
    /// paths, found a level of pages at a time (a page below one only where that one
    /// exists), and the index log's size and the tree hashes of its frontier.
    static func userIndexUpdate(_ scanning: any AsyncBatchScanning, head: Head) async throws -> UserIndexUpdate? {
        try await scanning.snapshot { s in
            try await s.load(ReadLoad(meta: [UserIndexPages.stateKey, UserIndexLog.sizeKey]))
            guard let from = try userIndexFrom(s.loaded, head: head) else { return nil }
            var users = Set<String>()
            try await s.indexedRuns(from: from, run: Ledger.verifyRun) { run in
                var more = true
                try run.forEach { seq, bytes, _, _, _, _ in
                    guard more, seq <= head.seq else { more = false; return }
                    try userIndexUser(seq, bytes, into: &users)
                }
                return more
            }
            let listed = Array(users)
            try await s.load(ReadLoad(states: listed))
            let unhashed = try listed.filter { try storedStreamHead(s.loaded, $0).head == nil }
            if !unhashed.isEmpty { try await s.load(ReadLoad(streams: unhashed)) }
            var items: [UserIndexPages.Item] = []
            items.reserveCapacity(listed.count)
            for user in listed {
                let (count, stored) = try storedStreamHead(s.loaded, user)
                let head = try stored ?? streamHead(s.loaded, user)
                items.append((UserIndex.key(user), head.commitment(count: count)))
            }
            var meta = [UserIndexLog.sizeKey]
            var keys = items.map(\.key), depth = 0
            while !keys.isEmpty && depth <= 256 {
                let names = Set(keys.map { UserIndexPages.pageKey($0, depth: depth) })
                try await s.load(ReadLoad(meta: Array(names)))
                meta += names
                let at = depth
                keys = try keys.filter { try s.loaded.metaValue(UserIndexPages.pageKey($0, depth: at)) != nil }
                depth += UserIndexPages.levels
            }
            let n = try UserIndexLog.size(s.loaded)
            meta += ReadLoad.treeIndexes { t in
                _ = try TreeFrontier.load(size: n) { level, k in try t.hash(level: level, k).bytes.withUnsafeBytes { TreeFrontier.Node($0) } }
            }.map(UserIndexLog.treeKey)
            return UserIndexUpdate(head: head, items: items, meta: meta)
        }
    }

    /// Writes the update: the pages on the changed paths, the index's position, and the
    /// index log's entry (the log's root at the head, the index's new root).
    static func applyUserIndex(_ w: any StorageWriter, _ update: UserIndexUpdate) throws -> UserIndexEntry {
        let head = update.head
        var items = update.items
        items.sort { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
        let root = try UserIndexPages.update(w, items)
        try w.putMetaValue(UserIndexPages.stateKey, head.seq.bigEndianBytes8 + root.bytes)
        let logRoot = try Ledger.treeReader(w).root(head.seq)
        let index = try UserIndexLog.append(w, UserIndexLog.entry(size: head.seq, logRoot: logRoot, indexRoot: root))
        return UserIndexEntry(index: index, size: head.seq, logRoot: logRoot, indexRoot: root, changed: items.count)
    }

    /// `user`'s proof in the stored index, at the size it covers.
    package func userIndexAnswer(_ user: String) async throws -> UserIndexAnswer {
        try await read(Ledger.userIndexLoad(user), then: { r in try Ledger.userIndexStreamLoad(r, user) }) { r in
            try Ledger.userIndexAnswer(r, user)
        }
    }

    /// What `userIndexAnswer` reads first: the index's position, the pages on the user's
    /// key's path (every depth a page may start at) and the user's state.
    static func userIndexLoad(_ user: String) -> ReadLoad {
        let key = UserIndex.key(user)
        let pages = stride(from: 0, through: 256, by: UserIndexPages.levels).map { UserIndexPages.pageKey(key, depth: $0) }
        return ReadLoad(states: [user], meta: [UserIndexPages.stateKey] + pages)
    }

    /// What it reads next: the user's stream, when the state is ahead of the index's size.
    static func userIndexStreamLoad(_ r: any StorageReader, _ user: String) throws -> ReadLoad {
        let (size, _) = try UserIndexPages.position(r)
        let (_, head) = try storedStreamHead(r, user)
        return head == nil || head!.last > size ? ReadLoad(streams: [user]) : ReadLoad()
    }

    static func userIndexAnswer(_ r: any StorageReader, _ user: String) throws -> UserIndexAnswer {
        let (size, root) = try UserIndexPages.position(r)
        let key = UserIndex.key(user)
        let proof = try UserIndexPages.proof(r, for: key)
        guard proof.root(for: key) == root else { throw LedgerError(.tampered, "the user index's pages do not hash to its root") }
        // The stream as of `size`: the state at the head, or its events up to `size`.
        var (count, head) = try storedStreamHead(r, user)
        if head == nil || head!.last > size {
            let prefix = try streamPrefix(r, user, before: size + 1)
            (count, head) = (prefix.count, prefix.head)
        }
        let commitment = count == 0 ? nil : head!.commitment(count: count)
        guard proof.commitment(for: key) == commitment else {
            throw LedgerError(.tampered, "the user index holds another commitment for \(user) than its stream", seq: head!.last)
        }
        return UserIndexAnswer(size: size, root: root, count: count, streamHash: head!.hash, last: head!.last, proof: proof)
    }

    /// Checks the stored index against the streams as of the size it covers (`verify`).
    static func checkUserIndex(_ r: any StorageReader, size: UInt64, streams: [String: StreamHead], counts: [String: UInt64]) throws {
        let (covered, root) = try UserIndexPages.position(r)
        guard covered == size else { return }
        let (computed, leaves) = try UserIndexPages.leaves(r)
        for (user, head) in streams {
            let key = UserIndex.key(user)
            guard let c = leaves[key] else {
                throw LedgerError(.tampered, "the user index at size \(size) leaves out \(user)", seq: head.last)
            }
            guard c == head.commitment(count: counts[user] ?? 0) else {
                throw LedgerError(.tampered, "the user index at size \(size) holds a wrong commitment for \(user)", seq: head.last)
            }
        }
        guard leaves.count == streams.count else {
            throw LedgerError(.tampered, "the user index at size \(size) holds a key of no user with events", seq: size)
        }
        guard computed == root else { throw LedgerError(.tampered, "the user index's root at size \(size) is not its pages'", seq: size) }
        try UserIndexLog.check(r, logSize: try r.head().seq, indexRoot: root)
    }
}
