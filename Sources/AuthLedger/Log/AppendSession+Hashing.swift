import AuthLedgerCore
import Crypto

/// Hashing: the leaf, the chain, the Merkle tree's frontier, inline or on `hashing`'s thread.
extension AppendSession {
    /// Hands a large request's events to `hashing` (recorded-form inputs are checked against
    /// the head's hash, event by event: inline).
    func beginPipeline(_ request: AppendRequest) throws {
        guard let hashing, request.inputs.count >= HashPipeline.minimumEvents, request.inputs.allSatisfy({ $0.claims.isEmpty }) else { return }
        // The tree's nodes are hashed there too, from the edge at the head.
        let edge = switches.maintainMerkleTree.load(ordering: .relaxed) ? try treeAtHead() : nil
        // The stream heads are folded there too, from the heads with every earlier step
        // folded in (only steps of earlier requests: this one's could still be undone).
        let folds = switches.maintainStreamHashes.load(ordering: .relaxed) && (!inRequest || streamLeaves.count == savedLeaves)
        if folds {
            try foldStreamLeaves()
            savedLeaves = 0
        }
        pipelining = hashing.begin(prev: head.hash, tree: edge, streams: folds ? streams : nil)
        foldsInPipeline = pipelining && folds
    }

    /// After the request's events were stored: the tree's edge and the streams' steps `hashing` reached.
    func takePipelineEdges() {
        if pipelining, tree != nil { tree = hashing!.frontier }
        if foldsInPipeline { streamLeaves += hashing!.takeStreamSteps() }
    }

    /// Ends the request's use of `hashing` (what it still holds of a refused request is dropped).
    func endPipeline() {
        if pipelining { hashing?.cancel() }
        pipelining = false
        pendingIds = []
        outbox = []
        if foldsInPipeline {
            foldsInPipeline = false
            for (user, head) in loadedHeads { streams[user] = head }
            loadedHeads = []
            handedHeads = 0
        }
    }

    /// Puts a recorded event and its index entries, then its Merkle nodes (`tree`).
    func store(_ recorded: RecordedEvent, bytes: [UInt8], leaf: TreeFrontier.Node, tree: () throws -> Void) throws {
        let e = recorded.event
        try w.putEvent(seq: recorded.seq, id: e.id!, stream: e.stream, version: recorded.version, bytes: bytes)
        try tree()
        if let user = e.user, !foldsInPipeline, switches.maintainStreamHashes.load(ordering: .relaxed) {
            streamLeaves.append((user, .leaf(seq: recorded.seq, leaf)))
        }
        appended.append(recorded)
    }

    /// Gives `hashing` the admitted events not yet handed over.
    func handOver() {
        guard !outbox.isEmpty else { return }
        hashing!.submit(outbox, heads: Array(loadedHeads[handedHeads...]))
        handedHeads = loadedHeads.count
        outbox.removeAll(keepingCapacity: true)
    }

    /// Stores what `hashing` has hashed (with `all`, every event handed to it), in `seq`
    /// order; once nothing is pending, the head has the last one's hash.
    func storeHashed(all: Bool) throws {
        guard pipelining, all || !pendingIds.isEmpty else { return }
        if all { handOver() }
        let taken = hashing!.take(all: all)
        var k = 0
        for h in taken.events {
            if let values = h.values, let user = h.recorded.event.user {
                try w.putPersonalValues(user: user, seq: h.recorded.seq, values)
            }
            try store(h.recorded, bytes: h.bytes, leaf: h.leaf) {
                for (index, node) in taken.nodes[k..<(k + h.nodeCount)] { try w.appendTreeHash(index, node) }
            }
            k += h.nodeCount
            pendingIds.remove(h.recorded.event.id!)
            if pendingIds.isEmpty { head = Head(seq: h.recorded.seq, hash: h.recorded.hash) }
        }
    }

    /// Adds the event's leaf to the Merkle tree, in the event's transaction.
    func appendToTree(_ leaf: TreeFrontier.Node, seq: UInt64) throws {
        if !switches.maintainMerkleTree.load(ordering: .relaxed) { return }
        _ = try treeAtHead()
        try tree!.append(leaf) { index, _, node in try w.appendTreeHash(index, node) }
    }

    /// The Merkle tree's right edge over the events stored so far (loaded the first time).
    func treeAtHead() throws -> TreeFrontier {
        let size = head.seq
        if tree == nil { tree = try TreeFrontier.load(w, size: size) }
        guard tree!.size == size else { throw LedgerError(.tampered, "the Merkle tree is not at the head", seq: size + 1) }
        return tree!
    }
}
