#!/usr/bin/env python3
"""Independently re-verify an AuthLedger export (docs/REFERENCE.md §1.2): authledger export | tools/verify-export.py [--rfc8785]

hashed form: the event without prev, hash and disclosures, each disclosed personal value
(a JSON pointer in "disclosures", with its salt) replaced by {"_sd": base64url(SHA-256(JCS([salt, value])))};
erased values already appear as those commitments.
leaf = SHA-256(0x00 || JCS(hashed form)); hash = SHA-256(prev || leaf).
JCS: Python's json with sorted keys and no white space is RFC 8785 for the ledger's events
(strings, integers, booleans; keys compared as UTF-16); --rfc8785 uses the PyPI package instead.
"""
import base64, hashlib, json, sys

def jcs(value):
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: kv[0].encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + jcs(v) for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)

canonical = lambda v: jcs(v).encode("utf-8")
if "--rfc8785" in sys.argv[1:]:
    import rfc8785
    canonical = rfc8785.dumps

def commitment(salt, value):
    digest = hashlib.sha256(canonical([salt, value])).digest()
    return {"_sd": base64.urlsafe_b64encode(digest).rstrip(b"=").decode()}

def replace(event, pointer, salt):
    *path, last = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    parent = event
    for token in path:
        parent = parent[token]
    parent[last] = commitment(salt, parent[last])

prev, n = "0" * 64, 0
for line in sys.stdin:
    if not line.strip():
        continue
    e = json.loads(line)
    n += 1
    if e["seq"] != n or e["prev"] != prev:
        sys.exit(f"chain broken at seq {e['seq']}")
    body = {k: v for k, v in e.items() if k not in ("prev", "hash", "disclosures")}
    for pointer, salt in e.get("disclosures", {}).items():
        replace(body, pointer, salt)
    leaf = hashlib.sha256(b"\x00" + canonical(body)).digest()
    h = hashlib.sha256(bytes.fromhex(prev) + leaf).hexdigest()
    if h != e["hash"]:
        sys.exit(f"hash mismatch at seq {e['seq']}")
    prev = h
print(f"ok: {n} events, head {prev}")
