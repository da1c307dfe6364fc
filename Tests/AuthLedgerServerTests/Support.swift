@_spi(Storage) import AuthLedger
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
