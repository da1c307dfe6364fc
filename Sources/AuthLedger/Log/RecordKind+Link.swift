import AuthLedgerCore

extension RecordKind {
    /// The owner a record is stored under: its user, except for links, which are found by
    /// their hash alone (the empty owner, which no user key can be).
    package func owner(_ user: String) -> String { self == .link ? "" : user }
}

/// The stored value of a link index entry: the user, the link hash and the request's id.
enum LinkRecordCodec {
    static func encode(user: String, linkHash: String, verificationId: String) -> [UInt8] {
        var w = ByteWriter(capacity: 64 + user.utf8.count + verificationId.utf8.count)
        w.string(user); w.string(linkHash); w.string(verificationId)
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> (user: String, linkHash: String, verificationId: String) {
        try bytes.withUnsafeBytes { b in
            var r = ByteReader(b)
            let out = (user: try r.string(), linkHash: try r.string(), verificationId: try r.string())
            guard r.atEnd else { throw ByteReader.Corrupt() }
            return out
        }
    }
}
