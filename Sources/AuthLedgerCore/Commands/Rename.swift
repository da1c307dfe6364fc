/// What a `rename` command says.
public struct Rename: Sendable, Equatable {
    public var user: String
    public var deviceId: String
    /// The new name (trimmed when recorded; 3–50 characters).
    public var name: String

    public init(user: String, deviceId: String, name: String) {
        self.user = user
        self.deviceId = deviceId
        self.name = name
    }
}
