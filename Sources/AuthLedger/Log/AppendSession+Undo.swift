import AuthLedgerCore

/// The undo log: a refused request's changes to the cache are rolled back.
extension AppendSession {
    /// Marks the start of a request whose cached changes may have to be undone.
    func beginRequest() throws {
        savedHead = head
        savedDirty = (dirtyUsers, systemDirty)
        savedTree = tree
        savedLeaves = streamLeaves.count
        undoUsers = [:]
        undoSystem = nil
        inRequest = true
    }

    /// Ends the request; when it was refused, its cached changes are rolled back
    /// (its writes were in a nested transaction that was aborted).
    func endRequest(committed: Bool) {
        if !committed {
            for (user, old) in undoUsers { users[user] = old }
            if let old = undoSystem { system = old }
            head = savedHead
            tree = savedTree
            streamLeaves.removeSubrange(savedLeaves...)
            (dirtyUsers, systemDirty) = savedDirty
        }
        undoUsers = [:]
        undoSystem = nil
        inRequest = false
    }
}
