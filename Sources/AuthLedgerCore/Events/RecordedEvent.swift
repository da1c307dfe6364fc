import Crypto

/// An event as the log holds it: content plus position and chain.
public struct RecordedEvent: Equatable, Sendable {
    /// The event's content, with its id.
    public var event: Event
    /// Its position in the whole log: 1, 2, 3, … with no gap, in commit order.
    public var seq: UInt64
    /// Its position within its stream: 1, 2, 3, … (`$system` counts its own).
    public var version: UInt64
    /// The `hash` of the event at `seq - 1` (``Hash32/zero`` for `seq` 1).
    public var prev: Hash32
    /// This event's chain hash: `SHA-256(prev ‖ leaf)` (SPEC 1.2).
    public var hash: Hash32

    /// A recorded event with these values as given; nothing is recomputed or checked.
    public init(event: Event, seq: UInt64, version: UInt64, prev: Hash32, hash: Hash32) {
        self.event = event
        self.seq = seq
        self.version = version
        self.prev = prev
        self.hash = hash
    }

    /// The event's id; a recorded event always has one.
    public var id: EventID { event.id! }

    /// The recorded form without `prev`, `hash` and `disclosures`; with `hashed`, every
    /// personal value replaced by its commitment: the object canonicalised for the leaf.
    static func contentMembers(_ e: Event, seq: UInt64, version: UInt64, hashed: Bool = true) -> [(String, JSON)] {
        var m: [(String, JSON)] = [("seq", .int(Int64(seq))), ("version", .int(Int64(version))),
                                   ("id", .string(e.id!.description)), ("type", .string(e.type.name))]
        if let u = e.user { m.append(("user", .string(u))) }
        m.append(("at", .string(e.at.formatted)))
        let (data, meta) = PersonalData.json(e, hashed: hashed)
        m.append(("data", data))
        if let meta { m.append(("meta", meta)) }
        return m
    }

    /// The recorded form (SPEC 1.2), as `export` writes it and the feed delivers it:
    /// clear personal values with their salts in `disclosures`, commitments of erased ones.
    public var json: JSON {
        var m = RecordedEvent.contentMembers(event, seq: seq, version: version, hashed: false)
        if let d = event.personal?.disclosures, !d.pairs.isEmpty { m.append(("disclosures", d.json)) }
        return .object(m + [("prev", .string(prev.description)), ("hash", .string(hash.description))])
    }

    /// The hashed form (SPEC 1.2) without `prev` and `hash`: what a leaf commits to.
    public var hashedJSON: JSON { .object(RecordedEvent.contentMembers(event, seq: seq, version: version)) }

    /// `leaf = SHA-256(0x00 ‖ JCS(event without prev and hash))`, written directly
    /// from the typed event (`CanonicalEvent`).
    package static func leaf(_ e: Event, seq: UInt64, version: UInt64) -> SHA256.Digest {
        CanonicalEvent.leaf(e, seq: seq, version: version)
    }

    /// `C` of SPEC 1.2: the bytes `leaf` hashes after `0x00` (the entries of the Merkle
    /// tree's entry bundles). A test checks `SHA-256(0x00 ‖ leafInput) == leaf` for every event.
    public static func leafInput(_ e: Event, seq: UInt64, version: UInt64) -> [UInt8] {
        var buf: [UInt8] = []
        buf.reserveCapacity(512)
        CanonicalEvent.write(e, seq: seq, version: version, into: &buf)
        return buf
    }

    /// The leaf through a JSON tree and generic JCS: the reference the direct writer is tested against.
    static func referenceLeaf(_ e: Event, seq: UInt64, version: UInt64) -> [UInt8] {
        var sha = SHA256()
        sha.update(data: [0])
        sha.update(data: JSON.object(contentMembers(e, seq: seq, version: version)).canonicalBytes())
        return Array(sha.finalize())
    }

    /// `hash = SHA-256(prev ‖ leaf)`.
    package static func chain(prev: Hash32, leaf: SHA256.Digest) -> Hash32 {
        var sha = SHA256()
        sha.update(data: prev.bytes)
        leaf.withUnsafeBytes { sha.update(bufferPointer: $0) }
        return Hash32(bytes: Array(sha.finalize()))
    }

    /// The chain hash (SPEC 1.2) the event gets at `seq` and stream `version` after `prev`:
    /// `SHA-256(prev ‖ SHA-256(0x00 ‖ C))`, `C` being the canonical JSON of its hashed form.
    public static func computeHash(_ e: Event, seq: UInt64, version: UInt64, prev: Hash32) -> Hash32 {
        chain(prev: prev, leaf: leaf(e, seq: seq, version: version))
    }
}
