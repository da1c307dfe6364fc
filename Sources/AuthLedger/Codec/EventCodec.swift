import AuthLedgerCore

/// The storage encoding of recorded events. Versioned by its first byte so the
/// format can evolve; canonical JSON is produced only for hashing and export.
package enum EventCodec {
    static let format: UInt8 = 1

    /// Format 2: an event with personal values. Its bytes hold the event without them
    /// and, after the data, each value's pointer and commitment digest; the values and
    /// salts live in the values store (`PersonalCodec`), so erasing them leaves these bytes.
    static let personalFormat: UInt8 = 2

    /// The bytes the store keeps for `r`: personal values are left out (they are stored apart), so erasing them leaves these bytes unchanged.
    package static func encode(_ r: RecordedEvent) -> [UInt8] {
        var bytes: [UInt8] = []
        encode(r, into: &bytes)
        return bytes
    }

    /// `encode`, into `out` (emptied first; a buffer the caller reuses: no array per event).
    package static func encode(_ r: RecordedEvent, into out: inout [UInt8]) {
        var w = ByteWriter(reusing: &out)
        let e = r.event.personal == nil ? r.event : PersonalData.withoutValues(r.event)
        w.u8(e.personal == nil ? format : personalFormat)
        w.u8(e.type.rawValue)
        w.raw(r.prev.bytes)
        w.raw(r.hash.bytes)
        w.raw(e.id!.bytes)
        w.varint(r.version)
        w.time(e.at)
        w.string(e.user ?? "")
        if let meta = e.meta { w.u8(1); w.map(meta) } else { w.u8(0) }
        w.varint(UInt64(e.data.entries.count))
        for (field, value) in e.data.entries {
            w.u8(field.rawValue)
            switch value {
            case let .string(s): w.string(s)
            case let .time(t): w.time(t)
            case let .int(v): w.signed(v)
            case let .bool(b): w.u8(b ? 1 : 0)
            case let .map(m): w.map(m)
            }
        }
        if let p = e.personal {
            w.varint(UInt64(p.entries.count))
            for entry in p.entries { w.string(entry.pointer); w.string(entry.digest) }
        }
        swap(&out, &w.bytes)
    }

    /// Decodes a stored event; throws `tampered` when the bytes are not a valid encoding.
    package static func decode(_ bytes: UnsafeRawBufferPointer, seq: UInt64) throws(LedgerError) -> RecordedEvent {
        do {
            var r = ByteReader(bytes)
            let f = try r.u8()
            guard seq <= UInt64(Int64.max), f == format || f == personalFormat, let type = EventType(rawValue: try r.u8()) else { throw ByteReader.Corrupt() }
            let prev = Hash32(bytes: try r.raw(32))
            let hash = Hash32(bytes: try r.raw(32))
            let (event, version) = try body(&r, type: type, personal: f == personalFormat)
            return RecordedEvent(event: event, seq: seq, version: version, prev: prev, hash: hash)
        } catch {
            throw LedgerError(.tampered, "stored event is not decodable", seq: seq)
        }
    }

    /// A hash of the stream key of a stored event, read without decoding it: 0 for
    /// the `$system` stream (empty user), never 0 otherwise; nil when malformed.
    static func streamHash(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        var r = ByteReader(bytes)
        guard let f = try? r.u8(), f == format || f == personalFormat, (try? r.skip(1 + 64 + 16)) != nil,
              (try? r.varint()) != nil, (try? r.varint()) != nil, let n = try? r.count(), r.i + n <= bytes.count
        else { return nil }
        if n == 0 { return 0 }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for k in r.i..<(r.i + n) { h = (h ^ UInt64(bytes[k])) &* 0x100_0000_01b3 }
        return h | 1 << 63
    }

    /// The user of a stored event read without decoding it: "" for the `$system` stream,
    /// nil when malformed.
    static func user(_ bytes: UnsafeRawBufferPointer) -> String? {
        var r = ByteReader(bytes)
        guard let f = try? r.u8(), f == format || f == personalFormat, (try? r.skip(1 + 64 + 16)) != nil,
              (try? r.varint()) != nil, (try? r.varint()) != nil, let user = try? r.string()
        else { return nil }
        return user
    }

    /// Decodes the event and its stream version only, skipping the chain (replay
    /// needs neither `prev` nor `hash`: two allocations fewer per event).
    static func decodeEvent(_ bytes: UnsafeRawBufferPointer, seq: UInt64) throws(LedgerError) -> (event: Event, version: UInt64) {
        do {
            var r = ByteReader(bytes)
            let f = try r.u8()
            guard f == format || f == personalFormat, let type = EventType(rawValue: try r.u8()) else { throw ByteReader.Corrupt() }
            try r.skip(64)
            return try body(&r, type: type, personal: f == personalFormat)
        } catch {
            throw LedgerError(.tampered, "stored event is not decodable", seq: seq)
        }
    }

    private static func body(_ r: inout ByteReader, type: EventType, personal: Bool) throws -> (Event, UInt64) {
        let id = EventID(high: try r.bigEndianUInt64(), low: try r.bigEndianUInt64())
        // Positions are written as JSON integers (Int64) when hashed and exported.
        let version = try r.varint()
        guard version >= 1, version <= UInt64(Int64.max) else { throw ByteReader.Corrupt() }
        let at = try r.time()
        let user = try r.string()
        let meta: StringMap? = try r.flag() ? try r.map() : nil
        let n = try r.length()
        guard n <= 64 else { throw ByteReader.Corrupt() }
        var data = EventData()
        data.reserve(n)
        for _ in 0..<n {
            guard let field = Field(rawValue: try r.u8()) else { throw ByteReader.Corrupt() }
            let value: FieldValue
            switch field.kind {
            case .string, .id: value = .string(try r.string())
            case .time: value = .time(try r.time())
            case .int: value = .int(try r.signed())
            case .bool: value = .bool(try r.flag())
            case .map: value = .map(try r.map())
            }
            data.appendInOrder(field, value)
        }
        var values: PersonalValues?
        if personal {
            let n = try r.count()
            guard n >= 1, n <= 64 else { throw ByteReader.Corrupt() }
            var entries: [PersonalEntry] = []
            entries.reserveCapacity(n)
            for _ in 0..<n {
                let pointer = try r.string(), digest = try r.string()
                guard PersonalData.isPersonalPointer(pointer, type: type), PersonalData.isDigest(digest) else { throw ByteReader.Corrupt() }
                entries.append(PersonalEntry(pointer: pointer, digest: digest, salt: nil))
            }
            values = PersonalValues(entries)
        }
        let event = Event(id: id, type: type, user: user.isEmpty ? nil : user, at: at, data: data, meta: meta, personal: values)
        // The stored bytes of an event with commitments hold none of its values, and each
        // commitment has a place to go (a context, a meta object).
        if personal {
            guard !PersonalData.hasClearValues(event), !user.isEmpty else { throw ByteReader.Corrupt() }
            let entries = values!.entries
            for (k, entry) in entries.enumerated() {
                // No pointer twice (a few entries: compared pairwise, no set built per event).
                for other in entries[(k + 1)...] where other.pointer == entry.pointer { throw ByteReader.Corrupt() }
                if entry.pointer.hasPrefix(PersonalData.contextPrefix) { guard data[.context] != nil else { throw ByteReader.Corrupt() } }
                if entry.pointer == PersonalData.metaIP { guard meta != nil else { throw ByteReader.Corrupt() } }
            }
        }
        guard r.atEnd else { throw ByteReader.Corrupt() }
        return (event, version)
    }
}
