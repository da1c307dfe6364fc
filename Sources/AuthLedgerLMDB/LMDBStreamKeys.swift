import Crypto
import LMDB

/// The keys of `streams` (layout 3): everything the store derives for a stream sits in one
/// range of one B-tree, so a commit dirties one leaf page per user it touches.
///
/// - index entry: stream key ‖ 0x00 ‖ version (8 bytes, big-endian, at most 2⁶³−1: its first
///   byte is 0x00–0x7F) → seq;
/// - record (challenge, OTP, grant; links under the empty stream key): stream key ‖ 0x00 ‖
///   0xFE ‖ kind ‖ id → encoded record; when that would be longer than LMDB's 511-byte
///   limit (or the stream key is digested), 0x01 ‖ 0xFE ‖ kind ‖ SHA-256(user ‖ 0x00 ‖ id)
///   instead, the digest layouts 1 and 2 keyed such records by (0x01 never starts a stream key);
/// - projection state: stream key ‖ 0x00 ‖ 0xFF × 8, after the stream's entries and records.
///
/// A stream key is a user key's UTF-8 (no control characters) or, over 502 bytes, its first
/// 400 bytes ‖ 0x01 ‖ SHA-256 of it (`LMDBAccess.storedKey`), so the 0x00 after it is found
/// from the front and every key says what it is (`StreamEntry.kind`).
enum StreamEntry: Equatable {
    case index, state, record(UInt8), unknown

    static let recordTag: UInt8 = 0xFE

    /// What the `streams` key `k` is.
    static func kind(_ k: UnsafeRawBufferPointer) -> StreamEntry {
        if k.first == 1 { return k.count == 35 && k[1] == recordTag ? .record(k[2]) : .unknown }
        guard var i = k.firstIndex(where: { $0 <= 1 }) else { return .unknown }
        if k[i] == 1 { i += 33 }
        guard i + 1 < k.count, k[i] == 0 else { return .unknown }
        let tag = k[i + 1]
        if tag == recordTag { return i + 2 < k.count ? .record(k[i + 2]) : .unknown }
        guard k.count == i + 9 else { return .unknown }
        if tag <= 0x7F { return .index }
        return k.loadBigEndianUInt64(at: i + 1) == LMDBAccess.stateVersion ? .state : .unknown
    }

    /// The key of the record `id` of kind `kind` owned by `owner` (a user, or "" for links).
    static func recordKey(_ kind: UInt8, owner: String, id: String) -> [UInt8] {
        let user = Array(owner.utf8), name = Array(id.utf8)
        if user.count <= 502 && user.count + 3 + name.count <= 511 { return user + [0, recordTag, kind] + name }
        return longRecordKey(kind, digest: Array(SHA256.hash(data: user + [0] + name)))
    }

    /// The key of a record whose user ‖ 0x00 ‖ id has the SHA-256 `digest`.
    static func longRecordKey(_ kind: UInt8, digest: [UInt8]) -> [UInt8] { [1, recordTag, kind] + digest }

    /// The layout-3 key of a record of `kind` that layouts 1 and 2 kept under `old` in the
    /// kind's own database (user ‖ 0x00 ‖ id, or 0x01 ‖ its digest); nil when malformed.
    static func movedRecordKey(_ kind: UInt8, old: UnsafeRawBufferPointer) -> [UInt8]? {
        if old.first == 1 { return old.count == 33 ? longRecordKey(kind, digest: Array(old[1...])) : nil }
        guard let split = old.firstIndex(of: 0) else { return nil }
        return recordKey(kind, owner: String(decoding: old[..<split], as: UTF8.self),
                         id: String(decoding: old[(split + 1)...], as: UTF8.self))
    }
}
