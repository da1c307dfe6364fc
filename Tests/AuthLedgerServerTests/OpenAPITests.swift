import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
@testable import AuthLedgerServer
import Foundation
import Testing

@Suite struct OpenAPITests {
    /// `openapi.yaml` at the repository root documents exactly the router's routes.
    @Test func theDocumentNamesEveryRouteAndNoOther() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        #expect(text.hasPrefix("openapi: 3.1"))
        // Paths are the keys indented two spaces under `paths:`, operations four.
        var documented = Set<String>()
        var inPaths = false
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" ") && !line.isEmpty { inPaths = line == "paths:" }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "), let colon = line.firstIndex(of: ":") {
                let key = line[line.index(line.startIndex, offsetBy: 4)..<colon]
                if ["get", "put", "post", "patch", "delete", "head", "options"].contains(key) {
                    documented.insert("\(key.uppercased()) \(path)")
                }
            }
        }
        let dir = TemporaryDirectory.path("authledger-openapi")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var config = ServerConfiguration()
        config.insecureDev = true
        let server = try LedgerServer(ledger: try await Ledger(lmdb: dir), configuration: config)
        let routed = Set(server.endpoints.map(\.description))
        #expect(routed.count == server.endpoints.count, "a route is registered twice")
        #expect(documented.subtracting(routed).sorted() == [], "documented but not routed")
        #expect(routed.subtracting(documented).sorted() == [], "routed but not documented")
        #expect(routed.contains("GET /v1/events"))
    }
}
