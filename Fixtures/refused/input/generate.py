#!/usr/bin/env python3
"""Writes the malformed-input corpus and its manifest (run from anywhere; idempotent).

Each case is a JSONL file that `authledger import` must refuse with the code and line
in manifest.tsv, leaving a store populated with _base.jsonl byte-identical. Valid lines
come first in most files so that the line number is tested, not just the code.
(Rule violations of docs/REFERENCE.md section 2 live in Fixtures/refused/rules/.)
"""
import base64, hashlib, json, os

here = os.path.dirname(os.path.abspath(__file__))
os.chdir(here)

CAROL = '{"type":"device.registered","user":"carol","at":"2026-03-02T09:00:00Z","data":{"deviceId":"c-phone","name":"Carol phone","kind":"mobile","binding":"permanent","via":"initial"}}'
CAROL2 = '{"type":"device.accessed","user":"carol","at":"2026-03-02T09:01:00Z","data":{"deviceId":"c-phone"}}'
ACCESS = '{"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}'

cases = []  # (name, bytes, code, line)

def case(name, lines, code, line, raw=False):
    if raw:
        data = b"\n".join(lines) + b"\n"
    else:
        data = ("\n".join(lines) + "\n").encode("utf-8")
    cases.append((name, data, code, line))

def bad(name, badline, code, desc=None, before=(CAROL,)):
    """A comment, a blank line, valid lines, then the bad one (code invalid_event when only a description is given)."""
    if desc is None:
        code, desc = "invalid_event", code
    lines = ["# " + desc, ""] + list(before) + [badline]
    case(name, lines, code, len(lines))

# Malformed JSON
bad("json-truncated.jsonl", '{"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}', "invalid_event", "a line cut short")
bad("json-trailing-garbage.jsonl", ACCESS + " x", "invalid_event", "garbage after the object")
bad("json-two-objects.jsonl", ACCESS + ACCESS, "invalid_event", "two objects on one line")
bad("json-array.jsonl", "[" + ACCESS + "]", "invalid_event", "an array instead of an object")
bad("json-scalar.jsonl", '"device.accessed"', "invalid_event", "a string instead of an object")
bad("json-single-quotes.jsonl", ACCESS.replace('"', "'"), "invalid_event", "single quotes")
bad("json-trailing-comma.jsonl", ACCESS[:-1] + ",}", "invalid_event", "a trailing comma")
bad("json-comment-inside.jsonl", ACCESS[:-1] + '/* hi */}', "invalid_event", "a comment inside the object")
bad("json-duplicate-key.jsonl", '{"type":"device.accessed","type":"device.revoked","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "a duplicate member name")
bad("json-deep-nesting.jsonl", '{"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"},"meta":' + "[" * 100000 + "]" * 100000 + "}", "invalid_event", "100000 nested arrays (no stack overflow)")
bad("json-empty-object.jsonl", "{}", "invalid_event", "an empty object")
bad("json-nan.jsonl", '{"type":"policy.set","at":"2026-03-02T10:00:00Z","data":{"coolingSeconds":NaN}}', "invalid_event", "NaN is not JSON")
bad("json-bad-escape.jsonl", '{"type":"device.accessed","user":"al\\x69ce","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "an invalid escape")
case("json-first-line.jsonl", ["{not json", CAROL], "invalid_event", 1)
case("json-bom.jsonl", [CAROL, "\ufeff" + ACCESS], "invalid_event", 2)  # a BOM is skipped only before the first line

# Wrong types
bad("type-user-number.jsonl", '{"type":"device.accessed","user":42,"at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "user is a number")
bad("type-data-string.jsonl", '{"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":"iphone"}', "invalid_event", "data is a string")
bad("type-data-null.jsonl", '{"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":null}', "invalid_event", "data is null")
bad("type-at-number.jsonl", '{"type":"device.accessed","user":"alice","at":1772445600,"data":{"deviceId":"iphone"}}', "invalid_event", "at is a Unix time")
bad("type-bool-as-string.jsonl", '{"type":"policy.set","at":"2026-03-02T10:00:00Z","data":{"protectCurrentDevice":"false"}}', "invalid_event", "a boolean given as a string")
bad("type-int-as-string.jsonl", '{"type":"policy.set","at":"2026-03-02T10:00:00Z","data":{"coolingSeconds":"60"}}', "invalid_event", "an integer given as a string")
bad("type-int-as-float.jsonl", '{"type":"policy.set","at":"2026-03-02T10:00:00Z","data":{"otpMaxAttempts":5.5}}', "invalid_event", "a fraction where an integer goes")
bad("type-meta-number.jsonl", '{"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"},"meta":{"requestId":7}}', "invalid_event", "a meta value that is not a string")
bad("type-context-array.jsonl", '{"type":"challenge.issued","user":"alice","at":"2026-03-02T10:00:00Z","data":{"challengeId":"c9","action":"login","requestingDeviceId":"iphone","expiresAt":"2026-03-02T10:01:00Z","context":["ip"]}}', "invalid_event", "context is an array")
bad("type-id-not-uuid.jsonl", '{"id":"not-a-uuid","type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "id is not a UUID")
bad("type-seq-string.jsonl", '{"seq":"11","type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "seq is a string")
bad("type-seq-zero.jsonl", '{"seq":0,"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "seq 0")
bad("type-hash-uppercase.jsonl", '{"hash":"' + "AB" * 32 + '","type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "an upper-case hash")

# Unknown fields and types, missing fields
bad("unknown-field.jsonl", ACCESS[:-1] + ',"extra":1}', "invalid_event", "an unknown top-level field")
bad("unknown-data-field.jsonl", '{"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone","color":"red"}}', "invalid_event", "an unknown data field")
bad("unknown-type.jsonl", '{"type":"device.exploded","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "an unknown type")
bad("unknown-kind.jsonl", '{"type":"device.registered","user":"dave","at":"2026-03-02T10:00:00Z","data":{"deviceId":"d","name":"Dave phone","kind":"toaster","binding":"permanent","via":"initial"}}', "invalid_event", "an unknown device kind")
bad("unknown-via.jsonl", '{"type":"device.registered","user":"dave","at":"2026-03-02T10:00:00Z","data":{"deviceId":"d","name":"Dave phone","kind":"mobile","binding":"permanent","via":"magic"}}', "invalid_event", "an unknown via")
bad("missing-type.jsonl", '{"user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "no type")
bad("missing-user.jsonl", '{"type":"device.accessed","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "no user")
bad("missing-at.jsonl", '{"type":"device.accessed","user":"alice","data":{"deviceId":"iphone"}}', "invalid_event", "no at")
bad("missing-data.jsonl", '{"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z"}', "invalid_event", "no data")
bad("missing-device-id.jsonl", '{"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{}}', "invalid_event", "no data.deviceId")
bad("policy-with-user.jsonl", '{"type":"policy.set","user":"alice","at":"2026-03-02T10:00:00Z","data":{"coolingSeconds":5}}', "invalid_event", "policy.set with a user")
bad("policy-empty.jsonl", '{"type":"policy.set","at":"2026-03-02T10:00:00Z","data":{}}', "invalid_event", "policy.set with no setting")
bad("reserved-user.jsonl", '{"type":"device.accessed","user":"$system","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "a reserved user key")
bad("grant-without-otp.jsonl", '{"type":"device.registered","user":"dave","at":"2026-03-02T10:00:00Z","data":{"deviceId":"d","name":"Dave phone","kind":"mobile","binding":"permanent","via":"admin","grantId":"g1"}}', "invalid_event", "grantId without via otp")
bad("bad-actor.jsonl", ACCESS[:-1] + ',"meta":{"actor":"root"}}', "invalid_event", "meta.actor of no known form")
bad("bad-action.jsonl", '{"type":"challenge.issued","user":"alice","at":"2026-03-02T10:00:00Z","data":{"challengeId":"c9","action":"Log In","requestingDeviceId":"iphone","expiresAt":"2026-03-02T10:01:00Z"}}', "invalid_event", "an action that is not a lower-case word")
bad("otp-unmasked-target.jsonl", '{"type":"otp.issued","user":"alice","at":"2026-03-02T10:00:00Z","data":{"otpId":"o9","channel":"email","target":"alice@example.com","codeHash":"' + "ab" * 32 + '","expiresAt":"2026-03-02T10:05:00Z","maxAttempts":5}}', "invalid_event", "an OTP target in clear")

# Invalid UTF-8 (raw bytes)
def badraw(name, badbytes, desc):
    lines = [("# " + desc).encode(), b"", CAROL.encode(), badbytes]
    case(name, lines, "invalid_event", 4, raw=True)
badraw("utf8-invalid-byte.jsonl", b'{"type":"device.accessed","user":"ali\xffce","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "a 0xFF byte in a string")
badraw("utf8-overlong.jsonl", b'{"type":"device.accessed","user":"\xc0\xafalice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "an overlong encoding of '/'")
badraw("utf8-surrogate.jsonl", b'{"type":"device.accessed","user":"\xed\xa0\x80alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "a UTF-8-encoded surrogate")
badraw("utf8-truncated.jsonl", b'{"type":"device.accessed","user":"alice\xe2\x82","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "a truncated multi-byte sequence")
badraw("utf8-outside-string.jsonl", b'{"type":"device.accessed",\xff"user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "a stray byte between members")
bad("utf8-lone-surrogate-escape.jsonl", '{"type":"device.accessed","user":"\\ud800alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "a lone surrogate escape")
badraw("nul-byte.jsonl", b'{"type":"device.accessed","user":"alice\x00","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "a raw NUL inside a string")

# Control characters
bad("control-in-user.jsonl", '{"type":"device.accessed","user":"ali\\u0007ce","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "a BEL in the user key")
bad("control-in-device-id.jsonl", '{"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iph\\u0000one"}}', "a NUL in a device id")
bad("control-c1-in-meta.jsonl", ACCESS[:-1] + ',"meta":{"requestId":"r\\u0085"}}', "a C1 control (NEL) in meta")
badraw("control-raw-tab-in-string.jsonl", b'{"type":"device.accessed","user":"ali\tce","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "a raw tab inside a string")
bad("control-in-name.jsonl", '{"type":"device.renamed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone","name":"Alice\\u001bphone"}}', "invalid_name", "an ESC in a name")

# Overlong fields (1 MB)
MB = 1 << 20
bad("overlong-name-1mb.jsonl", '{"type":"device.renamed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone","name":"' + "N" * MB + '"}}', "invalid_name", "a 1 MB device name")
bad("overlong-user-1mb.jsonl", '{"type":"device.accessed","user":"' + "u" * MB + '","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "a 1 MB user key")
bad("overlong-meta-1mb.jsonl", ACCESS[:-1] + ',"meta":{"requestId":"' + "r" * MB + '"}}', "invalid_event", "a 1 MB meta value")
bad("overlong-device-id.jsonl", '{"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"' + "d" * 129 + '"}}', "invalid_event", "a 129-character device id")
bad("overlong-meta-entries.jsonl", ACCESS[:-1] + ',"meta":{' + ",".join('"k%d":"v"' % i for i in range(1000)) + '}}', "invalid_event", "1000 meta entries")

# Bad times
def badtime(name, t, desc):
    bad(name, '{"type":"device.accessed","user":"alice","at":"%s","data":{"deviceId":"iphone"}}' % t, "invalid_event", desc)
badtime("time-no-zone.jsonl", "2026-03-02T10:00:00", "no zone")
badtime("time-feb-30.jsonl", "2026-02-30T10:00:00Z", "30 February")
badtime("time-hour-25.jsonl", "2026-03-02T25:00:00Z", "hour 25")
badtime("time-minute-60.jsonl", "2026-03-02T10:60:00Z", "minute 60")
badtime("time-date-only.jsonl", "2026-03-02", "a date without a time")
badtime("time-words.jsonl", "yesterday", "words")
badtime("time-space-separator.jsonl", "2026-03-02 10:00:00Z", "a space instead of T")
badtime("time-zone-out-of-range.jsonl", "2026-03-02T10:00:00+25:00", "a zone offset of 25 hours")
badtime("time-year-0.jsonl", "0000-00-00T00:00:00Z", "month and day 0")
bad("time-bad-expires.jsonl", '{"type":"challenge.issued","user":"alice","at":"2026-03-02T10:00:00Z","data":{"challengeId":"c9","action":"login","requestingDeviceId":"iphone","expiresAt":"soon"}}', "invalid_event", "a bad expiresAt")

# Huge numbers
def badpolicy(name, value, desc):
    bad(name, '{"type":"policy.set","at":"2026-03-02T10:00:00Z","data":{"coolingSeconds":%s}}' % value, "invalid_event", desc)
badpolicy("number-huge.jsonl", "9" * 400, "a 400-digit integer")
badpolicy("number-int64-overflow.jsonl", "9223372036854775808", "2^63")
badpolicy("number-exponent.jsonl", "1e400", "1e400")
badpolicy("number-negative.jsonl", "-1", "a negative number of seconds")
badpolicy("number-int64-min.jsonl", "-9223372036854775808", "Int64.min")
bad("number-seq-huge.jsonl", '{"seq":18446744073709551616,"type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "invalid_event", "a seq beyond UInt64")
bad("number-max-devices-zero.jsonl", '{"type":"policy.set","at":"2026-03-02T10:00:00Z","data":{"maxDevices":0}}', "invalid_event", "maxDevices 0")

# Duplicate ids with other content
DUP = "11111111-2222-4333-8444-555555555555"
lines = ["# the same id twice, the second time with other content", "",
         '{"id":"%s","type":"device.registered","user":"carol","at":"2026-03-02T09:00:00Z","data":{"deviceId":"c-phone","name":"Carol phone","kind":"mobile","binding":"permanent","via":"initial"}}' % DUP,
         '{"id":"%s","type":"device.accessed","user":"carol","at":"2026-03-02T09:01:00Z","data":{"deviceId":"c-phone"}}' % DUP]
case("duplicate-id-in-file.jsonl", lines, "duplicate_event_id", 4)
bad("duplicate-id-in-store.jsonl", '{"id":"00000000-0000-4000-8000-000000000003","type":"device.accessed","user":"alice","at":"2026-03-02T10:00:00Z","data":{"deviceId":"iphone"}}', "duplicate_event_id", "the id of stored event 3 with other content")
bad("duplicate-id-in-store-other-meta.jsonl", '{"id":"00000000-0000-4000-8000-000000000003","type":"device.accessed","user":"alice","at":"2026-03-01T09:05:00Z","data":{"deviceId":"iphone"},"meta":{"actor":"user"}}', "duplicate_event_id", "stored event 3 with a meta added")

# Recorded events with a wrong seq / version / prev / hash, on top of the base chain.
def norm(t):  # the ledger's normalised time form
    return t.replace("Z", ".000Z") if "." not in t else t
def jcs(v):
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + jcs(v[k]) for k in sorted(v, key=lambda k: k.encode("utf-16-be"))) + "}"
    if isinstance(v, list):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)
def chain_hash(prev, body):
    leaf = hashlib.sha256(b"\x00" + jcs(body).encode()).digest()
    return hashlib.sha256(bytes.fromhex(prev) + leaf).hexdigest()
# _base.jsonl is written here in the recorded form, from BASE (fixture form): its personal
# values (names) carry fixed salts in "disclosures", so its chain, and the head the
# recorded cases below build on, are the same in every store it is imported into.
BASE = [
    '{"id":"00000000-0000-4000-8000-000000000001","type":"policy.set","at":"2026-03-01T08:00:00Z","data":{"coolingSeconds":60}}',
    '{"id":"00000000-0000-4000-8000-000000000002","type":"device.registered","user":"alice","at":"2026-03-01T09:00:00Z","data":{"deviceId":"iphone","name":"Alice\'s iPhone","kind":"mobile","platform":"ios","binding":"permanent","via":"initial"},"meta":{"requestId":"REQ-TAMPER-0001"}}',
    '{"id":"00000000-0000-4000-8000-000000000003","type":"device.accessed","user":"alice","at":"2026-03-01T09:05:00Z","data":{"deviceId":"iphone"}}',
    '{"id":"00000000-0000-4000-8000-000000000004","type":"challenge.issued","user":"alice","at":"2026-03-01T09:10:00Z","data":{"challengeId":"c1","action":"login","requestingDeviceId":"laptop","expiresAt":"2026-03-01T09:11:00Z"}}',
    '{"id":"00000000-0000-4000-8000-000000000005","type":"challenge.approved","user":"alice","at":"2026-03-01T09:10:30Z","data":{"challengeId":"c1","approverDeviceId":"iphone"}}',
    '{"id":"00000000-0000-4000-8000-000000000006","type":"device.registered","user":"alice","at":"2026-03-01T09:12:00Z","data":{"deviceId":"laptop","name":"Work laptop","kind":"desktop","binding":"permanent","via":"trusted_device","challengeId":"c1"}}',
    '{"id":"00000000-0000-4000-8000-000000000007","type":"device.registered","user":"bob","at":"2026-03-01T10:00:00Z","data":{"deviceId":"pixel","name":"Bob\'s Pixel","kind":"mobile","binding":"permanent","via":"initial"}}',
    '{"id":"00000000-0000-4000-8000-000000000008","type":"device.renamed","user":"alice","at":"2026-03-01T10:30:00Z","data":{"deviceId":"iphone","name":"Alice phone"}}',
    '{"id":"00000000-0000-4000-8000-000000000009","type":"device.accessed","user":"bob","at":"2026-03-01T10:31:00Z","data":{"deviceId":"pixel"}}',
    '{"id":"00000000-0000-4000-8000-000000000010","type":"device.revoked","user":"bob","at":"2026-03-01T11:00:00Z","data":{"deviceId":"pixel"},"meta":{"actor":"admin:ops"}}',
]
def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
prev, versions, base_out = "0" * 64, {}, []
for line in BASE:
    e = json.loads(line)
    e["at"] = norm(e["at"])
    for k in ("expiresAt",):
        if k in e["data"]:
            e["data"][k] = norm(e["data"][k])
    stream = e.get("user", "$system")
    versions[stream] = versions.get(stream, 0) + 1
    e["seq"] = sum(versions.values())  # events so far
    e["version"] = versions[stream]
    hashed = json.loads(json.dumps(e))
    disclosures = {}
    if "name" in e["data"]:
        salt = b64url(hashlib.sha256(("corpus salt " + e["id"]).encode()).digest()[:16])
        disclosures["/data/name"] = salt
        hashed["data"]["name"] = {"_sd": b64url(hashlib.sha256(jcs([salt, e["data"]["name"]]).encode()).digest())}
    h = chain_hash(prev, hashed)
    if disclosures:
        e["disclosures"] = disclosures
    base_out.append(json.dumps(dict(e, prev=prev, hash=h), separators=(",", ":"), ensure_ascii=False))
    prev = h
open("_base.jsonl", "w").write("# The history every refused-input case is imported on top of: the recorded form of a valid\n"
                               "# history (fixed ids and salts, so the chain is deterministic). Written by generate.py.\n"
                               + "\n".join(base_out) + "\n")
HEAD = prev
def recorded(seq=11, version=None, prev=HEAD, hash=None, id="aaaaaaaa-0000-4000-8000-000000000011"):
    body = {"id": id, "type": "device.accessed", "user": "alice", "at": "2026-03-02T10:00:00.000Z", "data": {"deviceId": "iphone"},
            "seq": seq, "version": versions["alice"] + 1 if version is None else version}
    h = chain_hash(prev, body) if hash is None else hash
    return json.dumps(dict(body, prev=prev, hash=h), separators=(",", ":"))
open("_next-recorded-valid.jsonl", "w").write("# control: the correct recorded seq 11 on top of _base.jsonl (accepted)\n" + recorded() + "\n")
bad("recorded-wrong-seq.jsonl", recorded(seq=5), "chain_mismatch", "a recorded event claiming seq 5 at seq 11", before=())
bad("recorded-seq-gap.jsonl", recorded(seq=12), "chain_mismatch", "a recorded event claiming seq 12 at seq 11", before=())
bad("recorded-wrong-version.jsonl", recorded(version=3), "chain_mismatch", "a recorded event with a wrong stream version", before=())
bad("recorded-wrong-prev.jsonl", recorded(prev="0" * 64), "chain_mismatch", "a recorded event whose prev is not the head", before=())
bad("recorded-wrong-hash.jsonl", recorded(hash="ab" * 32), "chain_mismatch", "a recorded event with a wrong hash", before=())
good = json.loads(recorded())
good["data"]["deviceId"] = "laptop"
bad("recorded-content-edited.jsonl", json.dumps(good, separators=(",", ":")), "chain_mismatch", "a recorded event edited after hashing", before=())
nxt = recorded(seq=11)
bad("recorded-second-breaks.jsonl", recorded(seq=11, id="aaaaaaaa-0000-4000-8000-000000000012"), "chain_mismatch", "a valid seq 11, then a second event claiming seq 11", before=(nxt,))

for name, data, code, line in cases:
    open(name, "wb").write(data)
with open("manifest.tsv", "w") as m:
    m.write("# file\tcode\tline — every file here must be refused by `authledger import` with this code on this line\n")
    for name, data, code, line in sorted(cases):
        m.write(f"{name}\t{code}\t{line}\n")
print(f"{len(cases)} cases; base head {HEAD}")
