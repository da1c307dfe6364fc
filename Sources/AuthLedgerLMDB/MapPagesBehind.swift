import AuthLedgerCore
import CLMDB
import Crypto
import Foundation
import LMDB

/// Lets go of the memory-map pages a full scan has read. The log is mapped
/// read-only and shared with the page cache: dropping the mapping of pages behind
/// the cursor costs nothing but a page-cache hit if they are read again, and keeps a
/// scan of the whole log (replay, verify, export) from pinning all of it in the
/// process's resident set (a million events are ~300 MB of map).
///
/// Only pages inside the store's map are let go: a value read in a write transaction may
/// sit in a dirty page LMDB allocated on the heap, and `MADV_DONTNEED` there would zero
/// process memory. The map's ranges are looked up once per scan, at the first release.
struct MapPagesBehind {
    private let environment: Environment
    private var regions: [Range<UInt>]?
    private var low = UInt(bitPattern: -1), high: UInt = 0, count = 0
    private static let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
    private static let every = 16_384

    init(_ environment: Environment) { self.environment = environment }

    mutating func passed(_ value: UnsafeRawBufferPointer) {
        guard let base = value.baseAddress else { return }
        let p = UInt(bitPattern: base)
        low = min(low, p)
        high = max(high, p)
        count += 1
        if count == MapPagesBehind.every { release() }
    }

    private mutating func release() {
        // Whole pages only, and never the one the cursor is on.
        let from = (low + MapPagesBehind.page - 1) & ~(MapPagesBehind.page - 1)
        let to = high & ~(MapPagesBehind.page - 1)
        if regions == nil { regions = environment.mappedRegions() }
        let inMap = regions!.contains { $0.contains(low) && $0.contains(high) }
        if inMap, to > from, let start = UnsafeMutableRawPointer(bitPattern: from) {
            _ = madvise(start, Int(to - from), MADV_DONTNEED)
        }
        low = UInt(bitPattern: -1)
        high = 0
        count = 0
    }
}
