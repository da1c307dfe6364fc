@testable import AuthLedger
@testable import AuthLedgerServer
import Foundation
import AuthLedgerTestSupport
import AuthLedgerPostgres
import Testing

/// `DELETE /v1/users/{u}` (SPEC 5, 1.5): erasure over HTTP, with the server running on.
@Suite(.timeLimit(.minutes(2))) struct ErasureRouteTests {
    static let values = ["Marguerite Phone", "fcm-token-4242-secret", "203.0.113.9", "Brest, FR"]

    /// How many rows of the PostgreSQL store's tables hold `value`, in clear text or inside a
    /// binary column (which a row's text shows in hex).
    static func rowsHolding(_ value: String, store: String) async throws -> Int64 {
        let db = try await PostgresStorage(url: store)
        let hex = Array(value.utf8).map { String(format: "%02x", $0) }.joined()
        let count = """
            SELECT coalesce(sum((xpath('/row/c/text()', query_to_xml(format(
              'SELECT count(*) AS c FROM %I.%I t WHERE strpos(t::text, %L) > 0 OR strpos(t::text, %L) > 0',
              table_schema, table_name, '\(value)', '\(hex)'), false, true, '')))[1]::text::bigint), 0)::bigint
            FROM information_schema.tables WHERE table_schema = '\(db.location.schema)'
            """
        return try await db.integers(count).first ?? 0
    }

    @Test(arguments: StorageKind.all) func anAdminErasesAUserAndTheServerGoesOn(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            // Given a user with personal values, and one who keeps hers
            var r = try await s.call(.POST, "/v1/users/alice/devices",
                                     body: #"{"deviceId":"phone","name":"Marguerite Phone","kind":"mobile","pushToken":"fcm-token-4242-secret"}"#)
            #expect(r.status == 201)
            r = try await s.call(.POST, "/v1/users/alice/challenges",
                                 body: #"{"requestingDeviceId":"laptop","action":"login","context":{"ip":"203.0.113.9","location":"Brest, FR"}}"#)
            #expect(r.status == 201)
            r = try await s.call(.POST, "/v1/users/bob/devices", body: #"{"deviceId":"pixel","name":"Bob Pixel","kind":"mobile"}"#)
            #expect(r.status == 201)
            let export0 = try await s.call(.GET, "/v1/export", token: "auditor-token").body
            for v in Self.values { #expect(export0.contains(v)) }
            #expect(export0.contains("\"disclosures\""))
            if storage == .postgres { await #expect(try Self.rowsHolding(Self.values[0], store: s.place.store) > 0, "the probe sees a stored value") }

            // Only admin erases; an unknown user is 404
            #expect(try await s.call(.DELETE, "/v1/users/alice", token: "writer-token").status == 403)
            r = try await s.call(.DELETE, "/v1/users/nobody")
            #expect(r.status == 404 && r.error == "user_not_found")

            // When alice is erased
            r = try await s.call(.DELETE, "/v1/users/alice", body: #"{"reason":"GDPR art. 17","actor":"admin:dpo"}"#)
            #expect(r.status == 200, "\(r.body)")
            #expect(r["erased"] == .bool(true) && r["erasedEvents"] == .int(2))
            #expect(r["events"]?.arrayValue?.first?["type"] == .string("user.erased"))

            // Then answers show null and erased, the export commitments, and verify passes
            r = try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token")
            #expect(r["erased"] == .bool(true))
            #expect(r["devices"]?.arrayValue?.first?["name"] == .null)
            r = try await s.call(.GET, "/v1/users/alice/pending", token: "reader-token")
            #expect(r.json?.arrayValue?.first?["context"] == .object([("ip", .null), ("location", .null)]))
            let export1 = try await s.call(.GET, "/v1/export", token: "auditor-token").body
            for v in Self.values { #expect(!export1.contains(v), "\(v) in the export") }
            #expect(export1.contains("\"_sd\""))
            #expect(export1.contains("Bob Pixel"))
            #expect(try await s.call(.GET, "/v1/verify", token: "auditor-token").status == 200)
            let hashes = { (text: String) in text.split(separator: "\n").prefix(3).map { try? JSON.parse(Array($0.utf8))["hash"] } }
            #expect(hashes(export0) == hashes(export1))

            // And no file of the store holds an erased value (the LMDB store's files; the key
            // directory beside a PostgreSQL store)
            let fm = FileManager.default
            for name in try fm.contentsOfDirectory(atPath: s.dir) {
                guard let data = fm.contents(atPath: s.dir + "/" + name) else { continue }
                for v in Self.values { #expect(data.range(of: Data(v.utf8)) == nil, "\(v) in \(name)") }
            }
            // And no row of a PostgreSQL store does
            if storage == .postgres {
                for v in Self.values { await #expect(try Self.rowsHolding(v, store: s.place.store) == 0, "\(v) in a row of the database") }
            }

            // And the server, on the compacted store, goes on appending and answering
            r = try await s.call(.POST, "/v1/users/alice/devices",
                                 body: #"{"deviceId":"tablet","name":"New Tablet","kind":"tablet","via":"admin"}"#)
            #expect(r.status == 201, "\(r.body)")
            r = try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token")
            #expect(r["devices"]?.arrayValue?.map { $0["name"] } == [.null, .string("New Tablet")])
        }
    }
}
