import AuthLedgerCore

/// The user index (section 14 of the reference) as the store keeps it: the prefix tree cut
/// into pages of 8 levels, each a meta value (`userindex/page/<hex of the prefix bytes>`,
/// the root page `userindex/page/`), updated a batch of changed users at a time — each
/// changed user's path read and rehashed once, each page on it written once. A page holds
/// its subtree's nodes with their hashes; a subtree of two or more leaves that starts at
/// the page's bottom (8 levels down) is a page of its own, referred to by its hash. A leaf
/// sits at the first depth where its key's prefix is unique, so it may be in any page.
enum UserIndexPages {
    /// A node of a page as read: an inner node carries its hash.
    indirect enum Node {
        case empty
        case leaf(key: Hash32, commitment: Hash32)
        case inner(Hash32, Node, Node)
        /// A child page, not read.
        case page(Hash32)

        var hash: Hash32 {
            switch self {
            case .empty: .zero
            case let .leaf(k, c): UserIndex.leafHash(key: k, commitment: c)
            case let .inner(h, _, _), let .page(h): h
            }
        }
    }

    /// A changed user's key and value commitment.
    typealias Item = (key: Hash32, commitment: Hash32)

    static let levels = 8
    static let pagePrefix = "userindex/page/"
    /// Meta key of the index's position: `u64be(S) ‖ I_S`, the log size it covers and its root.
    static let stateKey = "userindex/state"

    static func pageKey(_ key: Hash32, depth: Int) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = Array(pagePrefix.utf8)
        for b in key.bytes[0..<(depth / levels)] { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The index's position: the log size it covers and its root (0 and zero: none yet).
    static func position(_ r: any StorageReader) throws -> (size: UInt64, root: Hash32) {
        guard let b = try r.metaValue(stateKey) else { return (0, .zero) }
        guard b.count == 40 else { throw LedgerError(.tampered, "the user index's position is not 40 bytes") }
        return (b[0..<8].reduce(0) { $0 << 8 | UInt64($1) }, Hash32(bytes: Array(b[8..<40])))
    }

    // MARK: Page bytes

    static func encode(_ node: Node) -> [UInt8] {
        var out: [UInt8] = [1]
        func put(_ n: Node) {
            switch n {
            case .empty: out.append(0)
            case let .leaf(k, c): out.append(1); out += k.bytes; out += c.bytes
            case let .inner(h, l, r): out.append(2); out += h.bytes; put(l); put(r)
            case let .page(h): out.append(3); out += h.bytes
            }
        }
        put(node)
        return out
    }

    static func decode(_ bytes: [UInt8], name: String) throws -> Node {
        var i = 1
        func hash() throws -> Hash32 {
            guard i + 32 <= bytes.count else { throw corrupt(name) }
            defer { i += 32 }
            return Hash32(bytes: Array(bytes[i..<(i + 32)]))
        }
        func node(_ depth: Int) throws -> Node {
            guard i < bytes.count, depth <= levels else { throw corrupt(name) }
            i += 1
            switch bytes[i - 1] {
            case 0: return .empty
            case 1: return .leaf(key: try hash(), commitment: try hash())
            case 2:
                let h = try hash()
                return .inner(h, try node(depth + 1), try node(depth + 1))
            case 3 where depth == levels: return .page(try hash())
            default: throw corrupt(name)
            }
        }
        guard bytes.first == 1 else { throw corrupt(name) }
        let root = try node(0)
        guard i == bytes.count else { throw corrupt(name) }
        return root
    }

    static func corrupt(_ name: String) -> LedgerError {
        LedgerError(.tampered, "the user index page \(name) is not decodable")
    }

    /// The page at `depth` on `key`'s path (empty when there is none).
    static func page(_ r: any StorageReader, _ key: Hash32, depth: Int) throws -> Node {
        let name = pageKey(key, depth: depth)
        guard let bytes = try r.metaValue(name) else { return .empty }
        return try decode(bytes, name: name)
    }

    // MARK: Batches

    /// Puts `items` (sorted by key, distinct) into the index and returns the new root,
    /// writing every page on their paths once.
    static func update(_ w: any StorageWriter, _ items: [Item]) throws -> Hash32 {
        let first = items.first?.key ?? .zero
        let root = try update(w, try page(w, first, depth: 0), depth: 0, items[...])
        try w.putMetaValue(pagePrefix, encode(root))
        return root.hash
    }

    private static func update(_ w: any StorageWriter, _ node: Node, depth: Int, _ items: ArraySlice<Item>) throws -> Node {
        guard let first = items.first else { return node }
        var node = node
        if case .page = node { node = try page(w, first.key, depth: depth) }
        let result: Node
        switch node {
        case .empty:
            result = items.count == 1 ? .leaf(key: first.key, commitment: first.commitment) : try split(w, .empty, .empty, depth, items)
        case let .leaf(k, c):
            if items.count == 1 && first.key == k {
                result = .leaf(key: k, commitment: first.commitment)
            } else {
                // The leaf goes down with the batch's keys of its subtree (a changed value of its own key wins).
                var merged = Array(items)
                if !merged.contains(where: { $0.key == k }) {
                    let at = merged.firstIndex { !$0.key.bytes.lexicographicallyPrecedes(k.bytes) } ?? merged.endIndex
                    merged.insert((k, c), at: at)
                }
                result = try split(w, .empty, .empty, depth, merged[...])
            }
        case let .inner(_, l, r):
            result = try split(w, l, r, depth, items)
        case .page:
            throw LedgerError(.tampered, "the user index page \(pageKey(first.key, depth: depth)) refers to itself")
        }
        // Two leaves or more at a page's bottom: a page of their own.
        if depth > 0 && depth % levels == 0, case .inner = result {
            try w.putMetaValue(pageKey(first.key, depth: depth), encode(result))
            return .page(result.hash)
        }
        return result
    }

    private static func split(_ w: any StorageWriter, _ l: Node, _ r: Node, _ depth: Int, _ items: ArraySlice<Item>) throws -> Node {
        guard depth < 256 else { throw LedgerError(.tampered, "two users of the index share a key") }
        let cut = items.firstIndex { UserIndex.bit($0.key, depth) == 1 } ?? items.endIndex
        let left = try update(w, l, depth: depth + 1, items[..<cut])
        let right = try update(w, r, depth: depth + 1, items[cut...])
        return .inner(UserIndex.nodeHash(left.hash, right.hash), left, right)
    }

    // MARK: Proofs

    /// The proof for `key` in the stored index: siblings from the root down, and the terminal.
    static func proof(_ r: any StorageReader, for key: Hash32) throws -> UserIndexProof {
        var siblings: [Hash32] = []
        var node = try page(r, key, depth: 0)
        var depth = 0
        while true {
            switch node {
            case .empty: return UserIndexProof(siblings: siblings, terminal: .empty)
            case let .leaf(k, c): return UserIndexProof(siblings: siblings, terminal: .leaf(key: k, commitment: c))
            case let .inner(_, l, rt):
                let b = UserIndex.bit(key, depth)
                siblings.append(b == 0 ? rt.hash : l.hash)
                node = b == 0 ? l : rt
                depth += 1
            case .page:
                node = try page(r, key, depth: depth)
                if case .page = node { throw LedgerError(.tampered, "the user index page \(pageKey(key, depth: depth)) refers to itself") }
            }
        }
    }

    // MARK: Check

    /// Reads every page, checks each stored hash against its children and every leaf's
    /// place, and returns the leaves by key with the root.
    static func leaves(_ r: any StorageReader) throws -> (root: Hash32, leaves: [Hash32: Hash32]) {
        var out: [Hash32: Hash32] = [:]
        func walk(_ node: Node, depth: Int, path: Hash32, name: String) throws -> Hash32 {
            switch node {
            case .empty: return .zero
            case let .leaf(k, c):
                for i in 0..<depth where UserIndex.bit(k, i) != UserIndex.bit(path, i) {
                    throw LedgerError(.tampered, "the user index page \(name) holds a leaf off its key's path")
                }
                guard out.updateValue(c, forKey: k) == nil else { throw LedgerError(.tampered, "the user index holds a key twice") }
                return node.hash
            case let .inner(h, l, rt):
                var right = path
                right.bytes[depth >> 3] |= UInt8(0x80) >> UInt8(depth & 7)
                let computed = UserIndex.nodeHash(try walk(l, depth: depth + 1, path: path, name: name), try walk(rt, depth: depth + 1, path: right, name: name))
                guard computed == h else { throw LedgerError(.tampered, "the user index page \(name) holds a node whose hash is not its children's") }
                return h
            case let .page(h):
                let child = pageKey(path, depth: depth)
                let sub = try page(r, path, depth: depth)
                guard case .inner = sub else { throw LedgerError(.tampered, "the user index page \(child) is missing or holds fewer than two leaves") }
                guard try walk(sub, depth: depth, path: path, name: child) == h else {
                    throw LedgerError(.tampered, "the user index page \(child) does not hash to what its parent holds")
                }
                return h
            }
        }
        let root = try walk(try page(r, .zero, depth: 0), depth: 0, path: .zero, name: pagePrefix)
        return (root, out)
    }
}
