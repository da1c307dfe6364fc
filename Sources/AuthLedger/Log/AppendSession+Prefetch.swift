import AuthLedgerCore

extension AppendSession {
    /// Asks the store to read ahead, in one go, what appending `inputs` will read that is not
    /// cached here: the users' projection states, the records their events name, their
    /// event ids (`StorageReader.prefetch`; LMDB ignores it, PostgreSQL saves a round trip
    /// per read). Only reads ahead: the rules still read each value where they did.
    func prefetch(_ inputs: [EventInput]) throws {
        guard w.readsAhead else { return }
        var states: [String] = [], records: [(RecordKind, String, String)] = [], ids: [EventID] = []
        if system == nil { states.append(systemStream) }
        for input in inputs {
            let e = input.event
            if let id = e.id { ids.append(id) }
            guard let user = e.user else { continue }
            // (Looked up in place: a copy of a state retains every string and dictionary in it.)
            let cached = users.index(forKey: user)
            if cached == nil { states.append(user) }
            for (kind, id) in UserState.recordIds(of: e) where cached.map({ !users.values[$0].hasRecord(kind, id) }) ?? true {
                records.append((kind, user, id))
            }
        }
        if states.count > (system == nil ? 1 : 0) || !records.isEmpty || !ids.isEmpty {
            try w.prefetch(states: states, records: records, ids: ids)
        }
    }
}
