#!/usr/bin/env python3
"""Checks the claims of Fixtures/keys/ed25519-points.json with an implementation of its own,
in Python's integers (RFC 8032 section 5.1.3 decoding and the curve's addition law), so the
test vectors of the ledger's Ed25519 key check (Sources/AuthLedgerCore/Proofs/Ed25519Point.swift)
are not justified by the code they test.

usage: tools/ed25519-points.py [FILE]    exit 0 when every vector is what it claims:
  "point"        a canonical encoding of a point of order greater than 8
  "notCanonical" y >= p, or x = 0 with the sign bit set
  "notOnCurve"   y < p and (y^2 - 1) / (d y^2 + 1) has no square root modulo p
  "smallOrder"   a canonical encoding of a point P with [8]P the neutral element
"""
import json, os, sys

p = 2**255 - 19
d = -121665 * pow(121666, p - 2, p) % p
sqrt_m1 = pow(2, (p - 1) // 4, p)


def classify(encoding):
    """RFC 8032 5.1.3, step by step, then the order of the point."""
    b = bytes.fromhex(encoding)
    if len(b) != 32:
        return "notCanonical"
    n = int.from_bytes(b, "little")
    sign, y = n >> 255, n & ((1 << 255) - 1)
    if y >= p:
        return "notCanonical"
    u, v = (y * y - 1) % p, (d * y * y + 1) % p
    x = u * pow(v, 3, p) * pow(u * pow(v, 7, p), (p - 5) // 8, p) % p
    if v * x * x % p == u:
        pass
    elif v * x * x % p == (-u) % p:
        x = x * sqrt_m1 % p
    else:
        return "notOnCurve"
    if x == 0 and sign == 1:
        return "notCanonical"
    if x & 1 != sign:
        x = p - x
    assert (-x * x + y * y - 1 - d * x * x * y * y) % p == 0, "decoded a point off the curve"
    point = (x, y)
    for _ in range(3):
        point = add(point, point)
    return "smallOrder" if point == (0, 1) else "point"


def add(P, Q):
    """The complete twisted Edwards addition law (a = -1) in affine coordinates."""
    (x1, y1), (x2, y2) = P, Q
    t = d * x1 * x2 * y1 * y2 % p
    x3 = (x1 * y2 + x2 * y1) * pow(1 + t, p - 2, p) % p
    y3 = (y1 * y2 + x1 * x2) * pow(1 - t, p - 2, p) % p
    return (x3, y3)


def main(args):
    path = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "Fixtures", "keys", "ed25519-points.json")
    with open(path) as f:
        vectors = json.load(f)
    wrong = [v for v in vectors if classify(v["hex"]) != v["claim"]]
    for v in wrong:
        print(f"ed25519-points: {v['name']}: claims {v['claim']}, is {classify(v['hex'])}", file=sys.stderr)
    counts = {}
    for v in vectors:
        counts[v["claim"]] = counts.get(v["claim"], 0) + 1
    if wrong:
        return 1
    print(f"ok: {len(vectors)} vectors ({', '.join(f'{n} {c}' for c, n in sorted(counts.items()))})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
