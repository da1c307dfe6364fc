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
        let (a, b) = RandomBits.shared.next2(), (c, d) = RandomBits.shared.next2()
        return token(a.bigEndianBytes8 + b.bigEndianBytes8 + c.bigEndianBytes8 + d.bigEndianBytes8)
    }
}

extension OTPSecrets {
    /// Six digits from the system CSPRNG, uniform.
    public static func newCode() -> String {
        var g = PooledRandom()
        return code(Int.random(in: 0..<1_000_000, using: &g))
    }
}

/// `RandomBits` as a generator (the standard library's uniform sampling over it).
struct PooledRandom: RandomNumberGenerator {
    mutating func next() -> UInt64 { RandomBits.shared.next2().0 }
}

extension DecisionDraws {
    /// Fresh draws for one decision.
    package init() {
        self.init(id: EventID.random().description, linkToken: LinkToken.random(),
                  nonce: ChallengeNonce.nonce(RandomBits.shared.next2()), code: OTPSecrets.newCode())
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
