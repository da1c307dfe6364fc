import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Foundation
import Testing

/// Shared helpers: temporary stores, fixture files, time literals, JSON matching.
enum Support {
    /// The package root (this file is Tests/AuthLedgerTests/Support.swift).
    static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func fixture(_ relative: String) -> URL { root.appendingPathComponent("Fixtures").appendingPathComponent(relative) }

    static func tempDir(_ prefix: String = "authledger-test") -> String {
        TemporaryDirectory.make(prefix)
    }

    /// A ledger on a fresh temporary store.
    static func freshLedger() async throws -> Ledger { try await Ledger(lmdb: tempDir()) }

    /// The built CLI (tools/test builds it with `swift build --build-tests`).
    static var binary: String {
        let candidates = [".build/debug/authledger", ".build/x86_64-unknown-linux-gnu/debug/authledger",
                          ".build/aarch64-unknown-linux-gnu/debug/authledger"]
        for c in candidates {
            let p = root.appendingPathComponent(c).path
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return root.appendingPathComponent(candidates[0]).path
    }
}

/// `t("2026-03-01T09:00:00Z")`: a time literal in tests.
func t(_ s: String) -> Timestamp {
    guard let ts = Timestamp(rfc3339: s) else { fatalError("bad time literal \(s)") }
    return ts
}

/// Decodes fixture-form JSONL text.
func inputs(_ text: String) throws -> [EventInput] {
    try EventDecoder.decodeLines(Array(text.utf8)).map(\.input)
}

/// One fixture-form event line, built from parts.
func line(_ type: String, user: String? = "alice", at: String, data: String, meta: String? = nil, id: String? = nil) -> String {
    var s = "{\"type\":\"\(type)\""
    if let user { s += ",\"user\":\"\(user)\"" }
    s += ",\"at\":\"\(at)\",\"data\":\(data)"
    if let meta { s += ",\"meta\":\(meta)" }
    if let id { s += ",\"id\":\"\(id)\"" }
    return s + "}"
}

extension Ledger {
    /// Appends fixture text; throws the refusal.
    @discardableResult
    func importText(_ text: String) async throws -> AppendOutcome { try await append(try inputs(text)) }

    /// The export without `disclosures`, `prev` and `hash`: the events' clear content, the
    /// same in two stores fed the same fixture (each salts personal values afresh, SPEC 1.5).
    func contentText() async throws -> String {
        var out = ""
        try await forEachEvent { e in
            let members = e.json.objectValue!.filter { !["disclosures", "prev", "hash"].contains($0.0) }
            out += JSON.object(members).serialized() + "\n"
            return true
        }
        return out
    }

    /// The export as `authledger export` writes it.
    func exportText() async throws -> String {
        var out = ""
        try await forEachEvent { e in out += e.json.serialized() + "\n"; return true }
        return out
    }
}

/// The refusal code of `body`, or nil when it succeeded.
func refusal(_ body: () throws -> Void) -> LedgerError? {
    do { try body(); return nil } catch let e as LedgerError { return e } catch { return LedgerError(.storageError, "\(error)") }
}

/// `refusal` of async work.
func refusal(_ body: () async throws -> Void) async -> LedgerError? {
    do { try await body(); return nil } catch let e as LedgerError { return e } catch { return LedgerError(.storageError, "\(error)") }
}

/// Whether `actual` matches `expected`: every member of an expected object is present
/// in the actual one with a matching value (answers may carry more members than the
/// SPEC lists); arrays match element by element with the same length; scalars are equal.
/// Returns the path of the first mismatch, or nil.
func mismatch(_ expected: JSON, _ actual: JSON, path: String = "$") -> String? {
    switch (expected, actual) {
    case let (.object(e), .object(a)):
        for (k, v) in e {
            guard let av = a.first(where: { $0.0 == k })?.1 else { return "\(path).\(k) missing" }
            if let m = mismatch(v, av, path: "\(path).\(k)") { return m }
        }
        return nil
    case let (.array(e), .array(a)):
        guard e.count == a.count else { return "\(path): \(e.count) items expected, \(a.count) found: \(actual.serialized())" }
        for (i, (x, y)) in zip(e, a).enumerated() {
            if let m = mismatch(x, y, path: "\(path)[\(i)]") { return m }
        }
        return nil
    default:
        return expected == actual ? nil : "\(path): expected \(expected.serialized()), found \(actual.serialized())"
    }
}

/// Bytes collected from a child process's pipe by another thread.
final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer = Data()
    private var finished = false
    var data: Data { lock.lock(); defer { lock.unlock() }; return buffer }
    var done: Bool { lock.lock(); defer { lock.unlock() }; return finished }
    func append(_ d: Data) { lock.lock(); buffer.append(d); lock.unlock() }
    func set(_ d: Data) { lock.lock(); buffer = d; finished = true; lock.unlock() }
    func finish() { lock.lock(); finished = true; lock.unlock() }
    func get() -> Data { data }
}


extension Sequence {
    /// `map` of async work, in order.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for e in self { out.append(try await transform(e)) }
        return out
    }
}
