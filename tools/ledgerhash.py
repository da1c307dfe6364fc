"""How an AuthLedger event is hashed (docs/REFERENCE.md §1.2), for the offline verifiers
tools/verify-export.py and tools/verify-proof.py (one definition, imported by both).

hashed form: the event without prev, hash and disclosures, each disclosed personal value
(a JSON pointer in "disclosures", with its salt) replaced by {"_sd": base64url(SHA-256(JCS([salt, value])))};
erased values already appear as those commitments.
leaf = SHA-256(0x00 || JCS(hashed form)); hash = SHA-256(prev || leaf).
JCS: Python's json with sorted keys and no white space is RFC 8785 for the ledger's events
(strings, integers, booleans; keys compared as UTF-16); use_rfc8785() switches to the PyPI
package `rfc8785` (an independent implementation).
"""
import base64, copy, hashlib, json


def jcs(value):
    """RFC 8785 for the ledger's events (strings, integers, booleans, objects, arrays)."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: kv[0].encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + jcs(v) for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


_canonical = lambda v: jcs(v).encode("utf-8")


def use_rfc8785():
    global _canonical
    import rfc8785
    _canonical = rfc8785.dumps


def commitment(salt, value):
    digest = hashlib.sha256(_canonical([salt, value])).digest()
    return {"_sd": base64.urlsafe_b64encode(digest).rstrip(b"=").decode()}


def hashed_form(event):
    """The event as hashed: without prev, hash, disclosures; disclosed values committed."""
    body = copy.deepcopy({k: v for k, v in event.items() if k not in ("prev", "hash", "disclosures")})
    for pointer, salt in event.get("disclosures", {}).items():
        *path, last = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
        parent = body
        for token in path:
            parent = parent[token]
        parent[last] = commitment(salt, parent[last])
    return body


def leaf_hash(event):
    """leaf = SHA-256(0x00 || JCS(hashed form)): the Merkle leaf and the chain's input."""
    return hashlib.sha256(b"\x00" + _canonical(hashed_form(event))).digest()
