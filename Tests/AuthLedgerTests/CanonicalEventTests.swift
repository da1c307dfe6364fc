import Crypto
import Testing
@testable import AuthLedger
@testable import AuthLedgerCore

/// The direct canonical writer must give exactly the bytes of the generic JCS path,
/// or every hash in the chain changes.
@Suite struct CanonicalEventTests {
    @Test func dataFieldTagsAreInCanonicalKeyOrder() {
        let names = Field.allCases.sorted { $0.order < $1.order }.map(\.name)
        // The first 31 fields keep their relative order (their tag order): stored and hashed data unchanged.
        let first = Field.allCases.filter { $0.rawValue <= 31 }
        #expect(zip(first, first.dropFirst()).allSatisfy { $0.order < $1.order })
        #expect(names == names.sorted { JSON.utf16Less($0, $1) })
    }

    static func events() -> [(Event, UInt64, UInt64)] {
        var out: [(Event, UInt64, UInt64)] = []
        let id = EventID("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0ff")!
        let times = [Timestamp(milliseconds: 0), Timestamp(rfc3339: "2026-03-01T09:00:00.123Z")!, .min, .max,
                     Timestamp(milliseconds: -1), Timestamp(rfc3339: "0999-12-31T23:59:59.009Z")!]
        let strings = ["Alice's iPhone", "quote \" back\\slash", "tab\tnew\nline\u{1}\u{1f}", "ünïcødé ✓ 𝄞", "", "e\u{301}"]
        for (k, type) in EventType.allCases.enumerated() {
            var d = EventData()
            for (j, (field, _)) in type.schema.enumerated() {
                let s = strings[(k + j) % strings.count]
                switch field.kind {
                case .string, .id: d[field] = .string(s)
                case .time: d[field] = .time(times[(k + j) % times.count])
                case .int: d[field] = .int([0, 5, -3, Int64.max, Int64.min, 300][(k + j) % 6])
                case .bool: d[field] = .bool((k + j) % 2 == 0)
                case .map: d[field] = .map(StringMap([("ip", s), ("bindingMessage", "Pay"), ("Zeta", "z"), ("äpp", "x"), ("app", "y")]))
                }
            }
            let meta: StringMap? = k % 3 == 0 ? nil : StringMap([("requestId", "r"), ("actor", strings[k % strings.count]), ("𝄞", "clef"), ("\u{ff}", "y")])
            let user: String? = type == .policySet ? nil : strings[k % strings.count] + "-user"
            out.append((Event(id: id, type: type, user: user, at: times[k % times.count], data: d, meta: meta),
                        [1, 9, 10, 99, 12_345_678_901, UInt64(Int64.max)][k % 6], UInt64(k * 7 + 1)))
        }
        return out
    }

    @Test func directBytesEqualTheGenericJCSBytes() {
        for (e, seq, version) in CanonicalEventTests.events() {
            var direct: [UInt8] = []
            CanonicalEvent.write(e, seq: seq, version: version, into: &direct)
            let generic = JSON.object(RecordedEvent.contentMembers(e, seq: seq, version: version)).canonicalBytes()
            #expect(String(decoding: direct, as: UTF8.self) == String(decoding: generic, as: UTF8.self))
            #expect(Array(RecordedEvent.leaf(e, seq: seq, version: version)) == RecordedEvent.referenceLeaf(e, seq: seq, version: version))
        }
    }

    /// Events with personal values: sealed (values present), as stored (values left out, no
    /// salts), and erased in part — the direct writer places every commitment where the JSON
    /// tree does.
    @Test func directBytesEqualTheGenericJCSBytesWithPersonalValues() throws {
        var checked = 0
        for (e, seq, version) in CanonicalEventTests.events() {
            var sealed = e
            try PersonalData.seal(&sealed, disclosures: nil)
            guard let personal = sealed.personal else { continue }
            var stored = PersonalData.withoutValues(sealed)
            stored.personal = PersonalValues(personal.entries.map { PersonalEntry(pointer: $0.pointer, digest: $0.digest, salt: nil) })
            var partly = stored
            if let first = personal.entries.first, personal.entries.count > 1 {
                // One value read back (disclosed), the others not.
                let value = PersonalData.clearValues(sealed).first { $0.pointer == first.pointer }!.value
                #expect(PersonalData.insert(value, at: first.pointer, into: &partly))
                partly.personal!.entries[0].salt = first.salt
            }
            for form in [sealed, stored, partly] {
                var direct: [UInt8] = []
                CanonicalEvent.write(form, seq: seq, version: version, into: &direct)
                let generic = JSON.object(RecordedEvent.contentMembers(form, seq: seq, version: version)).canonicalBytes()
                #expect(String(decoding: direct, as: UTF8.self) == String(decoding: generic, as: UTF8.self), "\(form.type.name)")
            }
            // Hashing the stored form gives the sealed event's leaf: the values are not needed.
            #expect(RecordedEvent.leaf(stored, seq: seq, version: version) == RecordedEvent.leaf(sealed, seq: seq, version: version))
            checked += 1
        }
        #expect(checked >= 5)
    }

    @Test func timestampsFormatTheSameWritten() {
        for ms in [Int64(0), -1, 1, 999, 86_399_999, -86_400_001, Timestamp.min.milliseconds, Timestamp.max.milliseconds, 1_772_355_600_123] {
            var b: [UInt8] = []
            Timestamp(milliseconds: ms).writeFormatted(into: &b)
            #expect(String(decoding: b, as: UTF8.self) == Timestamp(milliseconds: ms).formatted)
        }
    }
}
