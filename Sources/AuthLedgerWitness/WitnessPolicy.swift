/// A C2SP `tlog-policy` file: the witnesses (`witness <name> <vkey> [<url>]`), groups
/// (`group <name> all|any|<k> <member>…`), the quorum (`quorum <name>`, exactly one;
/// `none` needs no cosignature) and logs (`log <vkey> [<url>]`). Items are separated by
/// spaces and tabs; blank lines and lines starting with `#` are ignored; a group or the
/// quorum names only witnesses and groups defined on earlier lines.
public struct WitnessPolicy: Sendable {
    /// A `witness` line.
    public struct Witness: Sendable, Equatable {
        /// The policy's own label for it (groups and the quorum use it).
        public let label: String
        /// Its `cosignature/v1` verifier key (whose name is on its cosignature lines).
        public let key: NoteVerifierKey
        /// Its submission prefix (`<url>/add-checkpoint`), if given.
        public let url: String?
    }

    indirect enum Rule: Sendable {
        case none
        case witness(Int)
        case group(threshold: Int, members: [Rule])
    }

    /// The witnesses, in file order.
    public let witnesses: [Witness]
    /// The logs' verifier keys (`log` lines), in file order.
    public let logs: [NoteVerifierKey]
    let quorum: Rule

    /// Parses a policy file. Throws ``NoteError`` with the 1-based line of the first problem.
    public init(parsing text: String) throws {
        var witnesses: [Witness] = []
        var logs: [NoteVerifierKey] = []
        var names: [String: Rule] = ["none": .none]
        var quorum: Rule?
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = index + 1
            func fail(_ message: String) -> NoteError { NoteError(message, line: line) }
            guard !raw.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else {
                throw fail("control characters other than tab are not allowed")
            }
            let items = raw.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let keyword = items.first, !keyword.hasPrefix("#") else { continue }
            func define(_ name: String, _ rule: Rule) throws {
                guard names[name] == nil else { throw fail("'\(name)' is already defined") }
                names[name] = rule
            }
            func key(_ text: String, type: UInt8, what: String) throws -> NoteVerifierKey {
                let k: NoteVerifierKey
                do { k = try NoteVerifierKey(parsing: text) } catch let e as NoteError { throw fail("\(what): \(e.message)") }
                guard k.type == type else { throw fail("\(what) must be of type 0x0\(type)") }
                return k
            }
            switch keyword {
            case "log":
                guard items.count == 2 || items.count == 3 else { throw fail("expected 'log <vkey> [<url>]'") }
                let k = try key(items[1], type: NoteVerifierKey.ed25519, what: "the log key")
                guard !logs.contains(where: { $0.publicKey == k.publicKey }) else { throw fail("duplicate log key") }
                logs.append(k)
            case "witness":
                guard items.count == 3 || items.count == 4 else { throw fail("expected 'witness <name> <vkey> [<url>]'") }
                let k = try key(items[2], type: NoteVerifierKey.cosignatureV1, what: "the witness key")
                guard !witnesses.contains(where: { $0.key.publicKey == k.publicKey }) else { throw fail("duplicate witness key") }
                try define(items[1], .witness(witnesses.count))
                witnesses.append(Witness(label: items[1], key: k, url: items.count == 4 ? items[3] : nil))
            case "group":
                guard items.count >= 4 else { throw fail("expected 'group <name> all|any|<k> <member>…'") }
                let members = Array(items[3...])
                guard Set(members).count == members.count else { throw fail("a group lists each member at most once") }
                let rules = try members.map { m -> Rule in
                    guard m != "none", let r = names[m] else { throw fail("'\(m)' is not a witness or group defined above") }
                    return r
                }
                let k: Int
                switch items[2] {
                case "all": k = members.count
                case "any": k = 1
                default:
                    guard items[2].utf8.allSatisfy({ (48...57).contains($0) }), items[2].first != "0",
                          let n = Int(items[2]), n >= 1, n <= members.count else {
                        throw fail("the threshold is all, any or a number from 1 to the number of members")
                    }
                    k = n
                }
                try define(items[1], .group(threshold: k, members: rules))
            case "quorum":
                guard items.count == 2 else { throw fail("expected 'quorum <name>'") }
                guard quorum == nil else { throw fail("a policy has exactly one quorum line") }
                guard let r = names[items[1]] else { throw fail("'\(items[1])' is not a witness or group defined above") }
                quorum = r
            default:
                throw fail("unknown keyword '\(keyword)' (log, witness, group, quorum)")
            }
        }
        guard let quorum else { throw NoteError("the policy has no quorum line") }
        self.witnesses = witnesses
        self.logs = logs
        self.quorum = quorum
    }

    /// Whether the witnesses at these indexes (of ``witnesses``) meet the quorum.
    public func isMet(byWitnessesAt cosigned: Set<Int>) -> Bool {
        func met(_ r: Rule) -> Bool {
            switch r {
            case .none: true
            case .witness(let i): cosigned.contains(i)
            case .group(let k, let members): members.lazy.filter(met).count >= k
            }
        }
        return met(quorum)
    }

    /// The indexes of the witnesses with a valid `cosignature/v1` on `note`.
    public func cosigners(of note: SignedNote) -> Set<Int> {
        Set(witnesses.indices.filter { !note.cosignatures(by: witnesses[$0].key).isEmpty })
    }

    /// Whether `note` carries valid cosignatures meeting the quorum.
    public func isMet(by note: SignedNote) -> Bool { isMet(byWitnessesAt: cosigners(of: note)) }
}
