import Crypto
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import Synchronization

/// An event id: a UUID, written in lower case.
public struct EventID: Hashable, Sendable, CustomStringConvertible {
    /// The first 8 bytes of the UUID, big-endian.
    public var high: UInt64
    /// The last 8 bytes of the UUID, big-endian.
    public var low: UInt64

    /// The id made of these 16 bytes.
    public init(high: UInt64, low: UInt64) { self.high = high; self.low = low }

    /// A new id: a version 7 UUID (48-bit Unix milliseconds, then 74 random bits).
    /// Time-ordered ids make the id index append-mostly: a batch touches a few leaf
    /// pages instead of one random page per event, which is what a durable commit pays for.
    public static func random() -> EventID {
        let ms = UInt64(max(0, Timestamp.now().milliseconds)) & 0xFFFF_FFFF_FFFF
        let (r1, r2) = RandomBits.shared.next2()
        let h = ms << 16 | 0x7000 | (r1 & 0x0FFF)
        let l = (r2 & ~(UInt64(0xC) << 60)) | (UInt64(0x8) << 60)
        return EventID(high: h, low: l)
    }

    /// Parses a UUID in its 36-character `8-4-4-4-12` form, hex digits in either case; nil for any other text.
    public init?(_ text: String) {
        let b = Array(text.utf8)
        guard b.count == 36, b[8] == 45, b[13] == 45, b[18] == 45, b[23] == 45 else { return nil }
        var h: UInt64 = 0, l: UInt64 = 0, n = 0
        for (k, c) in b.enumerated() where k != 8 && k != 13 && k != 18 && k != 23 {
            guard let d = hexValue(c) else { return nil }
            if n < 16 { h = h << 4 | UInt64(d) } else { l = l << 4 | UInt64(d) }
            n += 1
        }
        high = h
        low = l
    }

    /// The id in lower-case `8-4-4-4-12` form, as the recorded form writes it.
    public var description: String {
        let hex = hexString(high.bigEndianBytes8 + low.bigEndianBytes8)
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-" + String(c[20..<32])
    }

    package var bytes: [UInt8] { high.bigEndianBytes8 + low.bigEndianBytes8 }
}

/// Bits from the kernel's CSPRNG, fetched in blocks (a `getrandom` system call per
/// word was visible in the append profile).
package final class RandomBits: Sendable {
    package static let shared = RandomBits()
    private struct Pool: ~Copyable {
        var buffer = [UInt64](repeating: 0, count: 512)
        var next = 512
    }
    private let pool = Mutex(Pool())

    package func next2() -> (UInt64, UInt64) {
        pool.withLock { p in
            if p.next + 2 > p.buffer.count {
                // The kernel's CSPRNG, 256 bytes per getentropy call (swift-crypto's
                // SymmetricKey and SystemRandomNumberGenerator both make one call per word).
                p.buffer.withUnsafeMutableBytes { b in
                    var offset = 0
                    while offset < b.count {
                        let n = min(256, b.count - offset)
                        if getentropy(b.baseAddress! + offset, n) != 0 {
                            var g = SystemRandomNumberGenerator()
                            for k in stride(from: offset, to: offset + n, by: 8) { b.storeBytes(of: g.next(), toByteOffset: k, as: UInt64.self) }
                        }
                        offset += n
                    }
                }
                p.next = 0
            }
            p.next += 2
            return (p.buffer[p.next - 2], p.buffer[p.next - 1])
        }
    }
}

/// A SHA-256 value.
public struct Hash32: Hashable, Sendable, CustomStringConvertible {
    /// The 32 bytes of the hash.
    public var bytes: [UInt8]
    /// The hash made of these bytes; `bytes` must hold exactly 32 (a precondition).
    public init(bytes: [UInt8]) {
        precondition(bytes.count == 32)
        self.bytes = bytes
    }
    /// 32 zero bytes: the `prev` of the event at `seq` 1.
    public static let zero = Hash32(bytes: [UInt8](repeating: 0, count: 32))

    /// Parses 64 lower-case hex digits; nil for anything else (upper case included).
    public init?(hex: String) {
        let b = Array(hex.utf8)
        guard b.count == 64 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        for k in 0..<32 {
            // Lower case only: the recorded form is lower-case hex.
            guard let hi = hexValue(b[2 * k], lowerOnly: true), let lo = hexValue(b[2 * k + 1], lowerOnly: true) else { return nil }
            out[k] = hi << 4 | lo
        }
        bytes = out
    }

    /// The hash as 64 lower-case hex digits.
    public var description: String { hexString(bytes) }
}

/// The value of one hex digit (`0-9a-f`, and `A-F` unless `lowerOnly`); nil for any other
/// byte. The package's one hex decoder (hashes, ids, percent escapes).
package func hexValue(_ c: UInt8, lowerOnly: Bool = false) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F") where !lowerOnly: return c - UInt8(ascii: "A") + 10
    default: return nil
    }
}

/// Lower-case hex of `bytes`: the package's one hex encoder (hashes, ids, tokens), written
/// straight into the string's UTF-8 storage (it is on the path of every recorded event).
package func hexString(_ bytes: some Collection<UInt8>) -> String {
    String(unsafeUninitializedCapacity: bytes.count * 2) { out in
        var i = 0
        for b in bytes {
            out[i] = hexDigitASCII(b >> 4)
            out[i + 1] = hexDigitASCII(b & 15)
            i += 2
        }
        return i
    }
}

@inline(__always) private func hexDigitASCII(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
}

extension UInt64 {
    package var bigEndianBytes8: [UInt8] { withUnsafeBytes(of: bigEndian) { Array($0) } }
}

/// The stream of `policy.set` events.
public let systemStream = "$system"

/// An event's content: what a fixture line says, with its id once assigned.
public struct Event: Equatable, Sendable {
    /// The event's id; nil until the ledger assigns one (a version 7 UUID) when it appends the event.
    public var id: EventID?
    /// What happened: one of the types of SPEC 1.3.
    public var type: EventType
    /// The stream key; nil for `policy.set` (stream `$system`).
    public var user: String?
    /// When it happened; within a stream, `at` never goes backwards (SPEC 2.1).
    public var at: Timestamp
    /// The fields of the type (SPEC 1.3); personal values that were erased are absent.
    public var data: EventData
    /// The `meta` strings (`actor`, `correlationId`, `ip`, …), if any.
    public var meta: StringMap?
    /// The commitments of the personal values (SPEC 1.5): salts of the disclosed values,
    /// digests of every one (erased values are absent from `data` and `meta`).
    public var personal: PersonalValues?

    /// An event with this content; nothing is checked until it is appended or decoded.
    public init(id: EventID? = nil, type: EventType, user: String?, at: Timestamp, data: EventData, meta: StringMap? = nil,
                personal: PersonalValues? = nil) {
        self.id = id
        self.type = type
        self.user = user
        self.at = at
        self.data = data
        self.meta = meta
        self.personal = personal
    }

    /// The stream the event belongs to: its user, or `$system` for `policy.set`.
    public var stream: String { user ?? systemStream }

    /// `meta.actor`, if any.
    public var actor: String? { meta?["actor"] }

    /// Same content, ignoring the id (for idempotent re-appends). Content is JSON: the
    /// order of members in `meta` and `context` is not content (SPEC 1.1 "identical").
    /// Salts are not content either: a personal value is the same when its clear value
    /// is, or, where one side has only a commitment, when the commitments are (an erased
    /// value cannot be compared with a clear one that has no salt: that counts as the same).
    package func sameContent(as other: Event) -> Bool {
        guard type == other.type, user == other.user, at == other.at else { return false }
        if personal?.hasErased == true || other.personal?.hasErased == true {
            return PersonalData.sameContent(self, other)
        }
        if data == other.data && meta == other.meta { return true }
        return data.json.canonicalBytes() == other.data.json.canonicalBytes()
            && meta?.json.canonicalBytes() == other.meta?.json.canonicalBytes()
    }
}

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
