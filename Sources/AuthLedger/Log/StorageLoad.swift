import AuthLedgerCore

/// What a commit group will read, named before it runs (`StorageBackend.writeGroup`): the
/// projection states of its streams, the `(kind, user, id)` records its events name, the
/// event ids it looks up (with the events found: a duplicate is compared with its
/// original), the meta values it reads (a durable subscription, a feature's meta records),
/// the users it erases (their personal values, the events that carry them and their
/// challenge and OTP records: `user.erased`), and whether it appends (then the Merkle
/// tree's right edge too). A store whose reads are round trips reads nothing else in the
/// group's body: a read not named is a programming error, the request's failure.
package struct StorageLoad {
    package var states: [String] = []
    package var records: [(kind: RecordKind, user: String, id: String)] = []
    package var ids: [EventID] = []
    package var meta: [String] = []
    package var erased: [String] = []
    package var appends = false

    package init() {}

    package var isEmpty: Bool { states.isEmpty && records.isEmpty && ids.isEmpty && meta.isEmpty && erased.isEmpty && !appends }
}

/// What a store knows, at the start of a group's transaction, of the streams other processes
/// appended to since the last group this process committed (`writeGroup`'s `start`).
package struct StreamsChanged: Sendable {
    /// The head this process's last group committed.
    package let since: Head
    /// The streams appended to after it (by another server).
    package let streams: Set<String>

    package init(since: Head, streams: Set<String>) {
        self.since = since
        self.streams = streams
    }
}
