import AuthLedgerCore
/// The storage encoding of one event's disclosed personal values (the values store,
/// apart from the event's hashed bytes): for each value its pointer, salt and value.
enum PersonalCodec {
    static let format: UInt8 = 1

    /// The record of a sealed event's clear values; nil when it has none.
    static func encode(_ e: Event) -> [UInt8]? {
        guard let p = e.personal else { return nil }
        let clear = PersonalData.clearValues(e)
        guard !clear.isEmpty else { return nil }
        var w = ByteWriter(capacity: 96)
        w.u8(format)
        w.varint(UInt64(clear.count))
        for (pointer, value) in clear {
            w.string(pointer)
            w.string(p.entry(pointer)?.salt ?? "")
            w.string(value)
        }
        return w.bytes
    }

    /// Puts the values of a record back into `e` (as decoded from the log: without
    /// values). With `check`, each value's commitment must be the digest in the log.
    static func disclose(_ bytes: UnsafeRawBufferPointer, into e: inout Event, seq: UInt64, check: Bool = false) throws(LedgerError) {
        do {
            var r = ByteReader(bytes)
            guard try r.u8() == format, var p = e.personal else { throw ByteReader.Corrupt() }
            let n = try r.count()
            for _ in 0..<n {
                let pointer = try r.string(), salt = try r.string(), value = try r.string()
                guard let k = p.entries.firstIndex(where: { $0.pointer == pointer }), p.entries[k].salt == nil,
                      PersonalData.insert(value, at: pointer, into: &e) else { throw ByteReader.Corrupt() }
                if check && PersonalData.digest(salt: salt, value: value) != p.entries[k].digest {
                    throw LedgerError(.tampered, "a personal value does not match its commitment", seq: seq)
                }
                p.entries[k].salt = salt
            }
            guard r.atEnd else { throw ByteReader.Corrupt() }
            e.personal = p
        } catch let error as LedgerError {
            throw error
        } catch {
            throw LedgerError(.tampered, "stored personal values are not decodable", seq: seq)
        }
    }
}

extension StorageReader {
    /// The recorded event at `seq` from its stored bytes, with its personal values read
    /// back from the values store (absent there: erased).
    func recordedEvent(_ seq: UInt64, _ bytes: UnsafeRawBufferPointer, check: Bool = false) throws -> RecordedEvent {
        var r = try EventCodec.decode(bytes, seq: seq)
        if r.event.personal != nil { try disclose(&r.event, seq: seq, check: check) }
        return r
    }

    /// The event and version at `seq` (no chain), with its personal values.
    func storedEvent(_ seq: UInt64, _ bytes: UnsafeRawBufferPointer) throws -> (event: Event, version: UInt64) {
        var (e, v) = try EventCodec.decodeEvent(bytes, seq: seq)
        if e.personal != nil { try disclose(&e, seq: seq) }
        return (e, v)
    }

    /// The recorded event at `seq`; `tampered` when an index points at nothing.
    func recordedEvent(at seq: UInt64) throws -> RecordedEvent {
        try withEventBytes(seq) { b in
            guard let b else { throw LedgerError(.tampered, "index points at a missing event", seq: seq) }
            return try recordedEvent(seq, b)
        }
    }

    func disclose(_ e: inout Event, seq: UInt64, check: Bool = false) throws {
        guard let user = e.user, let record = try personalValues(user: user, seq: seq) else { return }
        try record.withUnsafeBytes { b in try PersonalCodec.disclose(b, into: &e, seq: seq, check: check) }
    }
}
