#!/usr/bin/env python3
"""A transparency log written here from the C2SP and RFC texts, with PyCA cryptography
(its own signed-note signing, its own RFC 6962 Merkle tree and consistency proofs),
driving a running `authledger witness` through every answer of C2SP tlog-witness,
including a kill -9 of the witness right after a 200.

Usage: testlog.py AUTHLEDGER_BINARY WORKDIR
Exit 0 when every check passes; 1 with FAIL: ... otherwise.
"""
import base64, hashlib, os, signal, socket, subprocess, sys, time, urllib.error, urllib.request

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

BIN, WORK = sys.argv[1], sys.argv[2]
checks = 0


def fail(message):
    sys.exit("FAIL: " + message)


def ok(message):
    global checks
    checks += 1
    print("ok: " + message)


def b64(b):
    return base64.b64encode(b).decode()


class Log:
    """signed-note Ed25519 (type 0x01) over an RFC 6962 tree of its own."""

    def __init__(self, origin, seed):
        self.origin, self.key = origin, Ed25519PrivateKey.from_private_bytes(seed)
        pub = self.key.public_key().public_bytes_raw()
        self.key_id = hashlib.sha256(origin.encode() + b"\n\x01" + pub).digest()[:4]
        self.vkey = "%s+%s+%s" % (origin, self.key_id.hex(), b64(b"\x01" + pub))
        self.leaves = []

    def grow(self, n):
        while len(self.leaves) < n:
            self.leaves.append(hashlib.sha256(b"\x00" + b"entry %d" % len(self.leaves)).digest())

    @staticmethod
    def split(n):
        k = 1
        while k << 1 < n:
            k <<= 1
        return k

    def mth(self, lo, hi):
        if hi == lo:
            return hashlib.sha256(b"").digest()
        if hi - lo == 1:
            return self.leaves[lo]
        k = self.split(hi - lo)
        return hashlib.sha256(b"\x01" + self.mth(lo, lo + k) + self.mth(lo + k, hi)).digest()

    def subproof(self, m, lo, hi, b):
        n = hi - lo
        if m == n:
            return [] if b else [self.mth(lo, hi)]
        k = self.split(n)
        if m <= k:
            return self.subproof(m, lo, lo + k, b) + [self.mth(lo + k, hi)]
        return self.subproof(m - k, lo + k, hi, False) + [self.mth(lo, lo + k)]

    def proof(self, m, n):
        return [] if m == 0 else self.subproof(m, 0, n, True)

    def checkpoint(self, n, extensions=(), root=None):
        text = "%s\n%d\n%s\n" % (self.origin, n, b64(root or self.mth(0, n))) + "".join(e + "\n" for e in extensions)
        sig = self.key.sign(text.encode())
        return text, text + "\n\u2014 %s %s\n" % (self.origin, b64(self.key_id + sig))

    def request(self, old, n, proof=None, **kw):
        text, note = self.checkpoint(n, **kw)
        lines = "".join(b64(h) + "\n" for h in (self.proof(old, n) if proof is None else proof))
        return text, ("old %d\n%s\n%s" % (old, lines, note)).encode()


def post(port, body):
    req = urllib.request.Request("http://127.0.0.1:%d/add-checkpoint" % port, data=body, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode("utf-8", "replace")


def expect(port, body, status, what):
    got = post(port, body)
    if got[0] != status:
        fail("%s: expected %d, got %d %r" % (what, status, got[0], got[2][:200]))
    ok("%s -> %d" % (what, status))
    return got


def verify_cosignature(line, text, wvkey):
    """cosignature/v1 from the spec: key id = SHA-256(name || 0x0A || 0x04 || key)[:4],
    blob = key id || 8-byte big-endian time || Ed25519 signature of
    "cosignature/v1\\ntime <T>\\n" || checkpoint text."""
    name, key_id_hex, key_b64 = wvkey.split("+", 2)
    key = base64.b64decode(key_b64)
    assert key[0] == 4 and len(key) == 33
    key_id = hashlib.sha256(name.encode() + b"\n" + key).digest()[:4]
    if key_id.hex() != key_id_hex or not line.startswith("\u2014 %s " % name) or not line.endswith("\n"):
        return None
    raw = base64.b64decode(line[len(name) + 3:-1], validate=True)
    if raw[:4] != key_id or len(raw) != 76:
        return None
    t = int.from_bytes(raw[4:12], "big")
    try:
        Ed25519PublicKey.from_public_bytes(key[1:]).verify(raw[12:], b"cosignature/v1\ntime %d\n" % t + text.encode())
    except InvalidSignature:
        return None
    return t


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(port):
    proc = subprocess.Popen([BIN, "witness", "--key", WORK + "/w.key", "--logs", WORK + "/logs", "--store", WORK + "/state",
                             "--port", str(port), "--log-level", "warning"])
    for _ in range(300):
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=1)
            return proc
        except Exception:
            time.sleep(0.1)
    fail("the witness did not start")


log = Log("pylog.example/log", bytes(range(32)))
other = Log("pylog.example/other", bytes(range(1, 33)))
stranger = Log("pylog.example/stranger", bytes(range(2, 34)))
impostor = Log("pylog.example/log", bytes(range(3, 35)))
with open(WORK + "/logs", "w") as f:
    f.write("# the test logs\n%s\n%s\n" % (log.vkey, other.vkey))
subprocess.run([BIN, "witness", "--key", WORK + "/w.key", "--name", "pywitness.example/w1", "--vkey"], check=True, capture_output=True)
wvkey = subprocess.run([BIN, "witness", "--key", WORK + "/w.key", "--vkey"], check=True, capture_output=True, text=True).stdout.strip()
if oct(os.stat(WORK + "/w.key").st_mode & 0o777) != "0o600":
    fail("the witness key file is not 0600")
ok("witness key created 0600: " + wvkey)

port = free_port()
proc = start(port)
try:
    log.grow(64)
    other.grow(8)
    stranger.grow(8)
    impostor.grow(16)
    expect(port, b"garbage", 400, "malformed body")
    expect(port, bytes(range(256)) * 4, 400, "binary body")
    expect(port, log.request(0, 10)[1][:-30], 400, "truncated body")
    expect(port, b"old 0\n!!!!\n\n" + log.request(0, 10)[1].split(b"\n\n", 1)[1], 400, "bad base64 proof line")
    expect(port, log.request(0, 10, proof=[log.leaves[0]] * 64)[1], 400, "64 proof lines")
    expect(port, b"old 0\n\n" + b"x" * (1 << 20), 413, "a 1 MiB body")
    expect(port, stranger.request(0, 4)[1], 404, "unknown origin")
    expect(port, impostor.request(99, 10, proof=[])[1], 403, "signed by another key (before old > size)")
    body = log.request(0, 10)[1].replace(b"\n\n\xe2\x80\x94 pylog.example/log ", b"\n\n\xe2\x80\x94 pylog.example/log AAAA")
    expect(port, body, 403, "signature garbage")
    expect(port, log.request(11, 10, proof=[])[1], 400, "old size > checkpoint size")
    text, body = log.request(0, 10)
    _, _, answer = expect(port, body, 200, "first checkpoint at 10")
    if verify_cosignature(answer, text, wvkey) is None:
        fail("the cosignature does not verify by the spec's message: %r" % answer)
    ok("cosignature/v1 verifies with PyCA over the spec's message")
    status, ctype, answer = expect(port, log.request(0, 20)[1], 409, "old 0 while it holds 10")
    if ctype != "text/x.tlog.size" or answer != "10\n":
        fail("409 must be text/x.tlog.size '10\\n', got %r %r" % (ctype, answer))
    ok("409 says 10 as text/x.tlog.size")
    expect(port, log.request(10, 20, proof=log.proof(9, 20))[1], 422, "a proof from another size")
    forked = Log("pylog.example/log", bytes(range(32)))
    forked.leaves = list(log.leaves)
    forked.leaves[5] = hashlib.sha256(b"\x00forged").digest()
    expect(port, forked.request(10, 30)[1], 422, "a forked tree's checkpoint signed by the log")
    expect(port, forked.request(10, 10)[1], 422, "the held size with another root")
    expect(port, other.request(0, 8, proof=[other.leaves[0]])[1], 422, "a proof with old 0")
    text, body = log.request(10, 20, extensions=["ext: the witness cosigns extension lines too"])
    _, _, answer = expect(port, body, 200, "10 -> 20 with an extension line")
    if verify_cosignature(answer, text, wvkey) is None:
        fail("the cosignature does not cover the extension line")
    ok("the cosignature covers the extension line")
    expect(port, log.request(20, 20, extensions=["ext: the witness cosigns extension lines too"])[1], 200, "resubmitting the held checkpoint")
    text, body = log.request(20, 33)
    expect(port, body, 200, "20 -> 33")
    # kill -9 right after the 200: the restarted witness holds 33.
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc = start(port)
    status, ctype, answer = expect(port, log.request(0, 40)[1], 409, "after kill -9 and restart, old 0")
    if answer != "33\n":
        fail("after kill -9 the witness holds %r, not 33" % answer)
    ok("the acknowledged size 33 survived kill -9")
    expect(port, log.request(33, 20, proof=[])[1], 400, "a smaller tree is never cosigned")
    expect(port, log.request(33, 64)[1], 200, "33 -> 64 after the restart")
    metrics = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
    if 'authledger_witness_requests_total{code="409"} 1' not in metrics or 'origin="pylog.example/log"} 64' not in metrics:
        fail("/metrics lacks the request counts or the held size:\n" + metrics)
    ok("/metrics counts answers by code and shows the held size")
finally:
    proc.send_signal(signal.SIGTERM)
    proc.wait()
print("testlog: %d checks passed" % checks)
