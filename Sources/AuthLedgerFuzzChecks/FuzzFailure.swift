/// A property a fuzz check found violated: the fuzz target stops the process on it (a crash
/// libFuzzer keeps as a reproducer); the regression tests record it as an issue.
public struct FuzzFailure: Error, CustomStringConvertible {
    /// What was violated, for whoever reads the crash or the test's issue.
    public let description: String

    /// A failure described by `description`.
    public init(_ description: String) { self.description = description }

    /// Throws a failure described by `message` unless `condition` holds.
    public static func require(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw FuzzFailure(message()) }
    }
}
