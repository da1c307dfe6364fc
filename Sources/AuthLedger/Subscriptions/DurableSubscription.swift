import AuthLedgerCore
/// A named, durable subscription (the persistent subscriptions of event stores): a
/// filter and a checkpoint — the last `seq` its consumer acknowledged — stored in the
/// ledger's `meta` database, so it survives restarts. Its consumer reads the feed from
/// `checkpoint + 1` and acknowledges what it has processed.
public struct DurableSubscription: Sendable, Equatable {
    /// Its name: 1–64 characters of `A-Z a-z 0-9 . _ -`, unique in the ledger.
    public var name: String
    /// Which events it delivers.
    public var filter: EventFilter
    /// The last acknowledged `seq` (0: nothing yet).
    public var checkpoint: UInt64
    /// Who created it: an opaque key of the creating token (a keyed digest, never the
    /// token), or nil for one stored before subscriptions had owners (admin only).
    public var owner: String?

    /// A subscription with these values (nothing is stored until the ledger creates it).
    public init(name: String, filter: EventFilter, checkpoint: UInt64, owner: String? = nil) {
        self.name = name
        self.filter = filter
        self.checkpoint = checkpoint
        self.owner = owner
    }

    /// Whether a caller acting as `owner` may see it (nil: unrestricted, as `admin`).
    func isVisible(to owner: String?) -> Bool {
        guard let owner else { return true }
        return self.owner == owner
    }

    /// `{"name", "user"?, "types"?, "checkpoint"}`.
    public var json: JSON {
        .object([("name", .string(name))] + (filter.json.objectValue ?? []) + [("checkpoint", .int(Int64(checkpoint)))])
    }

    static func key(_ name: String) -> String { "subscription/" + name }

    /// Names: 1–64 characters of `A–Z a–z 0–9 . _ -`.
    public static func checkName(_ name: String) throws(LedgerError) {
        let ok = !name.isEmpty && name.utf8.count <= 64 && name.utf8.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 46 || c == 95 || c == 45
        }
        guard ok else { throw LedgerError.invalid("a subscription name is 1–64 characters of A-Z a-z 0-9 . _ -", field: "name") }
    }

    func encoded() -> [UInt8] {
        var m = filter.json.objectValue ?? []
        m.append(("checkpoint", .int(Int64(checkpoint))))
        if let owner { m.append(("owner", .string(owner))) }
        return Array(JSON.object(m).serialized().utf8)
    }

    init(name: String, bytes: [UInt8]) throws(LedgerError) {
        guard let j = try? JSON.parse(bytes) else {
            throw LedgerError(.storageError, "subscription \(name) is stored in an unknown form")
        }
        var filter = EventFilter()
        filter.user = j["user"]?.stringValue
        if let types = j["types"]?.arrayValue {
            filter.types = Set(types.compactMap { $0.stringValue.flatMap(EventType.init(name:)) })
        }
        guard let cp = j["checkpoint"]?.intValue, cp >= 0 else {
            throw LedgerError(.storageError, "subscription \(name) is stored in an unknown form")
        }
        self.init(name: name, filter: filter, checkpoint: UInt64(cp), owner: j["owner"]?.stringValue)
    }
}

extension Ledger {
    /// The stored subscription, or nil (also when it is not visible to `owner`; nil
    /// `owner`: any subscription, as for `admin` and the CLI).
    public func subscription(named name: String, owner: String? = nil) async throws -> DurableSubscription? {
        try DurableSubscription.checkName(name)
        return try await read(ReadLoad(meta: [DurableSubscription.key(name)])) { r in try Ledger.loadSubscription(r, name, owner: owner) }
    }

    static func loadSubscription(_ r: any StorageReader, _ name: String, owner: String?) throws -> DurableSubscription? {
        guard let s = try r.metaValue(DurableSubscription.key(name)).map({ try DurableSubscription(name: name, bytes: $0) }) else { return nil }
        return s.isVisible(to: owner) ? s : nil
    }

    /// Creates the subscription, or replaces the filter of an existing one (its
    /// checkpoint is kept unless `from` is given). `from` is the first `seq` to deliver
    /// (default 1: the whole log, at most the head + 1). Returns it and whether it was
    /// created. A new subscription belongs to `createdBy`; with `owner` set, one that
    /// belongs to someone else is `not_found` (nil `owner`: unrestricted, as `admin`).
    public func putSubscription(name: String, filter: EventFilter, from: UInt64? = nil,
                                owner: String? = nil, createdBy: String? = nil) async throws -> (subscription: DurableSubscription, created: Bool) {
        try DurableSubscription.checkName(name)
        if let user = filter.user { try EventDecoder.checkUser(user) }
        return try await onWriter(meta: [DurableSubscription.key(name)]) { session in
            let stored = try Ledger.loadSubscription(session.w, name, owner: nil)
            if let stored, !stored.isVisible(to: owner) { throw LedgerError(.notFound, "no subscription \(name)", field: "name") }
            let existing = stored
            if let from, from > session.head.seq + 1 {
                throw LedgerError.invalid("from \(from) is beyond the head (\(session.head.seq)) + 1", field: "from")
            }
            let checkpoint = from.map { Swift.max($0, 1) - 1 } ?? existing?.checkpoint ?? 0
            let s = DurableSubscription(name: name, filter: filter, checkpoint: checkpoint, owner: existing?.owner ?? createdBy ?? owner)
            if s != existing { try session.w.putMetaValue(DurableSubscription.key(name), s.encoded()) }
            return (s, existing == nil)
        }
    }

    /// Acknowledges everything up to `seq`: the checkpoint moves forward only, and not
    /// beyond the head. Throws `not_found` for an unknown subscription.
    public func acknowledge(subscription name: String, through seq: UInt64, owner: String? = nil) async throws -> DurableSubscription {
        try DurableSubscription.checkName(name)
        return try await onWriter(meta: [DurableSubscription.key(name)]) { session in
            guard var s = try Ledger.loadSubscription(session.w, name, owner: owner) else {
                throw LedgerError(.notFound, "no subscription \(name)", field: "name")
            }
            guard seq <= session.head.seq else {
                throw LedgerError.invalid("seq \(seq) is beyond the head (\(session.head.seq))", field: "seq")
            }
            if seq > s.checkpoint {
                s.checkpoint = seq
                try session.w.putMetaValue(DurableSubscription.key(name), s.encoded())
            }
            return s
        }
    }

    /// Deletes the subscription; false when there was none.
    public func deleteSubscription(named name: String, owner: String? = nil) async throws -> Bool {
        try DurableSubscription.checkName(name)
        return try await onWriter(meta: [DurableSubscription.key(name)]) { session in
            guard try Ledger.loadSubscription(session.w, name, owner: owner) != nil else { return false }
            try session.w.putMetaValue(DurableSubscription.key(name), nil)
            return true
        }
    }
}
