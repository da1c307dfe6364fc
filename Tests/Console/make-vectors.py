#!/usr/bin/env python3
"""Writes Tests/Console/vectors.json, the vectors that the console's JavaScript tests
(verify.test.mjs, node --test) and the Swift suite (ConsoleVectorsTests) both check:
the recorded scenarios exported by the ledger itself (one user erased, so some events carry
commitments without disclosures), its signed checkpoint and verifier key, inclusion and
consistency proofs as `authledger prove … --json` prints them, a user proof of every user
(`prove-user --json`) and the index log's verifier key, commitments, and JCS cases.

Usage: Tests/Console/make-vectors.py PATH/authledger   (run again only to renew the file)
"""
import glob, json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from ledgerhash import commitment  # noqa: E402

ORIGIN = "vectors.example/log"


def run(binary, *args, store):
    env = dict(os.environ, AUTHLEDGER_ORIGIN=ORIGIN)
    env.pop("AUTHLEDGER_CHECKPOINT_KEY_FILE", None)
    env.pop("AUTHLEDGER_KEY_DIR", None)
    return subprocess.run([binary, *args, "--store", store], env=env, check=True, capture_output=True, text=True).stdout


def main(binary):
    work = tempfile.mkdtemp(prefix="console-vectors-")
    store = os.path.join(work, "store")
    for f in sorted(glob.glob(os.path.join(ROOT, "Fixtures", "scenarios", "*.jsonl"))):
        if not f.endswith(".expect.jsonl"):
            run(binary, "import", f, store=store)
            # An index log entry per import (prove-user appends one when the log grew), so
            # the user proofs below prove their entry in an index log of several.
            run(binary, "prove-user", "nobody-at-all", "--json", store=store)
    run(binary, "erase", "alice", "--now", "2026-06-01T00:00:00Z", store=store)
    events = [json.loads(line) for line in run(binary, "export", store=store).splitlines() if line.strip()]
    size = len(events)
    note = run(binary, "checkpoint", store=store)
    vkey = run(binary, "checkpoint", "--vkey", store=store).strip()
    other = os.path.join(work, "other")
    run(binary, "import", os.path.join(ROOT, "Fixtures", "scenarios", "01-first-device-email-link.jsonl"), store=other)
    other_vkey = run(binary, "checkpoint", "--vkey", store=other).strip()
    inclusion = []
    for seq in sorted({1, 2, 17, size // 2, size - 1, size}):
        p = json.loads(run(binary, "prove", str(seq), "--json", store=store))
        inclusion.append({"seq": seq, "leafIndex": p["leafIndex"], "treeSize": p["treeSize"], "proof": p["proof"]})
    consistency = []
    for old in sorted({1, 7, 16, size // 2, size}):
        p = json.loads(run(binary, "prove-consistency", str(old), str(size), "--json", store=store))
        consistency.append({"oldSize": p["oldSize"], "treeSize": p["treeSize"], "proof": p["proof"],
                            "oldCheckpoint": run(binary, "checkpoint", "--size", str(old), store=store)})
    # User proofs (reference section 14) at the newest index log entry: every user of the
    # export, and one without events (a non-inclusion proof).
    users = sorted({e["user"] for e in events if e.get("user") and e["user"] != "$system"})
    user_proofs = [json.loads(run(binary, "prove-user", u, "--json", store=store)) for u in users + ["nobody-at-all"]]
    users_vkey = run(binary, "checkpoint", "--vkey", "--users", store=store).strip()
    jcs = [
        {"input": {"b": 1, "a": [True, False, None], "c": {"z": "", "y": -7}}, "canonical": '{"a":[true,false,null],"b":1,"c":{"y":-7,"z":""}}'},
        {"input": "quote \" backslash \\ newline \n tab \t bell \u0007 del \u007f", "canonical": '"quote \\" backslash \\\\ newline \\n tab \\t bell \\u0007 del \u007f"'},
        {"input": {"\u20ac": "euro", "\r": "cr", "\ufb33": "dalet", "1": "one", "\U0001f600": "smile", "\u0080": "ctrl", "\u00f6": "o"},
         "canonical": '{"\\r":"cr","1":"one","\u0080":"ctrl","\u00f6":"o","\u20ac":"euro","\U0001f600":"smile","\ufb33":"dalet"}'},
        {"input": [0, 1, -1, 1234567890123, 9007199254740991], "canonical": "[0,1,-1,1234567890123,9007199254740991]"},
        {"input": ["salt", "Alice's iPhone \u00e9\u0301 \U0001f4f1"], "canonical": '["salt","Alice\'s iPhone \u00e9\u0301 \U0001f4f1"]'},
        {"input": {}, "canonical": "{}"},
        {"input": [], "canonical": "[]"},
    ]
    commitments = [{"salt": s, "value": v, "commitment": commitment(s, v)["_sd"]}
                   for s, v in [("c2FsdHNhbHRzYWx0c2FsdA", "Alice's iPhone"), ("AAAAAAAAAAAAAAAAAAAAAA", "203.0.113.7"),
                                ("x-y_z", "caf\u00e9 \U0001f4f1 \"quoted\"")]]
    out = {"about": "Made by Tests/Console/make-vectors.py from the ledger's own export, checkpoint and proofs; "
                    "checked by Tests/Console/verify.test.mjs (JavaScript) and ConsoleVectorsTests (Swift).",
           "jcs": jcs, "commitments": commitments, "events": events,
           "checkpoint": {"note": note, "vkey": vkey, "otherVkey": other_vkey},
           "inclusion": inclusion, "consistency": consistency,
           "userProofs": user_proofs, "usersVkey": users_vkey}
    with open(os.path.join(ROOT, "Tests", "Console", "vectors.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("vectors: %d events, %d inclusion, %d consistency and %d user proofs" % (size, len(inclusion), len(consistency), len(user_proofs)))


if __name__ == "__main__":
    main(sys.argv[1])
