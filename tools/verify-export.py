#!/usr/bin/env python3
"""Independently re-verify an AuthLedger export (docs/REFERENCE.md §1.2): authledger export | tools/verify-export.py

leaf = SHA-256(0x00 || JCS(event without prev and hash)); hash = SHA-256(prev || leaf).
Python's json.dumps with sorted keys and no white space is RFC 8785 for the ledger's
events (strings, integers, booleans; keys compared as UTF-16 for non-BMP characters).
"""
import hashlib, json, sys

def jcs(value):
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: kv[0].encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + jcs(v) for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)

prev, n = "0" * 64, 0
for line in sys.stdin:
    if not line.strip():
        continue
    e = json.loads(line)
    n += 1
    if e["seq"] != n or e["prev"] != prev:
        sys.exit(f"chain broken at seq {e['seq']}")
    body = {k: v for k, v in e.items() if k not in ("prev", "hash")}
    leaf = hashlib.sha256(b"\x00" + jcs(body).encode("utf-8")).digest()
    h = hashlib.sha256(bytes.fromhex(prev) + leaf).hexdigest()
    if h != e["hash"]:
        sys.exit(f"hash mismatch at seq {e['seq']}")
    prev = h
print(f"ok: {n} events, head {prev}")
