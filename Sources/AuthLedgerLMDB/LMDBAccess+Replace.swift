/// A replay's rewrite of the projection states and records (`clearProjectionStates`,
/// `clearRecords`, then every state and record again) written as a difference with what
/// `streams` holds: a put that finds the same bytes writes nothing, and when the
/// transaction ends the entries that were not put again are deleted. Layout 3 keeps a
/// user's state and records beside its index entries, so deleting and putting them all
/// again would copy nearly every leaf page of `streams` into the transaction; a replay of
/// an intact store writes none of them, and only the keys put are remembered (not the
/// values: the partitions' results are freed as they are put).
struct LMDBReplacement {
    var states = false
    var records = false
    /// The keys put since the replacement began.
    var put: Set<[UInt8]> = []

    var isActive: Bool { states || records }

    func replaces(_ kind: StreamEntry) -> Bool {
        switch kind {
        case .state: states
        case .record: records
        case .index, .unknown: false
        }
    }
}

extension LMDBAccess {
    /// Runs a write transaction's body, then deletes what a replacement left behind.
    func run<T>(_ body: (any StorageWriter) throws -> T) throws -> T {
        let value = try body(self)
        try finishReplacement()
        return value
    }

    /// Starts replacing the entries of `kind`.
    func replace(_ kind: StreamEntry) {
        switch kind {
        case .state: replacing.states = true
        case .record: replacing.records = true
        case .index, .unknown: return
        }
        replacing.put = replacing.put.filter { key in key.withUnsafeBytes { !StreamEntry.kind($0).sameCase(as: kind) } }
    }

    /// Puts `value` under `key` of a kind being replaced, unless it is there already.
    func replacePut(_ key: [UInt8], _ value: [UInt8]) throws {
        replacing.put.insert(key)
        let same = try key.withUnsafeBytes { k in try txn.get(s.streams, k).map { $0.elementsEqual(value) } ?? false }
        if !same { try txn.put(s.streams, key, value) }
    }

    /// Deletes the entries of the replaced kinds that were not put again; nothing to do when
    /// no replacement is under way.
    func finishReplacement() throws {
        guard replacing.isActive else { return }
        let replaced = replacing
        replacing = LMDBReplacement()
        var gone: [[UInt8]] = []
        try forEachEntry { k, _ in
            if replaced.replaces(StreamEntry.kind(k)) {
                let key = Array(k)
                if !replaced.put.contains(key) { gone.append(key) }
            }
            return true
        }
        for key in gone { _ = try txn.delete(s.streams, key) }
    }
}

extension StreamEntry {
    /// The same kind of entry (records of any kind together).
    func sameCase(as other: StreamEntry) -> Bool {
        switch (self, other) {
        case (.index, .index), (.state, .state), (.record, .record), (.unknown, .unknown): true
        default: false
        }
    }
}
