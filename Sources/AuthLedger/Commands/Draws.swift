import AuthLedgerCore

// The random values the log draws for the core (which draws none of its own): event ids,
// link tokens, challenge nonces, OTP codes and the salts of personal values, from the
// kernel's CSPRNG (`RandomBits`).

extension EventID {
    /// A new id: a version 7 UUID of the current time and 74 random bits.
    public static func random() -> EventID {
        EventID(version7: Timestamp.now().milliseconds, bits: RandomBits.shared.next2())
    }
}

extension LinkToken {
    /// A fresh token: 32 bytes from the system CSPRNG, base64url (43 characters).
    public static func random() -> String {
        var g = PooledRandom()
        return random(using: &g)
    }

    /// A token of four words of `g`.
    static func random(using g: inout some RandomNumberGenerator) -> String {
        token((0..<4).flatMap { _ in g.next().bigEndianBytes8 })
    }
}

extension OTPSecrets {
    /// Six digits from the system CSPRNG, uniform.
    public static func newCode() -> String {
        var g = PooledRandom()
        return code(Int.random(in: 0..<1_000_000, using: &g))
    }
}

/// `RandomBits` as a generator (the standard library's uniform sampling over it): the
/// words drawn beforehand, if any, then the shared pool once they are used up (a uniform
/// sample may need more than one).
struct PooledRandom: RandomNumberGenerator {
    var words: [UInt64] = []
    var k = 0
    mutating func next() -> UInt64 {
        defer { k += 1 }
        return k < words.count ? words[k] : RandomBits.shared.next2().0
    }
}

extension DecisionDraws {
    /// Fresh draws for one decision, taken from the pool under one lock (id 2 words, link
    /// token 4, nonce 2, code 1 or more).
    package init() {
        var w = PooledRandom(words: RandomBits.shared.next(10))
        let id = EventID(version7: Timestamp.now().milliseconds, bits: (w.next(), w.next()))
        let token = LinkToken.random(using: &w)
        let nonce = ChallengeNonce.nonce((w.next(), w.next()))
        self.init(id: id.description, linkToken: token, nonce: nonce, code: OTPSecrets.code(Int.random(in: 0..<1_000_000, using: &w)))
    }
}

extension PersonalData {
    /// A fresh salt: 16 bytes from the system CSPRNG, base64url without padding.
    public static func newSalt() -> String { salt(RandomBits.shared.next2()) }

    /// `seal` with fresh salts from the system CSPRNG for values without a disclosure.
    package static func seal(_ e: inout Event, disclosures: StringMap?) throws(LedgerError) {
        try seal(&e, disclosures: disclosures, newSalt: newSalt)
    }

    /// `sealWithNewSalts` with salts from the system CSPRNG.
    package static func sealWithNewSalts(_ e: inout Event) {
        sealWithNewSalts(&e, newSalt: newSalt)
    }
}
