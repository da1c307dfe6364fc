import AsyncHTTPClient
import AuthLedger
import AuthLedgerLMDB
@testable import AuthLedgerServer
import Crypto
import Foundation
import AuthLedgerTestSupport
import Testing

/// The auditor console's routes: `/checkpoint/vkey` (audit scope) is the key that checks
/// `/checkpoint`, and `/console` serves the page and its modules with a strict CSP and no
/// inline script; nothing else is served from there.
@Suite(.timeLimit(.minutes(2))) struct ConsoleRouteTests {
    /// The Ed25519 public key of a verifier key `<name>+<hex id>+<base64(0x01 ‖ key)>`, its id checked.
    static func publicKey(_ vkey: String) throws -> (name: String, key: Curve25519.Signing.PublicKey) {
        let parts = vkey.split(separator: "+", maxSplits: 2).map(String.init)
        try #require(parts.count == 3)
        let encoded = Array(try #require(Data(base64Encoded: parts[2])))
        try #require(encoded.count == 33 && encoded[0] == 1)
        let id = Array(SHA256.hash(data: Array(parts[0].utf8) + [10] + encoded)).prefix(4)
        #expect(id.map { String(format: "%02x", $0) }.joined() == parts[1])
        return (parts[0], try Curve25519.Signing.PublicKey(rawRepresentation: encoded[1...]))
    }

    /// Whether the note's signature line by `name` verifies under `key`.
    static func signed(_ note: String, by name: String, _ key: Curve25519.Signing.PublicKey) throws -> Bool {
        let cut = try #require(note.range(of: "\n\n"))
        let body = Array(note[..<cut.lowerBound].utf8) + [10]
        let line = try #require(note[cut.upperBound...].split(separator: "\n").first { $0.hasPrefix("\u{2014} \(name) ") })
        let raw = Array(try #require(Data(base64Encoded: String(line.split(separator: " ")[2]))))
        return key.isValidSignature(raw[4...], for: body)
    }

    @Test func theVerifierKeyChecksTheCheckpointAndNeedsTheAuditScope() async throws {
        try await withServer(configure: { $0.checkpointOrigin = "console.example/log" }) { s in
            _ = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"phone","name":"Alice Phone","kind":"mobile"}"#)
            let r = try await s.call(.GET, "/checkpoint/vkey", token: "auditor-token")
            #expect(r.status == 200 && r.headers.first(name: "Content-Type")?.hasPrefix("text/plain") == true)
            #expect(r.body.hasPrefix("console.example/log+") && r.body.hasSuffix("\n") && r.body.filter { $0 == "\n" }.count == 1)
            let (name, key) = try Self.publicKey(String(r.body.dropLast()))
            let note = try await s.call(.GET, "/checkpoint", token: "auditor-token").body
            #expect(try Self.signed(note, by: name, key))
            // Another key does not check it
            let other = Curve25519.Signing.PrivateKey().publicKey
            #expect(try !Self.signed(note, by: name, other))
            #expect(try await s.call(.GET, "/checkpoint/vkey", token: "reader-token").status == 403)
            #expect(try await s.call(.GET, "/checkpoint/vkey", token: nil).status == 401)
        }
    }

    @Test func theConsoleIsServedWithAStrictPolicyAndNoInlineScript() async throws {
        try await withServer { s in
            let page = try await s.call(.GET, "/console", token: nil)
            #expect(page.status == 200 && page.headers.first(name: "Content-Type") == "text/html; charset=utf-8")
            let csp = try #require(page.headers.first(name: "Content-Security-Policy"))
            for directive in ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "object-src 'none'"] {
                #expect(csp.contains(directive), "\(csp)")
            }
            #expect(!csp.contains("unsafe"))
            // Every script is an external module of this origin; no inline handler attribute
            let scripts = page.body.components(separatedBy: "<script").dropFirst()
            #expect(scripts.count == 1)
            for tag in scripts { #expect(tag.hasPrefix(#" type="module" src="/console/"#) && tag.contains("></script>")) }
            #expect(page.body.range(of: #"\son[a-z]+\s*="#, options: .regularExpression) == nil)
            for label in ["Token", "User", "Verifier key", "As of", "From", "Type", "From time", "To time"] {
                #expect(page.body.contains(">\(label)</label>"), "\(label)")
            }
            // Its modules and style sheet, with the same policy
            for (asset, type) in [("app.js", "text/javascript; charset=utf-8"), ("leaf.js", "text/javascript; charset=utf-8"),
                                  ("console.css", "text/css; charset=utf-8")] {
                let r = try await s.call(.GET, "/console/\(asset)", token: nil)
                #expect(r.status == 200 && r.headers.first(name: "Content-Type") == type, "\(asset)")
                #expect(r.headers.first(name: "Content-Security-Policy") == csp)
                #expect(r.headers.first(name: "X-Content-Type-Options") == "nosniff")
            }
            // Nothing else: not the package file beside them, not a path out of the folder
            for path in ["/console/package.json", "/console/nope.js", "/console/..%2FConsoleRoutes.swift", "/console/%2e%2e", "/console/app.js/x"] {
                #expect(try await s.call(.GET, path, token: nil).status == 404, "\(path)")
            }
        }
    }
}
