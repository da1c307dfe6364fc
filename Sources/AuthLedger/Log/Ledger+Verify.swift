import AuthLedgerCore
import Foundation

extension Ledger {
    // MARK: Verify and replay

    /// Re-computes every hash and index, and checks that the maintained projections equal
    /// a replay of the log. Throws `tampered` naming the first bad seq (for a projection,
    /// the last seq of its stream).
    @discardableResult
    public func verify() throws -> Head {
        try storage.read { r in
            var prev = Hash32.zero
            var expected: UInt64 = 1
            var versions: [String: UInt64] = [:]
            // Replayed alongside: the maintained projections must equal it (queries at the head answer from them).
            var users: [String: UserState] = [:]
            var system = SystemState()
            var lastSeq: [String: UInt64] = [:]
            var streams: [String: StreamHead] = [:]
            // The user index is checked against the streams as of the size it covers.
            let indexed = try UserIndexPages.position(r).size
            var atIndex: (streams: [String: StreamHead], counts: [String: UInt64]) = ([:], [:])
            var tree = TreeCheck(r)
            try r.scan(from: 0) { seq, bytes in
                guard seq == expected else {
                    throw LedgerError(.tampered, seq < expected ? "unexpected event key" : "event missing", seq: min(seq, expected))
                }
                // Disclosed values must match their commitments (the values store is checked too).
                let rec = try r.recordedEvent(seq, bytes, check: true)
                guard rec.prev == prev else { throw LedgerError(.tampered, "prev does not link to the previous hash", seq: seq) }
                let leaf = RecordedEvent.leaf(rec.event, seq: seq, version: rec.version)
                let hash = RecordedEvent.chain(prev: prev, leaf: leaf)
                guard hash == rec.hash else { throw LedgerError(.tampered, "hash does not match the event's content", seq: seq) }
                try tree.add(leaf, seq: seq)
                let stream = rec.event.stream
                let v = versions[stream, default: 0] + 1
                guard rec.version == v else { throw LedgerError(.tampered, "stream version out of order", seq: seq) }
                versions[stream] = v
                guard try r.seq(forId: rec.id) == seq else { throw LedgerError(.tampered, "id index does not point at this event", seq: seq) }
                guard try r.seq(stream: stream, version: v) == seq else { throw LedgerError(.tampered, "stream index does not point at this event", seq: seq) }
                do {
                    if let user = rec.event.user {
                        try users[user, default: UserState(user: user)].evolve(rec.event, policy: system.policy)
                    } else {
                        try system.evolve(rec.event)
                    }
                } catch {
                    throw LedgerError(.tampered, "event breaks the rules (\((error as? LedgerError)?.code.rawValue ?? "\(error)"))", seq: seq)
                }
                lastSeq[stream] = seq
                if rec.event.user != nil { streams[stream] = streams[stream, default: .start].adding(leaf, seq: seq) }
                if seq == indexed { atIndex = (streams, versions) }
                prev = hash
                expected += 1
                return true
            }
            let head = try r.head()
            let last = expected - 1
            guard head.seq == last, head.hash == prev else {
                throw LedgerError(.tampered, "head does not match the last event", seq: min(head.seq, last) + 1)
            }
            try tree.finish()
            if indexed > last { throw LedgerError(.tampered, "the user index covers more than the log", seq: last + 1) }
            if indexed > 0 { try Ledger.checkUserIndex(r, size: indexed, streams: atIndex.streams, counts: atIndex.counts) }
            let counts = try r.indexCounts()
            guard counts.events == Int(last), counts.ids == Int(last), counts.streams == Int(last) else {
                throw LedgerError(.tampered, "an index holds entries for events not in the log", seq: last + 1)
            }
            if try r.checkpoint() == head.seq {
                var stored = 0
                try r.scanProjectionStates { key, bytes in
                    stored += 1
                    if key != systemStream, let head = streams[key] {
                        // Named on its own: what a user proof commits to (section 14).
                        guard (try? StateCodec.decodeStream(bytes).head) == head else {
                            throw LedgerError(.tampered, "the stream hash of \(key) differs from its events' leaves", seq: head.last)
                        }
                    }
                    let same = key == systemStream
                        ? (try? StateCodec.decodeSystem(bytes)) == system
                        : users[key] != nil && (try? StateCodec.decode(bytes, user: key)) == users[key]!.compacted()
                    guard same else {
                        throw LedgerError(.tampered, "a maintained projection differs from a replay of its stream", seq: lastSeq[key] ?? last + 1)
                    }
                    return true
                }
                guard stored == users.count + (system.version > 0 ? 1 : 0) else {
                    throw LedgerError(.tampered, "a stream has no maintained projection", seq: last + 1)
                }
                // The challenge, OTP and grant indexes: exactly the records of the replay.
                var counts: [RecordKind: Int] = [:]
                for (user, s) in users {
                    for (kind, id, bytes) in s.encodedRecords() {
                        guard try r.record(kind, user: user, id: id) == bytes else {
                            throw LedgerError(.tampered, "a \(kind) index entry differs from a replay of its stream", seq: lastSeq[user] ?? last + 1)
                        }
                        counts[kind, default: 0] += 1
                    }
                }
                for kind in RecordKind.allCases {
                    guard try r.recordCount(kind) == counts[kind, default: 0] else {
                        throw LedgerError(.tampered, "the \(kind) index holds entries no event made", seq: last + 1)
                    }
                }
            }
            return head
        }
    }
}
