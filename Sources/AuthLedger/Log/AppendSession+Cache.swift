import AuthLedgerCore

/// The cache of the states and stream heads of the streams a transaction touches.
extension AppendSession {
    /// Starts from states cached by the previous transaction of this writer. Only
    /// valid when nothing was committed since (the caller compares heads): the cache
    /// then equals the stored projections, and saves decoding them again.
    func adopt(users cached: inout [String: UserState], streams cachedStreams: inout [String: StreamHead], system cachedSystem: SystemState?) {
        swap(&users, &cached)
        swap(&streams, &cachedStreams)
        system = cachedSystem
    }

    func userState(_ user: String) throws -> UserState {
        try loadUser(user)
        return users[user]!
    }

    /// Makes sure the user's state is cached, without copying it out (a copy
    /// retains every string and dictionary of the state); returns where it is.
    @discardableResult
    func loadUser(_ user: String) throws -> [String: UserState].Index {
        if let i = users.index(forKey: user) { return i }
        let bytes = try w.projectionState(user)
        users[user] = try bytes.map { bytes in
            try bytes.withUnsafeBytes { try StateCodec.decode($0, user: user) }
        } ?? UserState(user: user)
        let head = try bytes.map { b in try b.withUnsafeBytes { try StateCodec.decodeStream($0).head } } ?? .start
        if foldsInPipeline { loadedHeads.append((user, head)) } else { streams[user] = head }
        return users.index(forKey: user)!
    }

    /// Runs `body` on the cached state of `user` (loaded), in place: through the
    /// dictionary's values at the state's index, the state is neither copied nor moved out.
    func withUser<T>(_ user: String, _ body: (inout UserState) throws -> T) throws -> T {
        let i = try loadUser(user)
        return try body(&users.values[i])
    }

    func systemState() throws -> SystemState {
        if let s = system { return s }
        let s = try w.projectionState(systemStream).map { b in try b.withUnsafeBytes { try StateCodec.decodeSystem($0) } } ?? SystemState()
        system = s
        return s
    }

    func setSystem(_ s: SystemState) {
        if inRequest && undoSystem == nil { undoSystem = .some(system) }
        system = s
        systemDirty = true
    }
}
