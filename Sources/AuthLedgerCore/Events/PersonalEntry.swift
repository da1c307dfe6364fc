/// One personal value of an event (SPEC 1.5): where it is (a JSON pointer), the
/// commitment that is hashed in its place, and its salt while it is disclosed.
public struct PersonalEntry: Equatable, Sendable {
    /// RFC 6901 pointer into the recorded event, e.g. `/data/name`, `/data/context/ip`, `/meta/ip`.
    public var pointer: String
    /// `base64url(SHA-256(JCS([salt, value])))`: the SD-JWT disclosure digest.
    public var digest: String
    /// The salt; nil once the value was erased (the value is then absent from the event).
    public var salt: String?

    /// An entry with these values; nil `salt` for an erased value.
    public init(pointer: String, digest: String, salt: String?) {
        self.pointer = pointer
        self.digest = digest
        self.salt = salt
    }
}
