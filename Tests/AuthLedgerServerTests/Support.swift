@_spi(Storage) import AuthLedger
import AuthLedgerServer
import Foundation

/// Starts a server, runs `body`, and always stops it and removes its store.
func withServer(clock: TestClock = TestClock(), configure: (inout ServerConfiguration) -> Void = { _ in },
                _ body: (TestServer) async throws -> Void) async throws {
    let s = try await TestServer.start(clock: clock, configure: configure)
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
