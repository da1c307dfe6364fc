import Foundation

/// The witness's key file: one line `PRIVATE+KEY+<name>+<hex key id>+<base64(0x04 ‖ seed)>`
/// (the layout of signed-note private keys), mode 0600. Created on first use, crash-safe
/// and race-free: written and synced in a temporary file, hard-linked into place (which
/// fails if another process got there first, whose key is then used), the directory synced.
public enum CosignerKeyFile {
    /// The cosigner in the key file at `path`; when there is none and `name` is given,
    /// a new key named `name` is created there. Throws ``NoteError`` for a file of another
    /// shape, a name that differs from the file's, or a missing file without `name`.
    public static func load(path: String, name: String?) throws -> Cosigner {
        if let existing = try read(path) {
            if let name, name != existing.name {
                throw NoteError("the key file \(path) holds the key of '\(existing.name)', not '\(name)'")
            }
            return existing
        }
        guard let name else { throw NoteError("no key file at \(path) (give --name to create one)") }
        var g = SystemRandomNumberGenerator()
        let cosigner = try Cosigner(name: name, seed: (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) })
        let dir = (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
        let temp = dir + "/.witness-key-\(UInt64.random(in: 0...UInt64.max, using: &g)).tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw NoteError("cannot create the key file \(path): \(String(cString: strerror(errno)))") }
        defer { unlink(temp) }
        let bytes = Array(encode(cosigner).utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced else { throw NoteError("cannot write the key file \(path)") }
        guard link(temp, path) == 0 else {
            if errno == EEXIST, let theirs = try read(path) { return theirs }
            throw NoteError("cannot create the key file \(path): \(String(cString: strerror(errno)))")
        }
        let dfd = open(dir, O_RDONLY)
        if dfd >= 0 { _ = fsync(dfd); close(dfd) }
        return cosigner
    }

    /// The file's line for `cosigner`.
    static func encode(_ cosigner: Cosigner) -> String {
        let key = cosigner.verifierKey.description.split(separator: "+")
        let seed = Data([0x04] + Array(cosigner.key.rawRepresentation)).base64EncodedString()
        return "PRIVATE+KEY+\(cosigner.name)+\(key[1])+\(seed)\n"
    }

    private static func read(_ path: String) throws -> Cosigner? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let bad = NoteError("the key file \(path) is not a witness key (PRIVATE+KEY+<name>+<id>+<base64 key>)")
        guard data.count < 1024, let text = String(data: data, encoding: .utf8) else { throw bad }
        let parts = text.trimmingCharacters(in: .newlines).split(separator: "+", maxSplits: 4, omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "PRIVATE", parts[1] == "KEY",
              let blob = Data(base64Encoded: String(parts[4])), blob.count == 33, blob.first == 0x04 else { throw bad }
        let cosigner = try Cosigner(name: String(parts[2]), seed: Array(blob.dropFirst()))
        guard cosigner.verifierKey.description.split(separator: "+")[1] == parts[3] else { throw bad }
        return cosigner
    }
}
