import AuthLedgerCore
import Foundation

/// A user proof (section 14 of the reference): at the index log's newest entry, the user's
/// stream (count, `s_N`, newest seq), the index proof for the user's key, the entry's
/// inclusion in the index log, and both checkpoints.
package struct UserProof: Sendable {
    package var user: String
    package var index: UserIndexAnswer
    /// The newest entry: its index, the index log's size and the entry's audit path.
    package var entryIndex: UInt64
    package var entryProof: InclusionProof
    /// The log's root at the entry's size.
    package var logRoot: Hash32

    /// The answer of `GET /v1/users/{u}/proof` and `prove-user --json`, with the log's
    /// checkpoint at the entry's size and the index log's checkpoint, signed by `signers`
    /// (`usersCheckpoint`: the index log's checkpoint at the proof's size as stored with
    /// witness cosignatures, used instead).
    package func json(log: CheckpointSigner, users: CheckpointSigner, usersCheckpoint: String? = nil) throws -> JSON {
        func b64(_ h: Hash32) -> JSON { .string(Data(h.bytes).base64EncodedString()) }
        let terminal: JSON
        switch index.proof.terminal {
        case let .leaf(k, c): terminal = .object([("type", .string("leaf")), ("key", b64(k)), ("commitment", b64(c))])
        case .empty: terminal = .object([("type", .string("empty"))])
        }
        return .object([
            ("user", .string(user)), ("size", .int(Int64(index.size))), ("count", .int(Int64(index.count))),
            ("streamHash", b64(index.streamHash)), ("last", .int(Int64(index.last))), ("indexRoot", b64(index.root)),
            ("proof", .object([("siblings", .array(index.proof.siblings.map(b64))), ("terminal", terminal)])),
            ("entry", .object([("index", .int(Int64(entryIndex))), ("treeSize", .int(Int64(entryProof.treeSize))),
                               ("proof", .array(entryProof.proof.map(b64)))])),
            ("checkpoint", .string(try log.sign(size: index.size, root: logRoot))),
            ("usersCheckpoint", .string(try usersCheckpoint ?? users.sign(size: entryProof.treeSize, root: entryProof.root))),
        ])
    }
}

extension Ledger {
    /// `user`'s proof at the index log's newest entry, read in one snapshot; `not_found`
    /// before the first entry. `userNotFound` is not thrown: a user without events gets a
    /// non-inclusion proof (count 0).
    package func userProof(_ user: String) async throws -> UserProof {
        try EventDecoder.checkUser(user)
        var load = Ledger.userIndexLoad(user)
        load.meta.append(UserIndexLog.sizeKey)
        return try await read(load, then: { r in
            let entries = try UserIndexLog.size(r)
            guard entries > 0 else { return ReadLoad() }
            var next = UserIndexLog.treeLoad { t in
                _ = try (t.hash(level: 0, entries - 1), t.inclusionProof(entries - 1, entries), t.root(entries))
            }
            next.meta.append(UserIndexLog.entryKey(entries - 1))
            next.streams = try Ledger.userIndexStreamLoad(r, user).streams
            return next
        }) { r in
            let entries = try UserIndexLog.size(r)
            guard entries > 0 else { throw LedgerError(.notFound, "the user index has no entry yet") }
            let answer = try Ledger.userIndexAnswer(r, user)
            let entry = try UserIndexLog.entry(r, entries - 1)
            guard entry[0..<8].reduce(0, { $0 << 8 | UInt64($1) }) == answer.size, Array(entry[40..<72]) == answer.root.bytes else {
                throw LedgerError(.tampered, "the index log's newest entry is not the stored index's position", seq: answer.size)
            }
            let t = UserIndexLog.reader(r)
            let proof = InclusionProof(treeSize: entries, leafIndex: entries - 1, leafHash: try t.hash(level: 0, entries - 1),
                                       proof: try t.inclusionProof(entries - 1, entries), root: try t.root(entries))
            return UserProof(user: user, index: answer, entryIndex: entries - 1, entryProof: proof,
                             logRoot: Hash32(bytes: Array(entry[8..<40])))
        }
    }
}
