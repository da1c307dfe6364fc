import Foundation

/// openapi.yaml read as text: the few values tests compare with the code (the
/// document's own indentation names them; no YAML library in the test target).
struct OpenAPIDocument {
    let lines: [Substring]

    init() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    }

    /// The lines of the block under the key path `keys` (each key a line `<indent><key>:`, one
    /// level of two spaces deeper than the one before).
    func block(_ keys: [String]) -> ArraySlice<Substring> {
        var from = 0, to = lines.count
        for (depth, key) in keys.enumerated() {
            let head = String(repeating: " ", count: depth * 2) + key + ":"
            guard let i = lines[from..<to].firstIndex(where: { $0 == head || $0.hasPrefix(head + " ") }) else { return [] }
            let indent = depth * 2
            let end = lines[(i + 1)..<to].firstIndex { line in
                !line.isEmpty && line.prefix { $0 == " " }.count <= indent
            } ?? to
            from = i
            to = end
        }
        return lines[from..<to]
    }

    /// The items of a block list (`- item` lines) under `keys`.
    func listItems(_ keys: [String]) -> [String] {
        block(keys).dropFirst().compactMap { line in
            let t = line.trimmingCharacters(in: .whitespaces)
            return t.hasPrefix("- ") ? String(t.dropFirst(2)) : nil
        }
    }

    /// A single-quoted scalar `key: '…'` directly in the block under `keys`, unquoted.
    func quoted(_ keys: [String], _ key: String) -> String? {
        for line in block(keys) {
            let t = line.trimmingCharacters(in: .whitespaces)
            guard t.hasPrefix(key + ": '"), t.hasSuffix("'") else { continue }
            return String(t.dropFirst(key.count + 3).dropLast()).replacingOccurrences(of: "''", with: "'")
        }
        return nil
    }
}
