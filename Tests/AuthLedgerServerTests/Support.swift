import AuthLedger
import AuthLedgerServer
import AuthLedgerTestSupport
import Foundation

/// Starts a server on a fresh store of `storage`, runs `body`, and always stops it and removes its store.
func withServer(_ storage: StorageKind = .lmdb, clock: TestClock = TestClock(), configure: (inout ServerConfiguration) -> Void = { _ in },
                _ body: (TestServer) async throws -> Void) async throws {
    let s = try await TestServer.start(storage, clock: clock, configure: configure)
    do {
        try await body(s)
    } catch {
        try? await s.stop()
        s.removeStore()
        throw error
    }
    try await s.stop()
    s.removeStore()
}

extension Data {
    /// Decodes base64url without padding (JWS parts, JWK members).
    init?(base64urlText s: String) {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t += "=" }
        self.init(base64Encoded: t)
    }
}
