/// What a `rename` command says.
public struct Rename: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// The device it is about.
    public var deviceId: String
    /// The new name (trimmed when recorded; 3–50 characters).
    public var name: String

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, deviceId: String, name: String) {
        self.user = user
        self.deviceId = deviceId
        self.name = name
    }
}
