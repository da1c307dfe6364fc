/// Whether 32 bytes are an Ed25519 public key a signature can be checked against: the
/// encoding of a point of edwards25519 (RFC 8032 section 5.1.3) that is not of small order.
///
/// Hand-written because nothing at hand checks it: swift-crypto's
/// `Curve25519.Signing.PublicKey(rawRepresentation:)` checks only the length (BoringSSL
/// decodes the point when a signature is verified, and then only says "invalid"), and no
/// listed package decodes an edwards25519 point. The check is the decoding's own arithmetic
/// modulo p = 2^255 − 19, with no secret involved (public keys only), so it needs neither
/// constant time nor a general big-integer library.
///
/// Refused:
/// - a `y` of p or more (a non-canonical encoding, RFC 8032 decoding step 1 — this covers
///   the non-canonical encodings of small-order points, `y` from p to 2^255 − 1);
/// - a `y` for which x² = (y² − 1) / (d·y² + 1) has no root modulo p (not a point);
/// - x = 0 with the sign bit set (y = ±1: a non-canonical encoding);
/// - the eight points of order dividing 8 (`y` is 1, p − 1, 0 or ±Y₈, either sign of x): with
///   such a key, a signature whose `R` is small-order too verifies for any message.
public enum Ed25519Point {
    /// Why bytes are not a usable Ed25519 public key.
    public enum Problem: Sendable, Equatable, CustomStringConvertible {
        /// Not 32 bytes, `y` ≥ p, or x = 0 with the sign bit set.
        case notCanonical
        /// No point of the curve has this `y`.
        case notOnCurve
        /// A point of order 1, 2, 4 or 8.
        case smallOrder

        /// The refusal's wording, after the key's name ("… is not a point of the Ed25519 curve").
        public var description: String {
            switch self {
            case .notCanonical: "is not a canonical encoding of an Ed25519 point"
            case .notOnCurve: "is not a point of the Ed25519 curve"
            case .smallOrder: "is a small-order point of Ed25519 (a key any signature could match)"
            }
        }
    }

    /// nil when `bytes` are a canonical encoding of a point of edwards25519 not of small order.
    public static func problem(_ bytes: [UInt8]) -> Problem? {
        guard bytes.count == 32 else { return .notCanonical }
        var limbs = [UInt64](repeating: 0, count: 4)
        for i in 0..<32 { limbs[i / 8] |= UInt64(bytes[i]) << (8 * UInt64(i % 8)) }
        let sign = limbs[3] >> 63
        limbs[3] &= 0x7FFF_FFFF_FFFF_FFFF
        let y = Field25519(limbs)
        guard y < Field25519.p else { return .notCanonical }
        let y2 = (y * y).reduced()
        let u = y2 - .one                      // y² − 1
        let v = (Field25519.d * y2).reduced() + .one  // d·y² + 1, never 0: −1/d is not a square
        if u == .zero {
            // y = ±1: x = 0, whose sign bit must be 0 (and both points are of small order).
            return sign == 1 ? .notCanonical : .smallOrder
        }
        // u/v is a square iff u·v is (v² is one): Euler's criterion, (u·v)^((p−1)/2) = 1.
        guard (u * v).reduced().power(Field25519.halfPMinus1) == .one else { return .notOnCurve }
        if y == .zero || y == Field25519.p - .one || y == Field25519.y8 || y == Field25519.p - Field25519.y8 {
            return .smallOrder
        }
        return nil
    }
}

/// An integer below 2^256 on four 64-bit limbs (least significant first); `reduced()` brings
/// it below p = 2^255 − 19. Only what `Ed25519Point` needs: products, powers, and sums and
/// differences of reduced values.
struct Field25519: Equatable, Comparable {
    var l: [UInt64]

    init(_ limbs: [UInt64]) { l = limbs }

    static let zero = Field25519([0, 0, 0, 0])
    static let one = Field25519([1, 0, 0, 0])
    /// 2^255 − 19.
    static let p = Field25519([0xFFFF_FFFF_FFFF_FFED, .max, .max, 0x7FFF_FFFF_FFFF_FFFF])
    /// (p − 1) / 2 = 2^254 − 10.
    static let halfPMinus1 = Field25519([0xFFFF_FFFF_FFFF_FFF6, .max, .max, 0x3FFF_FFFF_FFFF_FFFF])
    /// d = −121665 / 121666 mod p (RFC 8032 section 5.1).
    static let d = Field25519([0x75EB_4DCA_1359_78A3, 0x0070_0A4D_4141_D8AB, 0x8CC7_4079_7779_E898, 0x5203_6CEE_2B6F_FE73])
    /// The `y` of two of the four points of order 8 (the other two have p − Y₈).
    static let y8 = Field25519([0x4FD8_4D3D_706A_17C7, 0x0F67_100D_760B_3CBA, 0xC6CC_392C_FA53_202A, 0x7A03_AC92_77FD_C74E])

    static func < (a: Field25519, b: Field25519) -> Bool {
        for i in (0..<4).reversed() where a.l[i] != b.l[i] { return a.l[i] < b.l[i] }
        return false
    }

    /// The product modulo p (below 2^256, not always below p): 2^256 ≡ 38.
    static func * (a: Field25519, b: Field25519) -> Field25519 {
        var t = [UInt64](repeating: 0, count: 8)
        for i in 0..<4 {
            var carry: UInt64 = 0
            for j in 0..<4 {
                let (hi, lo) = a.l[i].multipliedFullWidth(by: b.l[j])
                let (s1, o1) = lo.addingReportingOverflow(t[i + j])
                let (s2, o2) = s1.addingReportingOverflow(carry)
                t[i + j] = s2
                carry = hi &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0)  // hi ≤ 2^64 − 2: no overflow
            }
            t[i + 4] = carry
        }
        var r = [UInt64](repeating: 0, count: 4)
        var carry: UInt64 = 0
        for k in 0..<4 {
            let (hi, lo) = t[k + 4].multipliedFullWidth(by: 38)
            let (s1, o1) = lo.addingReportingOverflow(t[k])
            let (s2, o2) = s1.addingReportingOverflow(carry)
            r[k] = s2
            carry = hi &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0)
        }
        // carry·2^256 ≡ carry·38 (carry ≤ 38): fold it in, and once more if that overflows.
        var fold = carry &* 38
        while fold != 0 {
            var c = fold
            for k in 0..<4 {
                let (s, o) = r[k].addingReportingOverflow(c)
                r[k] = s
                c = o ? 1 : 0
            }
            fold = c &* 38
        }
        return Field25519(r)
    }

    /// The value below p (a value below 2^256 is less than 3p).
    func reduced() -> Field25519 {
        var x = self
        while !(x < Self.p) { x = x.subtracting(Self.p) }
        return x
    }

    /// self − b for self ≥ b.
    private func subtracting(_ b: Field25519) -> Field25519 {
        var r = [UInt64](repeating: 0, count: 4)
        var borrow: UInt64 = 0
        for k in 0..<4 {
            let (s1, o1) = l[k].subtractingReportingOverflow(b.l[k])
            let (s2, o2) = s1.subtractingReportingOverflow(borrow)
            r[k] = s2
            borrow = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
        return Field25519(r)
    }

    /// a − b modulo p, both reduced; reduced.
    static func - (a: Field25519, b: Field25519) -> Field25519 {
        a < b ? a.adding(p).subtracting(b) : a.subtracting(b)
    }

    /// a + b modulo p, both reduced; reduced.
    static func + (a: Field25519, b: Field25519) -> Field25519 { a.adding(b).reduced() }

    /// self + b without reduction (both below p: no overflow of 2^256).
    private func adding(_ b: Field25519) -> Field25519 {
        var r = [UInt64](repeating: 0, count: 4)
        var carry: UInt64 = 0
        for k in 0..<4 {
            let (s1, o1) = l[k].addingReportingOverflow(b.l[k])
            let (s2, o2) = s1.addingReportingOverflow(carry)
            r[k] = s2
            carry = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
        return Field25519(r)
    }

    /// self^e modulo p, reduced (square and multiply, from the top bit).
    func power(_ e: Field25519) -> Field25519 {
        var r = Field25519.one
        for i in (0..<256).reversed() {
            r = r * r
            if (e.l[i / 64] >> UInt64(i % 64)) & 1 == 1 { r = r * self }
        }
        return r.reduced()
    }
}
