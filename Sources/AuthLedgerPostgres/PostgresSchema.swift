import AuthLedgerCore
import PostgresNIO

/// The PostgreSQL store's tables, created and migrated by the ledger itself.
///
/// `schema_version` holds the version of the tables; opening a store applies every
/// migration after it, in one transaction under an advisory lock (several servers may
/// start at once), and refuses a store written by a newer version.
///
/// Version 1, one table per LMDB database (`LMDBStorage`), keys as bytes:
/// - `head`: one row (`one` = true), the last `seq` and its chain hash; every write
///   transaction locks it first (`FOR UPDATE`), which orders the writers of all servers
/// - `events`: seq → id, stream, version, encoded event; `id` and (stream, version) are
///   unique indexes (the `ids` and `streams` databases of LMDB)
/// - `states`: stream key → maintained projection state
/// - `meta`: key → value (`checkpoint`, subscriptions, Shared Signals…)
/// - `tree`: stored Merkle hash index → 32-byte hash
/// - `records`: (kind, user, id) → challenge, OTP or grant record
/// - `personal`: seq → the event's personal values (with its user, for erasure)
///
/// Version 2 adds the function `append_group` (one statement per commit group).
///
/// Version 3 stores the Merkle hashes as tiles: `tiles` (tile → the 32-byte hashes of
/// the stored indexes `128 × tile` up to `128 × tile + 127`, one after the other,
/// `PostgresTiles`) replaces
/// `tree`, so a commit group writes a row per tile it reaches (a partial tile grows with
/// `||`) instead of a row per hash, about two per event (`tilesFromTree`).
package enum PostgresSchema {
    package static let migrations: [[String]] = [
        // 1
        [
            "CREATE TABLE {S}.head (one boolean PRIMARY KEY DEFAULT true CHECK (one), seq bigint NOT NULL, hash bytea NOT NULL)",
            "INSERT INTO {S}.head (one, seq, hash) VALUES (true, 0, '\\x0000000000000000000000000000000000000000000000000000000000000000'::bytea)",
            "CREATE TABLE {S}.events (seq bigint PRIMARY KEY, id bytea NOT NULL, stream bytea NOT NULL, version bigint NOT NULL, bytes bytea NOT NULL)",
            "CREATE UNIQUE INDEX events_id ON {S}.events (id)",
            "CREATE UNIQUE INDEX events_stream ON {S}.events (stream, version)",
            "CREATE TABLE {S}.states (key bytea PRIMARY KEY, bytes bytea NOT NULL)",
            "CREATE TABLE {S}.meta (key bytea PRIMARY KEY, value bytea NOT NULL)",
            "CREATE TABLE {S}.tree (idx bigint PRIMARY KEY, hash bytea NOT NULL)",
            "CREATE TABLE {S}.records (kind smallint NOT NULL, owner bytea NOT NULL, id bytea NOT NULL, bytes bytea NOT NULL, PRIMARY KEY (kind, owner, id))",
            "CREATE TABLE {S}.personal (seq bigint PRIMARY KEY, owner bytea NOT NULL, bytes bytea NOT NULL)",
            "CREATE INDEX personal_owner ON {S}.personal (owner, seq)",
        ],
        // 2: a commit group's writes in one statement (see `appendGroup`).
        [appendGroup],
        // 3: the Merkle hashes as tiles (see `tilesFromTree`).
        // (Its arguments' names change: CREATE OR REPLACE cannot rename them.)
        tilesFromTree + ["DROP FUNCTION {S}.append_group", appendGroupTiles],
    ]

    /// Version 3's tables: `tiles` made from `tree`, every hash at the same index. A tile
    /// starts at its first index and has no gap (`tree` rows of one tile that do not are
    /// refused: the migration rolls back, and the store stays at version 2). The hashes
    /// are stored in the row, uncompressed (`PLAIN`: they do not compress, and a tile of
    /// 4 KB fits a page).
    static let tilesFromTree = [
        "CREATE TABLE {S}.tiles (tile bigint PRIMARY KEY, hashes bytea NOT NULL)",
        "ALTER TABLE {S}.tiles ALTER COLUMN hashes SET STORAGE PLAIN",
        """
        DO $check$ BEGIN
            IF EXISTS (SELECT 1 FROM {S}.tree GROUP BY idx / \(PostgresTiles.width)
                       HAVING min(idx) <> idx / \(PostgresTiles.width) * \(PostgresTiles.width) OR count(*) <> max(idx) - min(idx) + 1
                           OR bool_or(length(hash) <> 32) OR min(idx) < 0) THEN
                RAISE EXCEPTION 'the stored Merkle hashes have gaps or malformed hashes: not migrated to tiles';
            END IF;
        END $check$
        """,
        "INSERT INTO {S}.tiles (tile, hashes) SELECT idx / \(PostgresTiles.width), string_agg(hash, ''::bytea ORDER BY idx) FROM {S}.tree GROUP BY idx / \(PostgresTiles.width)",
        "DROP TABLE {S}.tree",
    ]

    /// Version 3's `append_group`: the same arguments, but the tree's are runs of hashes
    /// (`tr_first`: a run's first stored index; `tr_hashes`: its hashes one after the
    /// other, all in one tile, `PostgresPendingWrites.treeChunks`): a run that starts a
    /// tile inserts it, the others are appended to their tile, which must end just before
    /// them (else the statement fails: nothing of the group is written).
    static let appendGroupTiles = appendGroupFunction(
        tree: "tr_first int8[], tr_hashes bytea[]", declare: "DECLARE appended int8;\n", writeTree: """
                IF cardinality(tr_first) > 0 THEN
                    INSERT INTO {S}.tiles (tile, hashes)
                    SELECT f / \(PostgresTiles.width), h FROM unnest(tr_first, tr_hashes) AS u(f, h) WHERE f % \(PostgresTiles.width) = 0;
                    UPDATE {S}.tiles t SET hashes = t.hashes || u.h FROM unnest(tr_first, tr_hashes) AS u(f, h)
                    WHERE u.f % \(PostgresTiles.width) <> 0 AND t.tile = u.f / \(PostgresTiles.width) AND length(t.hashes) = u.f % \(PostgresTiles.width) * 32;
                    GET DIAGNOSTICS appended = ROW_COUNT;
                    IF appended <> (SELECT count(*) FROM unnest(tr_first) AS f WHERE f % \(PostgresTiles.width) <> 0) THEN
                        RAISE EXCEPTION 'a Merkle hash does not follow the stored ones';
                    END IF;
                END IF;
            """)

    /// Version 2: `append_group` writes everything a commit group (or a part of it sent
    /// early) wrote — events, tree hashes, personal values, projection states, records,
    /// meta values — from one array per column, then moves the head and notifies the other
    /// servers (`PostgresCommitListener`), all in one statement: one round trip per group
    /// instead of one per table. The caller's transaction already holds the head's lock.
    /// Rows in the order given; keyed tables keep the last write (`PostgresPendingWrites`
    /// sends one row per key). Returns the head's seq (null when the head did not move).
    static let appendGroup = appendGroupFunction(tree: "tr_idx int8[], tr_hash bytea[]", declare: "", writeTree: """
                IF cardinality(tr_idx) > 0 THEN
                    INSERT INTO {S}.tree (idx, hash) SELECT * FROM unnest(tr_idx, tr_hash);
                END IF;
            """)

    /// `append_group` with the tree's arguments and statements of a version.
    static func appendGroupFunction(tree: String, declare: String, writeTree: String) -> String {
        """
        CREATE OR REPLACE FUNCTION {S}.append_group(
            ev_seq int8[], ev_id bytea[], ev_stream bytea[], ev_version int8[], ev_bytes bytea[],
            \(tree),
            pv_seq int8[], pv_owner bytea[], pv_bytes bytea[],
            st_key bytea[], st_bytes bytea[],
            rc_kind int2[], rc_owner bytea[], rc_id bytea[], rc_bytes bytea[],
            mt_key bytea[], mt_value bytea[], mt_delete bytea[],
            head_seq int8, head_hash bytea, channel text, payload text) RETURNS int8
        LANGUAGE plpgsql AS $fn$
        \(declare)BEGIN
            IF cardinality(ev_seq) > 0 THEN
                INSERT INTO {S}.events (seq, id, stream, version, bytes)
                SELECT * FROM unnest(ev_seq, ev_id, ev_stream, ev_version, ev_bytes);
            END IF;
        \(writeTree)
            IF cardinality(pv_seq) > 0 THEN
                INSERT INTO {S}.personal (seq, owner, bytes) SELECT * FROM unnest(pv_seq, pv_owner, pv_bytes);
            END IF;
            IF cardinality(st_key) > 0 THEN
                INSERT INTO {S}.states (key, bytes) SELECT * FROM unnest(st_key, st_bytes)
                ON CONFLICT (key) DO UPDATE SET bytes = EXCLUDED.bytes;
            END IF;
            IF cardinality(rc_kind) > 0 THEN
                INSERT INTO {S}.records (kind, owner, id, bytes) SELECT * FROM unnest(rc_kind, rc_owner, rc_id, rc_bytes)
                ON CONFLICT (kind, owner, id) DO UPDATE SET bytes = EXCLUDED.bytes;
            END IF;
            IF cardinality(mt_key) > 0 THEN
                INSERT INTO {S}.meta (key, value) SELECT * FROM unnest(mt_key, mt_value)
                ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
            END IF;
            IF cardinality(mt_delete) > 0 THEN
                DELETE FROM {S}.meta WHERE key = ANY(mt_delete);
            END IF;
            IF head_seq IS NOT NULL THEN
                UPDATE {S}.head SET seq = head_seq, hash = head_hash;
                PERFORM pg_notify(channel, payload);
            END IF;
            RETURN head_seq;
        END
        $fn$
        """
    }

    package static var latest: Int { migrations.count }

    /// Creates or migrates the tables of `schema`.
    static func migrate(_ s: PostgresSession, schema: String) async throws {
        try await s.execute("BEGIN", doing: "schema migration")
        do {
            // Servers starting together: one migrates, the others wait and find it done.
            try await s.execute("SELECT pg_advisory_xact_lock(hashtext('authledger schema \(schema)'))", doing: "schema migration")
            try await s.execute("CREATE SCHEMA IF NOT EXISTS \(schema)", doing: "schema migration")
            try await s.execute("CREATE TABLE IF NOT EXISTS \(schema).schema_version (version integer NOT NULL)", doing: "schema migration")
            let rows = try await s.execute("SELECT max(version) FROM \(schema).schema_version", doing: "schema migration")
            let current = try rows.first?.decode(Int?.self) ?? nil ?? 0
            guard current <= latest else {
                throw LedgerError(.storageError, "the PostgreSQL store's schema version \(current) is newer than this authledger's (\(latest)); upgrade authledger")
            }
            for version in (current + 1)..<(latest + 1) {
                for sql in migrations[version - 1] {
                    try await s.execute(sql.replacingOccurrences(of: "{S}.", with: "\(schema)."), doing: "schema migration")
                }
                try await s.execute("DELETE FROM \(schema).schema_version", doing: "schema migration")
                try await s.execute("INSERT INTO \(schema).schema_version (version) VALUES (\(version))", doing: "schema migration")
            }
            try await s.execute("COMMIT", doing: "schema migration")
        } catch {
            // A connection whose ROLLBACK failed is closed (the pool opens another).
            if (try? await s.execute("ROLLBACK", doing: "schema migration")) == nil { s.discard() }
            throw error
        }
    }
}
