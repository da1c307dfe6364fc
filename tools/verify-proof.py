#!/usr/bin/env python3
"""Offline checks of AuthLedger's verifiable log, for auditors without Go.

Standard library plus PyCA `cryptography` (Ed25519), `pip install cryptography`.

  verify-proof.py checkpoint  --vkey VKEY CHECKPOINT_FILE [--witness-policy POLICY]
      The signed checkpoint (C2SP tlog-checkpoint / signed-note) verifies under the
      verifier key; prints origin, size and root. With a C2SP tlog-policy file, its
      witness cosignatures (C2SP tlog-cosignature, cosignature/v1) must also meet the
      policy's quorum.
  verify-proof.py inclusion   --vkey VKEY PROOF_JSON --event EVENT_JSONL
      PROOF_JSON (`authledger prove SEQ --json` or GET /v1/proofs/inclusion) proves that
      the event (one line of `authledger export`) is in the log its signed checkpoint
      commits to.
  verify-proof.py consistency --vkey VKEY PROOF_JSON --old OLD_CHECKPOINT_FILE
      PROOF_JSON (`authledger prove-consistency OLD NEW --json` or
      GET /v1/proofs/consistency) proves that the log of its signed checkpoint extends
      the log of the older checkpoint you kept.

  verify-proof.py evidence    [--vkey VKEY] BUNDLE_JSON
      An evidence bundle downloaded from the console (docs/CONSOLE.md),
      {"origin", "verifierKey", "checkpoint", "events", "proofs": [{"seq", "leafIndex",
      "treeSize", "proof"}]}: the checkpoint verifies under the key (--vkey, the one you
      pinned, which must then be the bundle's; else the bundle's own verifierKey), and
      each event's leaf hash, recomputed from the event, is in the checkpoint's tree by
      its inclusion proof.

  verify-proof.py user        --vkey VKEY PROOF_JSON [--events EXPORT_JSONL] [--witness-policy POLICY]
      PROOF_JSON (`authledger prove-user USER --json` or GET /v1/users/{u}/proof, reference
      section 14): the prefix proof folds from the user's value to the index root
      (tools/userindex.py), the log's checkpoint at the proof's size verifies under VKEY, the
      index log's checkpoint under the same key named <origin>/users, and the entry
      u64be(size) || R || indexRoot is in it. With the user's events (`authledger export
      --user U`, or any export: the user's lines up to the size are taken), their stream
      hash is recomputed: the history is complete. With a C2SP tlog-policy file, the index
      log's checkpoint must carry cosignatures meeting its quorum.

  verify-proof.py audit-index --vkey VKEY (--url URL [--token T] | --dir DIR) --events EXPORT_JSONL
      Recomputes every entry of the index log (reference section 14) from an export of the
      whole log: its checkpoint (URL/users/checkpoint, or DIR/users/checkpoint for a copy of
      the same files) verifies under VKEY named <origin>/users, its entry bundles
      (users/tile/entries/…) make that checkpoint's root, and each entry u64be(S) || R_S ||
      I_S holds the log's root at S and the index over the users' streams up to S, both
      recomputed here from the export's events. Names the first wrong entry and its S. (It
      rebuilds the index in memory for each entry: fine for an audit, slow for millions of
      users; `authledger audit-index` does it incrementally.)

Exit 0 and "ok: …" when everything checks; exit 1 and "error: …" otherwise.
The algorithms are RFC 9162 sections 2.1.3.2 and 2.1.4.2; signed notes follow C2SP
signed-note (key id = first 4 bytes of SHA-256(name || "\\n" || 0x01 || public key)).
"""
import argparse, base64, hashlib, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledgerhash import leaf_hash  # the hashed form, personal values as commitments
import struct, userindex  # the user index's keys, values and proof folding

try:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
except ImportError:  # pragma: no cover
    sys.exit("error: this script needs the `cryptography` package (pip install cryptography)")


class Failure(Exception):
    pass


def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def parse_vkey(vkey):
    parts = vkey.split("+", 2)  # the base64 key may itself hold "+"
    if len(parts) != 3:
        raise Failure("the verifier key is not <name>+<key id>+<base64 key>")
    name, key_id, key = parts[0], parts[1], base64.b64decode(parts[2], validate=True)
    if len(key) != 33 or key[0] != 1:
        raise Failure("the verifier key is not an Ed25519 key")
    expected = hashlib.sha256(name.encode() + b"\n" + key).digest()[:4]
    if len(key_id) != 8 or bytes.fromhex(key_id) != expected:
        raise Failure("the verifier key's id does not match its name and key")
    return name, expected, Ed25519PublicKey.from_public_bytes(key[1:])


def open_checkpoint(note, vkey):
    """Verifies the signed note under vkey; returns (origin, size, root bytes)."""
    name, key_id, public_key = parse_vkey(vkey)
    if "\n\n" not in note or not note.endswith("\n"):
        raise Failure("not a signed note (no blank line before the signatures)")
    text, sigs = note.split("\n\n", 1)
    text += "\n"
    verified = False
    for line in sigs[:-1].split("\n"):
        if not line.startswith("\u2014 "):
            raise Failure("malformed signature line: %r" % line)
        sig_name, _, blob = line[2:].partition(" ")
        raw = base64.b64decode(blob, validate=True)
        if sig_name != name or raw[:4] != key_id:
            continue  # another key's signature (a witness cosignature): not ours to check
        try:
            public_key.verify(raw[4:], text.encode("utf-8"))
            verified = True
        except InvalidSignature:
            raise Failure("the checkpoint's signature does not verify")
    if not verified:
        raise Failure("the checkpoint carries no signature of %s+%s" % (name, key_id.hex()))
    lines = text.split("\n")
    if len(lines) < 4 or lines[0] != name:
        raise Failure("the checkpoint's origin is not the key name %s" % name)
    if not lines[1].isdigit() or str(int(lines[1])) != lines[1]:
        raise Failure("the checkpoint's size is not a number")
    root = base64.b64decode(lines[2], validate=True)
    if len(root) != 32:
        raise Failure("the checkpoint's root is not a SHA-256 hash")
    return lines[0], int(lines[1]), root


def parse_policy(text):
    """C2SP tlog-policy: returns (witnesses {label: (name, key id, public key)}, quorum rule)."""
    witnesses, names, quorum, keys = {}, {"none": ("none",)}, None, set()
    for number, raw in enumerate(text.split("\n"), 1):
        items = raw.replace("\t", " ").split()
        if not items or items[0].startswith("#"):
            continue
        def fail(message):
            raise Failure("policy line %d: %s" % (number, message))
        kind = items[0]
        if kind == "log":
            continue
        if kind == "witness":
            if len(items) not in (3, 4):
                fail("expected 'witness <name> <vkey> [<url>]'")
            parts = items[2].split("+", 2)
            try:
                key = base64.b64decode(parts[2], validate=True) if len(parts) == 3 else b""
            except ValueError:
                key = b""
            if len(key) != 33 or key[0] != 4:
                fail("the witness key is not a cosignature/v1 (0x04) Ed25519 key")
            key_id = hashlib.sha256(parts[0].encode() + b"\n" + key).digest()[:4]
            if parts[1] != key_id.hex():
                fail("the witness key's id does not match its name and key")
            if items[1] in names or key in keys:
                fail("duplicate witness")
            keys.add(key)
            witnesses[items[1]] = (parts[0], key_id, Ed25519PublicKey.from_public_bytes(key[1:]))
            names[items[1]] = ("witness", items[1])
        elif kind == "group":
            members = items[3:]
            if len(items) < 4 or len(set(members)) != len(members):
                fail("expected 'group <name> all|any|<k> <member>...', each member once")
            if items[1] in names or any(m == "none" or m not in names for m in members):
                fail("a group names witnesses and groups defined above, and a new name")
            k = {"all": len(members), "any": 1}.get(items[2])
            if k is None:
                if not items[2].isdigit() or items[2].startswith("0") or not 1 <= int(items[2]) <= len(members):
                    fail("the threshold is all, any or 1 to the number of members")
                k = int(items[2])
            names[items[1]] = ("group", k, [names[m] for m in members])
        elif kind == "quorum":
            if len(items) != 2 or quorum is not None or items[1] not in names:
                fail("expected one 'quorum <name>' naming a witness or group defined above")
            quorum = names[items[1]]
        else:
            fail("unknown keyword %r" % kind)
    if quorum is None:
        raise Failure("the policy has no quorum line")
    return witnesses, quorum


def cosigners(note, witnesses):
    """The labels of the witnesses with a valid cosignature/v1 line on the note."""
    text, sigs = note.split("\n\n", 1)
    text += "\n"
    valid = set()
    for line in sigs[:-1].split("\n"):
        sig_name, _, blob = line[2:].partition(" ")
        raw = base64.b64decode(blob, validate=True)
        for label, (name, key_id, public_key) in witnesses.items():
            if sig_name != name or raw[:4] != key_id or len(raw) != 4 + 8 + 64:
                continue
            timestamp = int.from_bytes(raw[4:12], "big")
            message = b"cosignature/v1\ntime %d\n" % timestamp + text.encode("utf-8")
            try:
                public_key.verify(raw[12:], message)
                valid.add(label)
            except InvalidSignature:
                pass
    return valid


def quorum_met(rule, valid):
    if rule[0] == "none":
        return True
    if rule[0] == "witness":
        return rule[1] in valid
    return sum(1 for member in rule[2] if quorum_met(member, valid)) >= rule[1]


def verify_inclusion(leaf, index, size, proof, root):
    """RFC 9162 2.1.3.2."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(old_size, old_root, new_size, new_root, proof):
    """RFC 9162 2.1.4.2."""
    if old_size < 1 or old_size > new_size:
        return False
    if old_size == new_size:
        return not proof and old_root == new_root
    path = list(proof)
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)
    if not path:
        return False
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node(c, fr), node(c, sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == old_root and sr == new_root and sn == 0


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def proof_checkpoint(proof, vkey):
    origin, size, root = open_checkpoint(proof["checkpoint"], vkey)
    if size != proof["treeSize"] or base64.b64decode(proof["root"]) != root:
        raise Failure("the proof's tree size or root is not its signed checkpoint's")
    return origin, size, root


def check_evidence(bundle, pinned):
    """An evidence bundle: its checkpoint under the key, every event in it by its proof."""
    if not isinstance(bundle, dict):
        raise Failure("the bundle is not a JSON object")
    vkey = bundle.get("verifierKey")
    if pinned is not None and vkey != pinned:
        raise Failure("the bundle's verifier key is not the one given with --vkey")
    if not isinstance(vkey, str):
        raise Failure("the bundle has no verifierKey (give --vkey)")
    origin, size, root = open_checkpoint(bundle["checkpoint"], vkey)
    if bundle.get("origin") != origin:
        raise Failure("the bundle's origin is not its checkpoint's (%s)" % origin)
    events, proofs = bundle["events"], bundle["proofs"]
    if not isinstance(events, list) or not events:
        raise Failure("the bundle holds no events")
    by_seq = {}
    for p in proofs:
        if p["seq"] in by_seq:
            raise Failure("two proofs for seq %d" % p["seq"])
        by_seq[p["seq"]] = p
    for event in events:
        seq = event["seq"]
        p = by_seq.pop(seq, None)
        if p is None:
            raise Failure("no proof for the event of seq %d" % seq)
        if p["leafIndex"] != seq - 1 or p["treeSize"] != size:
            raise Failure("the proof of seq %d is not for leaf %d of the checkpoint's %d events" % (seq, seq - 1, size))
        hashes = [base64.b64decode(h, validate=True) for h in p["proof"]]
        if not verify_inclusion(leaf_hash(event), seq - 1, size, hashes, root):
            raise Failure("the event of seq %d is not in the checkpoint's tree (its leaf hash or its proof differ)" % seq)
    if by_seq:
        raise Failure("proofs for events the bundle does not hold: %s" % sorted(by_seq))
    return "%d event(s) of %s are in its log of %d events (checkpoint signed by %s)" % (len(events), origin, size, vkey.split("+")[0])


def users_vkey(vkey):
    """The index log's verifier key: the log's key under the name <name>/users."""
    name, _, key = vkey.split("+", 2)
    raw = base64.b64decode(key, validate=True)
    users = name + "/users"
    return "%s+%s+%s" % (users, hashlib.sha256(users.encode() + b"\n" + raw).digest()[:4].hex(), key)


def witnessed(note, policy_path):
    """With a policy file: '; quorum met by …' when the note's valid cosignatures meet its quorum."""
    if not policy_path:
        return ""
    witnesses, quorum = parse_policy(read(policy_path))
    valid = cosigners(note, witnesses)
    if not quorum_met(quorum, valid):
        raise Failure("the witness quorum is not met (valid cosignatures from: %s)" % (", ".join(sorted(valid)) or "none"))
    return "; quorum met by %s" % (", ".join(sorted(valid)) or "no witness needed")


def check_user(proof, vkey, events_path, policy_path=None):
    b64 = lambda s: base64.b64decode(s, validate=True)
    user, count, last, size = proof["user"], proof["count"], proof["last"], proof["size"]
    stream, index_root, k = b64(proof["streamHash"]), b64(proof["indexRoot"]), userindex.key(proof["user"])
    terminal = proof["proof"]["terminal"]
    if userindex.fold(k, proof["proof"]["siblings"], terminal) != index_root:
        raise Failure("the prefix proof does not fold to the index root")
    shown = terminal["type"] == "leaf" and b64(terminal["key"]) == k
    if shown != (count > 0) or (shown and b64(terminal["commitment"]) != userindex.commitment(count, stream, last)):
        raise Failure("the prefix proof does not show %s with %d events" % (user, count))
    origin, log_size, log_root = open_checkpoint(proof["checkpoint"], vkey)
    if log_size != size:
        raise Failure("the log's checkpoint is of size %d, not %d" % (log_size, size))
    _, entries, users_root = open_checkpoint(proof["usersCheckpoint"], users_vkey(vkey))
    if proof["entry"]["treeSize"] != entries:
        raise Failure("the entry's tree size is not the index log checkpoint's")
    entry = struct.pack(">Q", size) + log_root + index_root
    if not verify_inclusion(hashlib.sha256(b"\x00" + entry).digest(), proof["entry"]["index"], entries,
                            [b64(h) for h in proof["entry"]["proof"]], users_root):
        raise Failure("the index log's entry for size %d is not in its checkpoint" % size)
    summary = "%s has %d events in the log %s of %d events (index log entry %d of %d)" % (
        user, count, origin, size, proof["entry"]["index"], entries)
    if policy_path:
        summary += "; usersCheckpoint" + witnessed(proof["usersCheckpoint"], policy_path)
    if events_path:
        s, n, newest = bytes(32), 0, 0
        for line in read(events_path).splitlines():
            if not line.strip():
                continue
            e = json.loads(line)
            if e.get("user") == user and e["seq"] <= size:
                s, n, newest = hashlib.sha256(s + leaf_hash(e)).digest(), n + 1, e["seq"]
        if n != count or newest != last or s != stream:
            raise Failure("the %d events given for %s do not make the committed stream hash: the history is not complete" % (n, user))
        summary += "; the %d events given are all of them" % n
    return summary


def tile_path(n):
    """C2SP tlog-tiles: N in 3-digit elements, x-prefixed but the last (1234067: x001/x234/067)."""
    parts = ["%03d" % (n % 1000)]
    n //= 1000
    while n > 0:
        parts.insert(0, "x%03d" % (n % 1000))
        n //= 1000
    return "/".join(parts)


def fetcher(url, token, directory):
    """GET of a path of the log's files: from the server at URL, or from DIR (the same layout)."""
    if directory:
        return lambda path: open(os.path.join(directory, path), "rb").read()
    import urllib.request
    def get(path):
        req = urllib.request.Request(url.rstrip("/") + "/" + path)
        if token:
            req.add_header("Authorization", "Bearer " + token)
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read()
    return get


class Frontier:
    """A tree's right edge (RFC 9162): its root at each size, adding one leaf at a time."""
    def __init__(self):
        self.stack, self.size = [], 0   # (height, hash) of the perfect subtrees, left to right

    def add(self, leaf):
        h, height = leaf, 0
        while self.stack and self.stack[-1][0] == height:
            h, height = node(self.stack.pop()[1], h), height + 1
        self.stack.append((height, h))
        self.size += 1

    def root(self):
        if not self.stack:
            return hashlib.sha256(b"").digest()
        r = self.stack[-1][1]
        for _, h in reversed(self.stack[:-1]):
            r = node(h, r)
        return r


def audit_index(vkey, get, events_path):
    origin, count, root = open_checkpoint(get("users/checkpoint").decode(), users_vkey(vkey))
    entries = []
    for t in range((count + 255) // 256):
        width = min(256, count - 256 * t)
        bundle = get("users/tile/entries/" + tile_path(t) + ("" if width == 256 else ".p/%d" % width))
        at = 0
        while at < len(bundle):
            n = struct.unpack(">H", bundle[at:at + 2])[0]
            entries.append(bundle[at + 2:at + 2 + n])
            at += 2 + n
        if len(entries) != 256 * t + width:
            raise Failure("the index log's entry bundle %d holds %d entries, not %d" % (t, len(entries) - 256 * t, width))
    users_tree = Frontier()
    for e in entries:
        users_tree.add(hashlib.sha256(b"\x00" + e).digest())
    if users_tree.root() != root:
        raise Failure("the index log's entries do not make its checkpoint's root")
    events = [json.loads(line) for line in read(events_path).splitlines() if line.strip()]
    frontier, streams, k, previous = Frontier(), {}, 0, 0
    for i, e in enumerate(entries):
        if len(e) != 72:
            raise Failure("tampered: the index log's entry %d is %d bytes, not 72" % (i, len(e)))
        size = struct.unpack(">Q", e[:8])[0]
        if size <= previous or size > len(events):
            raise Failure("tampered: the index log's entry %d (size %d) does not follow the one before or is beyond the export (%d events)" % (i, size, len(events)))
        while k < size:
            ev = events[k]
            if ev.get("seq") != k + 1:
                raise Failure("the export is not the whole log: line %d has seq %s, not %d" % (k + 1, ev.get("seq"), k + 1))
            leaf = leaf_hash(ev)
            frontier.add(leaf)
            if ev.get("user"):
                n, s, _ = streams.get(ev["user"], (0, bytes(32), 0))
                streams[ev["user"]] = (n + 1, hashlib.sha256(s + leaf).digest(), ev["seq"])
            k += 1
        if frontier.root() != e[8:40]:
            raise Failure("tampered: the index log's entry %d (size %d) holds another root than the log's" % (i, size))
        index = userindex.root({userindex.key(u): userindex.commitment(n, s, last) for u, (n, s, last) in streams.items()})
        if index != e[40:72]:
            raise Failure("tampered: the index log's entry %d (size %d) holds another index root than the users' streams make" % (i, size))
        previous = size
    return "%d index log entries of %s recomputed from the export (the newest at size %d)" % (len(entries), origin, previous)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["checkpoint", "inclusion", "consistency", "evidence", "user", "audit-index"])
    ap.add_argument("file", nargs="?", help="the checkpoint (checkpoint) or the proof JSON (inclusion, consistency, user)")
    ap.add_argument("--vkey", help="the log's verifier key (authledger checkpoint --vkey); required but for evidence")
    ap.add_argument("--event", help="inclusion: a file with the event's line of the export")
    ap.add_argument("--old", help="consistency: the older checkpoint you kept")
    ap.add_argument("--events", help="user: the user's events (export JSONL), to recompute the stream hash; "
                    "audit-index: the export of the whole log")
    ap.add_argument("--url", help="audit-index: the server's base URL (its /users/checkpoint and /users/tile/entries/…)")
    ap.add_argument("--token", help="audit-index: a bearer token for --url")
    ap.add_argument("--dir", help="audit-index: a directory holding users/checkpoint and users/tile/entries/… instead of --url")
    ap.add_argument("--witness-policy", help="checkpoint, user: a C2SP tlog-policy file whose quorum the cosignatures "
                    "(for user, the index log checkpoint's) must meet")
    a = ap.parse_intermixed_args(argv)  # FILE may come after the options
    if a.what == "evidence":
        return check_evidence(json.loads(read(a.file)), a.vkey)
    if not a.vkey:
        raise Failure("--vkey is required")
    if a.what == "audit-index":
        if not a.events or bool(a.url) == bool(a.dir):
            raise Failure("audit-index needs --events and one of --url or --dir")
        return audit_index(a.vkey, fetcher(a.url, a.token, a.dir), a.events)
    if not a.file:
        raise Failure("the %s check needs a file" % a.what)
    if a.what == "checkpoint":
        note = read(a.file)
        origin, size, root = open_checkpoint(note, a.vkey)
        summary = "checkpoint of %s: %d events, root %s" % (origin, size, base64.b64encode(root).decode())
        return summary + witnessed(note, a.witness_policy)
    proof = json.loads(read(a.file))
    if a.what == "user":
        return check_user(proof, a.vkey, a.events, a.witness_policy)
    hashes = [base64.b64decode(h, validate=True) for h in proof["proof"]]
    origin, size, root = proof_checkpoint(proof, a.vkey)
    if a.what == "inclusion":
        if not a.event:
            raise Failure("--event is required")
        event = json.loads(read(a.event).strip())
        if event["seq"] != proof["leafIndex"] + 1:
            raise Failure("the event has seq %d, the proof is for seq %d" % (event["seq"], proof["leafIndex"] + 1))
        if not verify_inclusion(leaf_hash(event), proof["leafIndex"], size, hashes, root):
            raise Failure("the inclusion proof does not verify")
        return "event seq %d is in the log %s of %d events" % (event["seq"], origin, size)
    if not a.old:
        raise Failure("--old is required")
    old_origin, old_size, old_root = open_checkpoint(read(a.old), a.vkey)
    if old_origin != origin or old_size != proof["oldSize"]:
        raise Failure("the proof starts at %d events, the old checkpoint has %d" % (proof["oldSize"], old_size))
    if not verify_consistency(old_size, old_root, size, root, hashes):
        raise Failure("the consistency proof does not verify: the log was not only appended to")
    return "the log %s of %d events extends the one of %d events" % (origin, size, old_size)


if __name__ == "__main__":
    try:
        print("ok: " + main(sys.argv[1:]))
    except (Failure, ValueError, KeyError, TypeError, OSError) as e:
        sys.exit("error: %s" % e)
