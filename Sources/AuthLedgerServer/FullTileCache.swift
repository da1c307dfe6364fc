import NIOCore
import Synchronization

/// Full hash tiles (`/tile/<L>/<N>`, 256 hashes), kept in memory once served: a full hash
/// tile never changes — not with appends, nor with erasure, which keeps every hash — so a
/// cached one is never stale. Partial tiles and entry bundles (whose personal values an
/// erasure replaces) are always read from the store.
///
/// Bounded: at most `capacity` tiles (8 KiB each; 1,024 by default, 8 MiB); when full,
/// an arbitrary tile makes room. Auditors mostly fetch the newest tiles and the few
/// upper-level ones every proof crosses, which stay hot.
final class FullTileCache: Sendable {
    struct Key: Hashable {
        let level: Int
        let index: UInt64
    }

    let capacity: Int
    private let tiles = Mutex<[Key: ByteBuffer]>([:])

    init(capacity: Int = 1_024) { self.capacity = max(0, capacity) }

    /// The tile from the cache, else from `read` (then kept).
    func tile(level: Int, index: UInt64, read: () async throws -> [UInt8]) async rethrows -> ByteBuffer {
        let key = Key(level: level, index: index)
        if let hit = tiles.withLock({ $0[key] }) { return hit }
        let buffer = ByteBuffer(bytes: try await read())
        guard capacity > 0 else { return buffer }
        tiles.withLock { tiles in
            if tiles.count >= capacity, let victim = tiles.keys.first { tiles[victim] = nil }
            tiles[key] = buffer
        }
        return buffer
    }

    var count: Int { tiles.withLock { $0.count } }
}
