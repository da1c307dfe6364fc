#!/usr/bin/env python3
"""Device proofs against a JOSE library we did not write (joserfc, PyPI).

Keys are made and answers signed by joserfc (ES256 and EdDSA); the ledger (the CLI on a
fresh store) must accept them. Its export is then re-verified with joserfc: every signed
approval and denial against the approver's key as of that event, every key rotation
against the old key over the new key's RFC 7638 thumbprint (joserfc's own). A forgery
(another key, another nonce) must be refused with signature_invalid and nothing appended;
tools/verify-export.py must pass the export and name the first event of an export whose
signature was replaced and whose hashes were recomputed.

usage: tools/proof-interop.py [--bin .build/debug/authledger]
Exit 0 when every check passes; prints what failed otherwise.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

from joserfc import jws
from joserfc.jwk import ECKey, OKPKey

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledgerhash import leaf_hash  # noqa: E402

warnings.filterwarnings("ignore")  # joserfc warns that RFC 9864 deprecates the name "EdDSA"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def jcs(obj):
    # The payloads are objects of ASCII strings and booleans: sorted keys, no white space is RFC 8785.
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def alg_of(key):
    return "ES256" if key.as_dict(private=False)["kty"] == "EC" else "EdDSA"


def sign(key, payload):
    return jws.serialize_compact({"alg": alg_of(key)}, payload, key, algorithms=[alg_of(key)])


def public_key(jwk):
    return ECKey.import_key(jwk) if jwk["kty"] == "EC" else OKPKey.import_key(jwk)


class CLI:
    def __init__(self, binary, store):
        self.binary, self.store = binary, store

    def run(self, *args, now=None, ok=True):
        cmd = [self.binary, *args, "--store", self.store]
        if now:
            cmd += ["--now", now]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if ok and p.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: exit {p.returncode}: {p.stderr}")
        return p

    def json(self, *args, now=None):
        return json.loads(self.run(*args, "--json", now=now).stdout)

    def export(self):
        return [json.loads(l) for l in self.run("export").stdout.splitlines() if l.strip()]

    def nonce(self, cid):
        for e in self.export():
            if e["type"] == "challenge.issued" and e["data"]["challengeId"] == cid:
                return e["data"]["nonce"]
        raise RuntimeError(f"no challenge {cid}")


def answer(key, user, cid, decision, device, nonce, user_verified=False):
    payload = {"challengeId": cid, "decision": decision, "deviceId": device, "nonce": nonce, "user": user}
    if user_verified:
        payload["userVerified"] = True
    return sign(key, jcs(payload))


def reverify(events):
    """Every signature of an export, checked with joserfc; returns how many."""
    keys, nonces, n = {}, {}, 0
    for e in events:
        d, u = e["data"], e.get("user")
        if e["type"] == "device.registered" and "publicKey" in d:
            keys[(u, d["deviceId"])] = d["publicKey"]
        elif e["type"] == "challenge.issued" and "nonce" in d:
            nonces[(u, d["challengeId"])] = d["nonce"]
        elif e["type"] == "device.key_rotated":
            old = keys[(u, d["deviceId"])]
            obj = jws.deserialize_compact(d["signature"], public_key(old), algorithms=[alg_of(public_key(old))])
            check(obj.payload == public_key(d["publicKey"]).thumbprint().encode(), f"seq {e['seq']}: rotation payload is not the thumbprint")
            keys[(u, d["deviceId"])] = d["publicKey"]
            n += 1
        elif e["type"] in ("challenge.approved", "challenge.denied") and "signature" in d:
            key = public_key(keys[(u, d["approverDeviceId"])])
            obj = jws.deserialize_compact(d["signature"], key, algorithms=[alg_of(key)])
            expected = {"challengeId": d["challengeId"], "decision": "approve" if e["type"] == "challenge.approved" else "deny",
                        "deviceId": d["approverDeviceId"], "nonce": nonces[(u, d["challengeId"])], "user": u}
            if d.get("userVerified") is True:
                expected["userVerified"] = True
            check(obj.payload == jcs(expected), f"seq {e['seq']}: signed payload differs")
            n += 1
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=".build/debug/authledger")
    binary = os.path.abspath(ap.parse_args().bin)
    tmp = tempfile.mkdtemp(prefix="proof-interop-")
    try:
        cli = CLI(binary, os.path.join(tmp, "store"))
        es, ed, es2 = ECKey.generate_key("P-256"), OKPKey.generate_key("Ed25519"), ECKey.generate_key("P-256")
        pub = lambda k: json.dumps(k.as_dict(private=False))
        cli.run("register", "alice", "phone", "--name", "Alice Phone", "--public-key", pub(es), now="2026-05-01T10:00:00Z")
        cli.run("register", "alice", "tablet", "--name", "Alice Tablet", "--via", "admin", "--public-key", pub(ed),
                now="2026-05-01T10:00:01Z")
        devices = {d["deviceId"]: d for d in cli.json("devices", "alice", now="2026-05-01T10:00:02Z")["devices"]}
        check(devices["phone"]["keyThumbprint"] == es.thumbprint(), "ES256 thumbprint is joserfc's")
        check(devices["tablet"]["keyThumbprint"] == ed.thumbprint(), "Ed25519 thumbprint is joserfc's")

        # ES256 approval with userVerified, EdDSA denial: both accepted
        c1 = cli.json("issue-challenge", "alice", "--device", "laptop", now="2026-05-01T10:00:10Z")["challengeId"]
        n1 = cli.nonce(c1)
        # Forgeries: another key, another nonce, userVerified claimed but not signed
        head = len(cli.export())
        for forged, uv in [(answer(es2, "alice", c1, "approve", "phone", n1), False),
                           (answer(es, "alice", c1, "approve", "phone", "AAAAAAAAAAAAAAAAAAAAAA"), False),
                           (answer(es, "alice", c1, "approve", "phone", n1), True)]:
            p = cli.run("approve", "alice", c1, "--device", "phone", "--signature", forged, *(["--user-verified"] if uv else []),
                        now="2026-05-01T10:00:11Z", ok=False)
            check(p.returncode == 1 and "signature_invalid" in p.stderr, f"forgery refused with signature_invalid: {p.stderr.strip()}")
        check(len(cli.export()) == head, "nothing appended by the forgeries")
        cli.run("approve", "alice", c1, "--device", "phone", "--user-verified",
                "--signature", answer(es, "alice", c1, "approve", "phone", n1, user_verified=True), now="2026-05-01T10:00:12Z")
        c2 = cli.json("issue-challenge", "alice", "--device", "laptop", now="2026-05-01T10:00:20Z")["challengeId"]
        cli.run("deny", "alice", c2, "--device", "tablet", "--signature", answer(ed, "alice", c2, "deny", "tablet", cli.nonce(c2)),
                now="2026-05-01T10:00:21Z")

        # Rotation ES256 -> Ed25519, signed by the old key over joserfc's thumbprint of the new one
        new = OKPKey.generate_key("Ed25519")
        cli.run("rotate-key", "alice", "phone", "--public-key", pub(new), "--signature", sign(es, new.thumbprint().encode()),
                now="2026-05-01T10:00:30Z")
        c3 = cli.json("issue-challenge", "alice", "--device", "laptop", now="2026-05-01T10:00:40Z")["challengeId"]
        n3 = cli.nonce(c3)
        p = cli.run("approve", "alice", c3, "--device", "phone", "--signature", answer(es, "alice", c3, "approve", "phone", n3),
                    now="2026-05-01T10:00:41Z", ok=False)
        check("signature_invalid" in p.stderr, "the rotated-out key no longer signs")
        cli.run("approve", "alice", c3, "--device", "phone", "--signature", answer(new, "alice", c3, "approve", "phone", n3),
                now="2026-05-01T10:00:42Z")
        check(cli.run("verify").returncode == 0, "authledger verify passes")

        # The export, re-verified with joserfc
        events = cli.export()
        check(reverify(events) == 4, "four signatures re-verified with joserfc")

        # tools/verify-export.py: the export passes; a replaced signature with recomputed hashes is named
        text = "".join(json.dumps(e) + "\n" for e in events)
        here = os.path.dirname(os.path.abspath(__file__))
        p = subprocess.run([sys.executable, os.path.join(here, "verify-export.py")], input=text, capture_output=True, text=True)
        check(p.returncode == 0 and "4 signatures" in p.stdout, f"verify-export.py passes the export: {p.stdout}{p.stderr}")
        forged = [dict(e) for e in events]
        target = next(i for i, e in enumerate(forged) if e["type"] == "challenge.approved" and "signature" in e["data"])
        forged[target] = json.loads(json.dumps(forged[target]))
        forged[target]["data"]["signature"] = answer(es2, "alice", forged[target]["data"]["challengeId"], "approve", "phone", n1, True)
        prev = "0" * 64
        import hashlib
        for e in forged:
            e["prev"] = prev
            e["hash"] = prev = hashlib.sha256(bytes.fromhex(prev) + leaf_hash(e)).hexdigest()
        text = "".join(json.dumps(e) + "\n" for e in forged)
        p = subprocess.run([sys.executable, os.path.join(here, "verify-export.py")], input=text, capture_output=True, text=True)
        seq = forged[target]["seq"]
        check(p.returncode != 0 and f"seq {seq}" in p.stderr, f"verify-export.py names seq {seq}: {p.stdout}{p.stderr}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"proof-interop: {len(failures)} check(s) failed")
        return 1
    print("proof-interop: ok (ES256 and EdDSA signed by joserfc accepted, export re-verified with joserfc, forgeries refused)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
