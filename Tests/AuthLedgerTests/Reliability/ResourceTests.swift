import Foundation
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Testing

/// A closed ledger gives back its LMDB environment: file descriptors and memory map.
/// (A retain cycle through the writer thread once kept every environment open until exit.)
@Suite struct ResourceTests {
    /// Lines of /proc/self/maps that map the store's data.mdb.
    static func mappings(of store: String) -> Int {
        let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
        return maps.split(separator: "\n").filter { $0.hasSuffix(store + "/data.mdb") }.count
    }

    // LMDB only: it counts memory mappings of data.mdb.
    @Test func ledgersOpenedAndDroppedDoNotKeepTheirEnvironmentOpen() async throws {
        // Given a store opened and dropped 50 times, with an append through the writer thread each time
        let store = try Rig.tempDir("res") + "/store"
        for i in 0..<50 {
            let ledger = try await Ledger(lmdb: store)
            _ = try await ledger.perform(.setPolicy(PolicySet(coolingSeconds: Int64(i))))
        }
        // Then, once the writer threads have wound down, no mapping of its data.mdb is left
        var left = Self.mappings(of: store)
        for _ in 0..<500 where left > 0 {
            try await Task.sleep(nanoseconds: 10_000_000)
            left = Self.mappings(of: store)
        }
        #expect(left == 0, "\(left) environments of the store are still mapped")
        #expect(try await Ledger(lmdb: store).head().seq == 50)
    }
}
