import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// The store's pages as the process maps them. LMDB maps `data.mdb` read-only and
/// shared with the page cache, and reads every page through that map: a page once
/// read stays in the process's resident set (as file-backed memory) until it is let
/// go, so appending a million events or scanning them would pin the whole file. Letting
/// go (`MADV_DONTNEED` on a shared read-only file mapping) costs nothing but a minor
/// fault if the page is read again; the page cache keeps it, and its content cannot
/// differ (committed pages are only replaced through the file, which the map shows).
extension Environment {
    /// The address ranges where this environment's `data.mdb` is mapped (from
    /// `/proc/self/maps`; LMDB does not expose its map address without `MDB_FIXEDMAP`).
    public func mappedRegions() -> [Range<UInt>] { Environment.mappedRegions(of: path) }

    /// Where the `data.mdb` of the environment directory `path` is mapped in this process
    /// (any environment of it, this module's or one opened with the C API).
    public static func mappedRegions(of path: String) -> [Range<UInt>] {
        guard let f = fopen("/proc/self/maps", "r") else { return [] }
        defer { fclose(f) }
        let file = path.hasSuffix("/") ? path + "data.mdb" : path + "/data.mdb"
        var out: [Range<UInt>] = []
        var line = [CChar](repeating: 0, count: 4096)
        while fgets(&line, Int32(line.count), f) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard text.hasSuffix(file + "\n") || text.hasSuffix(file) else { continue }
            let range = text.prefix { $0 != " " }.split(separator: "-")
            guard range.count == 2, let lo = UInt(range[0], radix: 16), let hi = UInt(range[1], radix: 16), lo < hi else { continue }
            out.append(lo..<hi)
        }
        return out
    }

    /// Lets go of every page of the map this process holds (see the type's note).
    /// Map resizes wait meanwhile (the map is not replaced under the call).
    public func releaseMappedPages() {
        gate.enterShared(writeTransaction: false)
        defer { gate.leaveShared(writeTransaction: false) }
        releaseMappedPagesHoldingGate()
    }

    /// `releaseMappedPages` by a caller that holds the resize gate already.
    func releaseMappedPagesHoldingGate() { Environment.release(mappedRegions()) }

    /// `MADV_DONTNEED` on `regions` (ranges of a read-only shared file map: see the type's note).
    public static func release(_ regions: [Range<UInt>]) {
        for r in regions {
            if let p = UnsafeMutableRawPointer(bitPattern: r.lowerBound) { _ = madvise(p, Int(r.upperBound - r.lowerBound), MADV_DONTNEED) }
        }
    }
}

extension Environment {
    /// The bytes of the file in use: pages up to the last one written.
    public var usedSize: Int {
        gate.enterShared(writeTransaction: false)
        defer { gate.leaveShared(writeTransaction: false) }
        var info = MDB_envinfo()
        var stat = MDB_stat()
        mdb_env_info(env, &info)
        mdb_env_stat(env, &stat)
        return (info.me_last_pgno + 1) * Int(stat.ms_psize)
    }
}
