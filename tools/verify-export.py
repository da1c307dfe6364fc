#!/usr/bin/env python3
"""Independently re-verify an AuthLedger export (docs/REFERENCE.md §1.2): authledger export | tools/verify-export.py [--rfc8785]

hash = SHA-256(prev || leaf), leaf as tools/ledgerhash.py defines it (the hashed form, with
disclosed personal values replaced by their commitments); --rfc8785 canonicalizes with the
PyPI package rfc8785 instead of the few lines of JCS there. Every device proof (§11: signed
approvals and denials, key rotations) is re-checked too, with PyPI cryptography (tools/ledgerproofs.py).
"""
import hashlib, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledgerhash import leaf_hash, use_rfc8785
from ledgerproofs import ProofChecker

if "--rfc8785" in sys.argv[1:]:
    use_rfc8785()

prev, n = "0" * 64, 0
proofs = ProofChecker()
for line in sys.stdin:
    if not line.strip():
        continue
    e = json.loads(line)
    n += 1
    if e["seq"] != n or e["prev"] != prev:
        sys.exit(f"chain broken at seq {e['seq']}")
    h = hashlib.sha256(bytes.fromhex(prev) + leaf_hash(e)).hexdigest()
    if h != e["hash"]:
        sys.exit(f"hash mismatch at seq {e['seq']}")
    bad = proofs.check(e)
    if bad:
        sys.exit(f"{bad} at seq {e['seq']}")
    prev = h
print(f"ok: {n} events, head {prev}" + (f", {proofs.count} signatures" if proofs.count else ""))
