import AuthLedgerCore
import NIOCore
import PostgresNIO

extension PostgresSnapshot {
    /// Fetches what a run of the read needed, with the statements of `PostgresReads.swift`,
    /// awaiting PostgresNIO's answers (no thread waits). Ranges come a page at a time and
    /// bring what is read with them: a stream's page its events and their personal values.
    /// Takes the answers of the statements sent with BEGIN (see `PostgresStorage.readAsync`).
    func start(head: [PostgresRow], checkpoint: [PostgresRow], system: [PostgresRow]) throws {
        fetchedHead = try head.first.map(PostgresAccess.decodeHead) ?? .empty
        meta["checkpoint"] = .some(try PostgresRows.bytes(checkpoint, doing: "read a meta value"))
        states[systemStream] = .some(try PostgresRows.bytes(system, doing: "read a projection"))
    }

    func fill(_ need: Need, _ s: PostgresSession, _ t: PostgresTables) async throws {
        switch need {
        case .head:
            fetchedHead = try await s.run(t.headRow).first.map(PostgresAccess.decodeHead) ?? .empty
        case .eventCount:
            eventCount = Int(try await integer(t.eventCount, s) ?? 0)
        case .treeCount:
            treeCount = try await integer(t.treeCount, s) ?? 0
        case .log(let from):
            let limit = pageSize("log")
            var page: [(UInt64, [UInt8])] = []
            for row in try await s.run(t.logPage(from: Self.key(from), limit: limit)) {
                let (seq, bytes, personalValues) = try PostgresRows.logRow(row)
                page.append((seq, Array(bytes.readableBytesView)))
                personal[seq] = .some(personalValues)
            }
            log.addPage(page, from: from, limit: limit)
        case .stream(let stream, let from):
            let limit = pageSize("stream " + stream)
            var page: [(UInt64, UInt64)] = []
            for row in try await s.run(t.streamEventsPage(stream, from: Self.key(from), limit: limit)) {
                let (version, seq, bytes, personalValues): (Int64, Int64, ByteBuffer, ByteBuffer?)
                do { (version, seq, bytes, personalValues) = try row.decode((Int64, Int64, ByteBuffer, ByteBuffer?).self) } catch {
                    throw LedgerError(.tampered, "unexpected value in the PostgreSQL store (scan a stream)")
                }
                let at = UInt64(bitPattern: seq)
                page.append((UInt64(bitPattern: version), at))
                log.rows[at] = Array(bytes.readableBytesView)
                personal[at] = .some(personalValues.map { Array($0.readableBytesView) })
            }
            streams[stream, default: PostgresFetched()].addPage(page, from: from, limit: limit)
        case .tree(let from):
            let limit = pageSize("tree")
            let range = from..<(from &+ UInt64(limit) < from ? .max : from + UInt64(limit))
            let st = t.tiles(covering: range)
            let page = try PostgresRows.treeHashes(try await s.run(st), in: range, doing: st.doing)
            tree.addPage(page, from: from, limit: limit)
        case .treeHash(let index):
            // The whole tile (a proof or a check reads the hashes around it next).
            let range = PostgresTiles.tile(of: index)
            let st = t.tiles(covering: range)
            tree.add(try PostgresRows.treeHashes(try await s.run(st), in: range, doing: st.doing), from: range.lowerBound, through: range.upperBound - 1)
        case .id(let id):
            ids[id] = .some(try await integer(t.seq(forId: id), s))
        case .state(let key):
            states[key] = .some(try await bytes(t.state(key), s))
        case .meta(let key):
            meta[key] = .some(try await bytes(t.metaValue(key), s))
        case .personal(let seq):
            personal[seq] = .some(try await bytes(t.personalValues(seq), s))
        case .record(let key):
            records[key] = .some(try await bytes(t.record(key), s))
        case .recordCount(let kind):
            recordCounts[kind] = Int(try await integer(t.recordCount(kind), s) ?? 0)
        case .personalOf(let user):
            let st = t.personalValues(of: user)
            personalOf[user] = try await s.run(st).map { row in
                let (seq, bytes) = try PostgresRows.decode2(row, Int64.self, ByteBuffer.self, doing: st.doing)
                return (UInt64(bitPattern: seq), Array(bytes.readableBytesView))
            }
        case .statesFrom(let from):
            // The next page, after the last row fetched; each row's latest stream entry
            // answers `seq(stream:version:)` for it without another round trip.
            let limit = pageSize("states " + from)
            var got = statesFrom[from] ?? ([], false)
            let st = got.rows.last.map { t.statesFrom(PostgresAccess.text($0.0), inclusive: false, limit: limit) }
                ?? t.statesFrom(PostgresAccess.text(from), inclusive: true, limit: limit)
            let rows = try await s.run(st)
            for row in rows {
                let (key, bytes, latest) = try PostgresRows.stateFromRow(row, doing: st.doing)
                let name = String(decoding: key.readableBytesView, as: UTF8.self)
                got.rows.append((name, Array(bytes.readableBytesView)))
                if let (version, seq) = latest { streams[name, default: PostgresFetched()].add([(version, seq)], from: version, through: version) }
            }
            got.complete = rows.count < limit
            statesFrom[from] = got
        case .allStates:
            var all: [(String, [UInt8])] = []
            var after: ByteBuffer?
            while true {
                let st = t.statesPage(after: after, limit: PostgresAccess.page)
                let rows = try await s.run(st)
                for row in rows {
                    let (key, bytes) = try PostgresRows.decode2(row, ByteBuffer.self, ByteBuffer.self, doing: st.doing)
                    all.append((String(decoding: key.readableBytesView, as: UTF8.self), Array(bytes.readableBytesView)))
                    after = key
                }
                if rows.count < PostgresAccess.page { break }
            }
            allStates = all
        }
    }

    private func bytes(_ st: PostgresStatement, _ s: PostgresSession) async throws -> [UInt8]? {
        try PostgresRows.bytes(await s.run(st), doing: st.doing)
    }

    private func integer(_ st: PostgresStatement, _ s: PostgresSession) async throws -> UInt64? {
        try PostgresRows.integer(await s.run(st), doing: st.doing)
    }

    /// A key as the statements bind it (keys beyond `Int64.max` find nothing, as in the blocking scans).
    static func key(_ k: UInt64) -> Int64 { Int64(bitPattern: min(k, UInt64(Int64.max))) }
}

extension PostgresStorage {
    /// Runs `body` in one REPEATABLE READ snapshot, as `read`, without blocking the calling
    /// thread: a connection of the pool (or one connected asynchronously), and PostgresNIO's
    /// answers awaited. BEGIN goes with what most reads ask first (the head, the checkpoint,
    /// the `$system` state: one round trip); `body` then runs against a `PostgresSnapshot`,
    /// again after each fetch of what it missed. COMMIT (or ROLLBACK) is sent on every path
    /// and the connection goes back to the pool when it is answered (closed when it is not),
    /// without the task waiting for it. A failure is the ledger's `storage_error`, never with
    /// the URL or the password.
    package func readAsync<T: Sendable>(_ body: (any StorageReader) throws -> T) async throws -> T {
        try await connections.withSession { s in
            let snapshot = PostgresSnapshot(firstPage: firstReadPage.value)
            let result: Result<T, any Error>
            do {
                let first = [tables.headRow, tables.metaValue("checkpoint"), tables.state(systemStream)]
                let begun = s.send("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", PostgresBindings())
                let answers = first.map { s.send($0.sql, $0.binds) }
                let rows: [PostgresQueryResult]
                do {
                    rows = try await EventLoopFuture.whenAllSucceed([begun] + answers, on: begun.eventLoop).get()
                } catch {
                    throw PostgresFailure(error, doing: "begin", location: s.location)
                }
                try snapshot.start(head: Array(rows[1].rows), checkpoint: Array(rows[2].rows), system: Array(rows[3].rows))
                var run = snapshot.attempt(body)
                while let need = snapshot.missing {
                    try await snapshot.fill(need, s, tables)
                    readFills.add(1)
                    run = snapshot.attempt(body)
                }
                result = run
            } catch {
                await s.end("ROLLBACK")
                throw (error as? PostgresFailure)?.ledgerError ?? error
            }
            await s.end("COMMIT")
            return try result.get()
        }
    }
}
