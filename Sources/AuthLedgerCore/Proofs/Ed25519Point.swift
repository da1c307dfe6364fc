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
        var limbs: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &limbs) { out in
            for i in 0..<32 { out[i] = bytes[i] }
        }
        let l = (UInt64(littleEndian: limbs.0), UInt64(littleEndian: limbs.1), UInt64(littleEndian: limbs.2),
                 UInt64(littleEndian: limbs.3) & 0x7FFF_FFFF_FFFF_FFFF)
        let sign = UInt64(littleEndian: limbs.3) >> 63
        // y < p = 2^255 − 19: every limb at its maximum and the lowest ≥ 2^64 − 19 is p or more.
        if l.3 == 0x7FFF_FFFF_FFFF_FFFF && l.2 == .max && l.1 == .max && l.0 >= 0xFFFF_FFFF_FFFF_FFED { return .notCanonical }
        let y = Field25519(l)
        let y2 = y.squared()
        let u = y2 - .one                      // y² − 1
        let v = Field25519.d * y2 + .one       // d·y² + 1, never 0: −1/d is not a square
        if u.isZero {
            // y = ±1: x = 0, whose sign bit must be 0 (and both points are of small order).
            return sign == 1 ? .notCanonical : .smallOrder
        }
        // u/v is a square iff u·v is (v² is one): Euler's criterion, (u·v)^((p−1)/2) = 1.
        guard (u * v).powerHalfPMinus1().isOne else { return .notOnCurve }
        // The other small-order points: y = 0 and y = ±Y₈ (y is canonical: compared as stored).
        let y8: (UInt64, UInt64, UInt64, UInt64) = (0x4FD8_4D3D_706A_17C7, 0x0F67_100D_760B_3CBA, 0xC6CC_392C_FA53_202A, 0x7A03_AC92_77FD_C74E)
        let minusY8: (UInt64, UInt64, UInt64, UInt64) = (0xB027_B2C2_8F95_E826, 0xF098_EFF2_89F4_C345, 0x3933_C6D3_05AC_DFD5, 0x05FC_536D_8802_38B1)
        if l == (0, 0, 0, 0) || l == y8 || l == minusY8 { return .smallOrder }
        return nil
    }
}

/// An element of the field modulo p = 2^255 − 19 on five 51-bit limbs (least significant
/// first), products on `UInt128` (the representation of ref10 and curve25519-donna). Only
/// what `Ed25519Point` needs: sums, differences, products, squares, the power (p − 1)/2, and
/// comparisons with 0 and 1. Inline limbs: a check's power of about 500 products allocates
/// nothing and costs a few microseconds.
struct Field25519 {
    var h: (UInt64, UInt64, UInt64, UInt64, UInt64)

    private static let mask: UInt64 = (1 << 51) - 1

    init(limbs: (UInt64, UInt64, UInt64, UInt64, UInt64)) { h = limbs }

    /// From four 64-bit limbs of a value below 2^255.
    init(_ l: (UInt64, UInt64, UInt64, UInt64)) {
        let m = Self.mask
        h = (l.0 & m, (l.0 >> 51 | l.1 << 13) & m, (l.1 >> 38 | l.2 << 26) & m, (l.2 >> 25 | l.3 << 39) & m, l.3 >> 12)
    }

    static let one = Field25519(limbs: (1, 0, 0, 0, 0))
    /// d = −121665 / 121666 mod p (RFC 8032 section 5.1).
    static let d = Field25519((0x75EB_4DCA_1359_78A3, 0x0070_0A4D_4141_D8AB, 0x8CC7_4079_7779_E898, 0x5203_6CEE_2B6F_FE73))

    static func + (a: Field25519, b: Field25519) -> Field25519 {
        Field25519(limbs: (a.h.0 + b.h.0, a.h.1 + b.h.1, a.h.2 + b.h.2, a.h.3 + b.h.3, a.h.4 + b.h.4)).carried()
    }

    /// a − b, as a + 2p − b (limbs of a product's or sum's result are below 2^52, 2p's above).
    static func - (a: Field25519, b: Field25519) -> Field25519 {
        let p0: UInt64 = 0xF_FFFF_FFFF_FFDA, p: UInt64 = 0xF_FFFF_FFFF_FFFE
        return Field25519(limbs: (a.h.0 + p0 - b.h.0, a.h.1 + p - b.h.1, a.h.2 + p - b.h.2, a.h.3 + p - b.h.3, a.h.4 + p - b.h.4)).carried()
    }

    static func * (a: Field25519, b: Field25519) -> Field25519 {
        let (f0, f1, f2, f3, f4) = (UInt128(a.h.0), UInt128(a.h.1), UInt128(a.h.2), UInt128(a.h.3), UInt128(a.h.4))
        let (g0, g1, g2, g3, g4) = (UInt128(b.h.0), UInt128(b.h.1), UInt128(b.h.2), UInt128(b.h.3), UInt128(b.h.4))
        let (g1x, g2x, g3x, g4x) = (19 * g1, 19 * g2, 19 * g3, 19 * g4)
        let r0 = f0 * g0 + f1 * g4x + f2 * g3x + f3 * g2x + f4 * g1x
        let r1 = f0 * g1 + f1 * g0 + f2 * g4x + f3 * g3x + f4 * g2x
        let r2 = f0 * g2 + f1 * g1 + f2 * g0 + f3 * g4x + f4 * g3x
        let r3 = f0 * g3 + f1 * g2 + f2 * g1 + f3 * g0 + f4 * g4x
        let r4 = f0 * g4 + f1 * g3 + f2 * g2 + f3 * g1 + f4 * g0
        return reduce(r0, r1, r2, r3, r4)
    }

    func squared() -> Field25519 { self * self }

    /// Five wide limbs carried down to limbs below 2^51 (and a little over in the lowest).
    private static func reduce(_ r0: UInt128, _ r1: UInt128, _ r2: UInt128, _ r3: UInt128, _ r4: UInt128) -> Field25519 {
        let m = UInt128(mask)
        var c = r0 >> 51
        let h0 = r0 & m
        let s1 = r1 + c; c = s1 >> 51
        let s2 = r2 + c; let h1 = s1 & m; c = s2 >> 51
        let s3 = r3 + c; let h2 = s2 & m; c = s3 >> 51
        let s4 = r4 + c; let h3 = s3 & m; c = s4 >> 51
        let h4 = s4 & m
        let l0 = h0 + c * 19
        return Field25519(limbs: (UInt64(l0 & m), UInt64(h1 + (l0 >> 51)), UInt64(h2), UInt64(h3), UInt64(h4)))
    }

    private func carried() -> Field25519 {
        Field25519.reduce(UInt128(h.0), UInt128(h.1), UInt128(h.2), UInt128(h.3), UInt128(h.4))
    }

    /// The value below p, as limbs (ref10's `fe_tobytes`): the quotient by p is 0 or 1 once
    /// the limbs are carried.
    private var canonical: (UInt64, UInt64, UInt64, UInt64, UInt64) {
        let m = Field25519.mask
        let c = carried().h
        var q = (c.0 + 19) >> 51
        q = (c.1 + q) >> 51
        q = (c.2 + q) >> 51
        q = (c.3 + q) >> 51
        q = (c.4 + q) >> 51
        var t0 = c.0 + 19 * q
        var t1 = c.1 + (t0 >> 51); t0 &= m
        var t2 = c.2 + (t1 >> 51); t1 &= m
        var t3 = c.3 + (t2 >> 51); t2 &= m
        var t4 = c.4 + (t3 >> 51); t3 &= m
        t4 &= m
        return (t0, t1, t2, t3, t4)
    }

    var isZero: Bool { canonical == (0, 0, 0, 0, 0) }
    var isOne: Bool { canonical == (1, 0, 0, 0, 0) }

    /// self squared `n` times: self^(2^n).
    private func squared(times n: Int) -> Field25519 {
        var r = self
        for _ in 0..<n { r = r.squared() }
        return r
    }

    /// self^((p − 1)/2) = self^(2^254 − 10) = (self^(2^252 − 3))^4 · self², the first by
    /// ref10's addition chain (`fe_pow22523`): 254 squarings and 12 products.
    func powerHalfPMinus1() -> Field25519 {
        let z2 = squared()
        let z9 = self * z2.squared(times: 2)
        let z11 = z2 * z9
        let e5 = z9 * z11.squared()                   // 2^5 − 1
        let e10 = e5.squared(times: 5) * e5           // 2^10 − 1
        let e20 = e10.squared(times: 10) * e10        // 2^20 − 1
        let e40 = e20.squared(times: 20) * e20        // 2^40 − 1
        let e50 = e40.squared(times: 10) * e10        // 2^50 − 1
        let e100 = e50.squared(times: 50) * e50       // 2^100 − 1
        let e200 = e100.squared(times: 100) * e100    // 2^200 − 1
        let e250 = e200.squared(times: 50) * e50      // 2^250 − 1
        let e252m3 = e250.squared(times: 2) * self    // 2^252 − 3
        return e252m3.squared(times: 2) * z2
    }
}
