#!/usr/bin/env python3
"""The user index of reference section 14, written independently of the Swift code (standard
library only): the prefix tree's root from a list of users, and a user proof's check.

  tools/userindex.py vectors FILE   checks a JSON file of {"users": [{"user", "count",
                                    "streamHash", "last"}], "root", "proofs": [{"user",
                                    "siblings", "terminal"}]}: recomputes the root from the
                                    users, and folds every proof up to it; exit 0 when all agree.
Hashes are base64 (standard, padded), as in the verifiable log's JSON.
"""
import base64, hashlib, json, struct, sys

PREFIX = b"authledger/user-index/v1:"
ZERO = bytes(32)

def sha(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.digest()

def key(user):
    return sha(PREFIX, user.encode("utf-8"))

def commitment(count, stream_hash, last):
    return sha(struct.pack(">Q", count), stream_hash, struct.pack(">Q", last))

def leaf(k, c):
    return sha(b"\x02", k, c)

def node(l, r):
    return sha(b"\x03", l, r)

def bit(k, i):
    return (k[i // 8] >> (7 - i % 8)) & 1

def root(leaves):
    """leaves: {key: commitment}. A subtree of one leaf is that leaf; of none, zeros."""
    def sub(keys, depth):
        if not keys:
            return ZERO
        if len(keys) == 1:
            return leaf(keys[0], leaves[keys[0]])
        return node(sub([k for k in keys if bit(k, depth) == 0], depth + 1),
                    sub([k for k in keys if bit(k, depth) == 1], depth + 1))
    return sub(sorted(leaves), 0)

def fold(k, siblings, terminal):
    """The root a proof folds up to for key k, or None when the terminal leaf is off k's path."""
    depth = len(siblings)
    if depth > 256:
        return None
    if terminal["type"] == "empty":
        h = ZERO
    else:
        tk, tc = base64.b64decode(terminal["key"]), base64.b64decode(terminal["commitment"])
        if any(bit(tk, i) != bit(k, i) for i in range(depth)):
            return None
        h = leaf(tk, tc)
    for i in reversed(range(depth)):
        s = base64.b64decode(siblings[i])
        h = node(h, s) if bit(k, i) == 0 else node(s, h)
    return h

def main():
    if len(sys.argv) != 3 or sys.argv[1] != "vectors":
        print(__doc__, file=sys.stderr)
        return 2
    v = json.load(open(sys.argv[2]))
    leaves = {key(u["user"]): commitment(u["count"], base64.b64decode(u["streamHash"]), u["last"]) for u in v["users"]}
    want = base64.b64decode(v["root"])
    problems = []
    if root(leaves) != want:
        problems.append("the root from the users differs")
    for p in v["proofs"]:
        k = key(p["user"])
        if fold(k, p["siblings"], p["terminal"]) != want:
            problems.append("the proof of %r does not fold to the root" % p["user"])
            continue
        t = p["terminal"]
        included = t["type"] == "leaf" and base64.b64decode(t["key"]) == k
        if included != (k in leaves) or (included and base64.b64decode(t["commitment"]) != leaves[k]):
            problems.append("the proof of %r says %s" % (p["user"], "included" if included else "absent"))
    for m in problems:
        print("userindex: " + m, file=sys.stderr)
    print("userindex: %d users, %d proofs: %s" % (len(leaves), len(v["proofs"]), "ok" if not problems else "FAILED"))
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main())
