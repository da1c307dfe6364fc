import AuthLedgerCore
import Crypto

/// The leaf hash of a stored event computed from its stored bytes (`EventCodec`), without
/// decoding them into an `Event`: no `String`, no field bag, no array per event. The
/// canonical bytes (RFC 8785, the same as `CanonicalEvent`) are written straight from the
/// stored encoding into one reused buffer and hashed. Replay's tree check and the tree
/// rebuild hash every event of the log this way: decoding each event into typed values was
/// half of that work (profile in docs/BENCHMARKS.md, "Append and replay at C speed").
///
/// It writes what nearly every event is: ASCII text, personal values in whole `data` fields,
/// in `context` and at `meta.ip`. Anything else — non-ASCII text (the decoder validates
/// UTF-8), a context key with `~` or `/` (escaped in its pointer), a record it cannot read — gives nil, and `leafOrDecode` decodes the event the
/// usual way, which checks everything and names a corrupt record `tampered`. Tests compare
/// both paths on every kind of event.
struct StoredLeaf {
    private var out: [UInt8] = []
    /// Personal `data` fields of the event: field order, field tag, digest bytes.
    private var personal: [(order: UInt8, field: Field, digest: Range<Int>)] = []
    /// A member of a string map: a stored pair, or a personal value's commitment at its key.
    private struct Member {
        var key: Range<Int>
        var value: Range<Int>
        var commitment: Bool
    }
    private var pairs: [Member] = []
    /// Commitments of personal values in `context` and at `meta.ip`.
    private var contextCommitments: [Member] = []
    private var metaCommitments: [Member] = []

    init() {
        out.reserveCapacity(1024)
        personal.reserveCapacity(4)
        pairs.reserveCapacity(16)
    }

    private static let metaIP = Array(PersonalData.metaIP.utf8)
    private static let contextPrefix = Array(PersonalData.contextPrefix.utf8)

    /// `/data/<name>` of each field, by tag.
    private static let pointers: [[UInt8]] = (0...255).map { raw in Field(rawValue: UInt8(raw)).map { Array(("/data/" + $0.name).utf8) } ?? [] }

    /// The leaf of the stored event at `seq`, decoding it only when the direct writer cannot.
    mutating func leafOrDecode(_ bytes: UnsafeRawBufferPointer, seq: UInt64) throws -> TreeFrontier.Node {
        if let leaf = leaf(bytes, seq: seq) { return leaf }
        let e = try EventCodec.decode(bytes, seq: seq)
        return TreeFrontier.Node(RecordedEvent.leaf(e.event, seq: seq, version: e.version))
    }

    /// The leaf written directly from `bytes`, or nil when the event needs the decoder.
    mutating func leaf(_ bytes: UnsafeRawBufferPointer, seq: UInt64) -> TreeFrontier.Node? {
        guard canonical(bytes, seq: seq) else { return nil }
        return out.withUnsafeBytes { TreeFrontier.Node.sha256($0) }
    }

    /// `0x00 ‖ C` of the stored event, for tests; nil when the event needs the decoder.
    mutating func leafInput(_ bytes: UnsafeRawBufferPointer, seq: UInt64) -> [UInt8]? {
        canonical(bytes, seq: seq) ? out : nil
    }

    private struct Unsupported: Error {}

    private mutating func canonical(_ b: UnsafeRawBufferPointer, seq: UInt64) -> Bool {
        do {
            try write(b, seq: seq)
            return true
        } catch {
            return false
        }
    }

    /// A stored string's byte range; ASCII only (other text goes through the decoder).
    private static func text(_ r: inout ByteReader) throws -> Range<Int> {
        let n = try r.length()
        let range = r.i..<(r.i + n)
        var high: UInt8 = 0
        for k in range { high |= r.base[k] }
        guard high < 0x80 else { throw Unsupported() }
        r.i += n
        return range
    }

    private static func time(_ r: inout ByteReader) throws -> Timestamp {
        let ms = try r.signed()
        guard ms >= Timestamp.min.milliseconds, ms <= Timestamp.max.milliseconds else { throw Unsupported() }
        return Timestamp(milliseconds: ms)
    }

    private mutating func write(_ b: UnsafeRawBufferPointer, seq: UInt64) throws {
        var r = ByteReader(b)
        let format = try r.u8()
        guard format == EventCodec.format || format == EventCodec.personalFormat,
              seq <= UInt64(Int64.max), let type = EventType(rawValue: try r.u8()) else { throw Unsupported() }
        try r.skip(64)
        let id = EventID(high: try r.bigEndianUInt64(), low: try r.bigEndianUInt64())
        let version = try r.varint()
        guard version >= 1, version <= UInt64(Int64.max) else { throw Unsupported() }
        let at = try Self.time(&r)
        let user = try Self.text(&r)
        let metaAt: Int? = try r.flag() ? r.i : nil
        if metaAt != nil { try skipMap(&r) }
        let dataAt = r.i
        let fields = try r.length()
        guard fields <= 64 else { throw Unsupported() }
        for _ in 0..<fields { try skipField(&r) }
        personal.removeAll(keepingCapacity: true)
        contextCommitments.removeAll(keepingCapacity: true)
        metaCommitments.removeAll(keepingCapacity: true)
        if format == EventCodec.personalFormat {
            let n = try r.count()
            guard n >= 1, n <= 64, !user.isEmpty else { throw Unsupported() }
            let candidates = PersonalData.personalFields(type)
            for _ in 0..<n {
                let pointer = try Self.text(&r), digest = try Self.text(&r)
                // A 43-character base64url digest (32 bytes).
                guard digest.count == 43 else { throw Unsupported() }
                let p = UnsafeRawBufferPointer(rebasing: b[pointer])
                if p.elementsEqual(Self.metaIP) {
                    guard metaAt != nil, metaCommitments.isEmpty else { throw Unsupported() }
                    metaCommitments.append(Member(key: (pointer.upperBound - 2)..<pointer.upperBound, value: digest, commitment: true))
                } else if type == .challengeIssued, p.starts(with: Self.contextPrefix) {
                    let key = (pointer.lowerBound + Self.contextPrefix.count)..<pointer.upperBound
                    guard !b[key].contains(UInt8(ascii: "~")) else { throw Unsupported() }
                    contextCommitments.append(Member(key: key, value: digest, commitment: true))
                } else {
                    // A whole `data` field.
                    guard let field = candidates.first(where: { Self.pointers[Int($0.rawValue)].elementsEqual(p) }),
                          !personal.contains(where: { $0.field == field }) else { throw Unsupported() }
                    personal.append((field.order, field, digest))
                }
            }
            personal.sort { $0.order < $1.order }
        }
        guard r.atEnd else { throw Unsupported() }

        out.removeAll(keepingCapacity: true)
        out.append(0)
        out.append(contentsOf: #"{"at":""#.utf8)
        at.writeFormatted(into: &out)
        out.append(contentsOf: #"","data":{"#.utf8)
        r.i = dataAt
        _ = try r.length()
        var first = true, next = 0
        func commitment(_ p: (order: UInt8, field: Field, digest: Range<Int>)) {
            if !first { out.append(44) }
            first = false
            out.append(contentsOf: CanonicalEvent.fieldKeys[Int(p.field.rawValue)])
            writeCommitment(b, p.digest)
        }
        var lastOrder: UInt8 = 0
        for _ in 0..<fields {
            guard let field = Field(rawValue: try r.u8()), field.order > lastOrder else { throw Unsupported() }
            lastOrder = field.order
            while next < personal.count, personal[next].order < field.order { commitment(personal[next]); next += 1 }
            // A personal field is not kept in the stored data.
            guard next == personal.count || personal[next].order != field.order else { throw Unsupported() }
            if !first { out.append(44) }
            first = false
            out.append(contentsOf: CanonicalEvent.fieldKeys[Int(field.rawValue)])
            switch field.kind {
            case .string, .id: writeString(b, try Self.text(&r))
            case .time: out.append(34); try Self.time(&r).writeFormatted(into: &out); out.append(34)
            case .int: CanonicalEvent.writeInt(try r.signed(), into: &out)
            case .bool: out.append(contentsOf: try r.flag() ? #"true"#.utf8 : #"false"#.utf8)
            case .map:
                if field == .context && !contextCommitments.isEmpty {
                    try writeMap(&r, with: contextCommitments)
                    contextCommitments.removeAll(keepingCapacity: true)
                } else {
                    try writeMap(&r)
                }
            }
        }
        while next < personal.count { commitment(personal[next]); next += 1 }
        // Context commitments without a context to hold them: the decoder names that.
        guard contextCommitments.isEmpty else { throw Unsupported() }
        out.append(contentsOf: #"},"id":""#.utf8)
        CanonicalEvent.writeUUID(id, into: &out)
        out.append(34)
        if let metaAt {
            out.append(contentsOf: #","meta":"#.utf8)
            r.i = metaAt
            try writeMap(&r, with: metaCommitments)
        }
        out.append(contentsOf: #","seq":"#.utf8)
        CanonicalEvent.writeUInt(seq, into: &out)
        out.append(contentsOf: #","type":"#.utf8)
        out.append(contentsOf: CanonicalEvent.typeValues[Int(type.rawValue)])
        if !user.isEmpty {
            out.append(contentsOf: #","user":"#.utf8)
            writeString(b, user)
        }
        out.append(contentsOf: #","version":"#.utf8)
        CanonicalEvent.writeUInt(version, into: &out)
        out.append(125)
    }

    private func skipField(_ r: inout ByteReader) throws {
        guard let field = Field(rawValue: try r.u8()) else { throw Unsupported() }
        switch field.kind {
        case .string, .id: _ = try Self.text(&r)
        case .time: _ = try Self.time(&r)
        case .int: _ = try r.signed()
        case .bool: _ = try r.flag()
        case .map: try skipMap(&r)
        }
    }

    private func skipMap(_ r: inout ByteReader) throws {
        let n = try r.length()
        guard n <= 1024 else { throw Unsupported() }
        for _ in 0..<n { _ = try Self.text(&r); _ = try Self.text(&r) }
    }

    /// A string map with `commitments` among its members, keys in byte order (which is
    /// UTF-16 order for ASCII keys, RFC 8785's order).
    private mutating func writeMap(_ r: inout ByteReader, with commitments: [Member] = []) throws {
        let n = try r.length()
        guard n <= 1024 else { throw Unsupported() }
        pairs.removeAll(keepingCapacity: true)
        for _ in 0..<n { pairs.append(Member(key: try Self.text(&r), value: try Self.text(&r), commitment: false)) }
        pairs += commitments
        let b = r.base
        if pairs.count > 1 {
            pairs.sort { b[$0.key].lexicographicallyPrecedes(b[$1.key]) }
            // Duplicate keys: the decoder's path decides how they are written.
            for k in 1..<pairs.count where b[pairs[k - 1].key].elementsEqual(b[pairs[k].key]) { throw Unsupported() }
        }
        out.append(123)
        for (k, p) in pairs.enumerated() {
            if k > 0 { out.append(44) }
            writeString(b, p.key)
            out.append(58)
            if p.commitment {
                writeCommitment(b, p.value)
            } else {
                writeString(b, p.value)
            }
        }
        out.append(125)
    }

    /// `{"_sd":"<digest>"}` (a base64url digest: nothing to escape).
    private mutating func writeCommitment(_ b: UnsafeRawBufferPointer, _ digest: Range<Int>) {
        out.append(contentsOf: #"{"_sd":""#.utf8)
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[digest]))
        out.append(contentsOf: #""}"#.utf8)
    }

    /// A JSON string of ASCII bytes, escaped as `JSON.writeString` escapes.
    private mutating func writeString(_ b: UnsafeRawBufferPointer, _ range: Range<Int>) {
        JSON.writeString(utf8: UnsafeRawBufferPointer(rebasing: b[range]), into: &out)
    }
}
