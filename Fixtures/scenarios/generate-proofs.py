# Writes the device-proof scenarios 06–08 (docs/REFERENCE.md §11): their events, with keys and
# signatures made by PyPI cryptography (fixed test keys; Ed25519 and RFC 6979 ECDSA are
# deterministic, so the files regenerate byte for byte). Prints each key's RFC 7638 thumbprint
# for the hand-written .expect.jsonl files.
import base64, hashlib, json, os
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

out = os.path.dirname(os.path.abspath(__file__))
def b64(b): return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
def jcs(o): return json.dumps(o, sort_keys=True, separators=(",", ":")).encode()

class Key:
    def __init__(self, kind, n):
        self.kind = kind
        if kind == "ES256":
            self.k = ec.derive_private_key(n * 7919 + 12345, ec.SECP256R1())
            p = self.k.public_key().public_numbers()
            self.jwk = {"kty": "EC", "crv": "P-256", "x": b64(p.x.to_bytes(32, "big")), "y": b64(p.y.to_bytes(32, "big"))}
        else:
            self.k = ed25519.Ed25519PrivateKey.from_private_bytes(bytes([n]) * 32)
            raw = self.k.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            self.jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64(raw)}
    def thumbprint(self):
        members = ("crv", "kty", "x", "y") if self.kind == "ES256" else ("crv", "kty", "x")
        return b64(hashlib.sha256(jcs({m: self.jwk[m] for m in members})).digest())
    def sign(self, payload):
        signing = b64(jcs({"alg": self.kind})) + "." + b64(payload)
        if self.kind == "ES256":
            r, s = decode_dss_signature(self.k.sign(signing.encode(), ec.ECDSA(hashes.SHA256(), deterministic_signing=True)))
            sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        else:
            sig = self.k.sign(signing.encode())
        return signing + "." + b64(sig)
    def answer(self, user, cid, decision, dev, nonce, uv=False):
        p = {"challengeId": cid, "decision": decision, "deviceId": dev, "nonce": nonce, "user": user}
        if uv: p["userVerified"] = True
        return self.sign(jcs(p))

def write(name, header, user, prefix, events):
    lines = header[:]
    for i, (type, at, data, *rest) in enumerate(events, 1):
        e = {"id": f"{prefix}-0000-4000-8000-{i:012d}", "type": type}
        if type != "policy.set": e["user"] = user
        e["at"] = at
        e["data"] = data
        if rest: e["meta"] = rest[0]
        lines.append(json.dumps(e, ensure_ascii=False, separators=(",", ":")))
    open(f"{out}/{name}.jsonl", "w").write("\n".join(lines) + "\n")

def T(d, hms): return f"2026-03-{d}T{hms}Z"
H1, H2 = "1f" * 32, "2e" * 32
N1, N2, N3, N4 = "bm9uY2Utb25lLTE2Ynl0ZQ", "bm9uY2UtdHdvLTE2Ynl0ZQ", "bm9uY2UtdGhyZWUtMTZieQ", "bm9uY2UtZm91ci0xNmJ5dA"

# 06: an email link redeemed with a key
KA, KC = Key("EdDSA", 6), Key("ES256", 6)
write("06-email-link-with-key", [
    "# Flow (f): a device's life with a link and a key. dana's phone registers with an Ed25519 key; a new laptop",
    "# asks to be verified twice (the second request supersedes the first link) and is registered by redeeming",
    "# the second link (verificationId v-2) with its own P-256 key. Default policy. seq = event order."],
    "dana", "f0000006", [
    ("device.registered", T("05", "09:00:00"), {"deviceId": "phone", "name": "Dana's Phone", "kind": "mobile", "platform": "android", "binding": "permanent", "via": "initial", "publicKey": KA.jwk}, {"actor": "user"}),
    ("device.verification_requested", T("05", "09:01:00"), {"deviceId": "laptop", "name": "Dana's Laptop", "kind": "desktop", "platform": "linux", "channel": "email_link", "verificationId": "v-1", "linkHash": H1, "linkExpiresAt": T("05", "09:11:00")}),
    ("device.verification_requested", T("05", "09:03:00"), {"deviceId": "laptop", "name": "Dana's Laptop", "kind": "desktop", "platform": "linux", "channel": "email_link", "verificationId": "v-2", "linkHash": H2, "linkExpiresAt": T("05", "09:13:00")}),
    ("device.registered", T("05", "09:05:00"), {"deviceId": "laptop", "name": "Dana's Laptop", "kind": "desktop", "platform": "linux", "binding": "permanent", "via": "email_link", "verificationId": "v-2", "publicKey": KC.jwk}, {"actor": "device:laptop"}),
    ("device.accessed", T("05", "09:06:00"), {"deviceId": "laptop"}),
])

# 07: signed approvals and a signed denial, with requireSignedApprovals
KE = Key("ES256", 7)
write("07-signed-approval", [
    "# Flow (g): signed answers. gwen's phone has a P-256 key; requireSignedApprovals is set. A login challenge of a",
    "# new desktop is approved with a signature (userVerified), the desktop registers via trusted_device; a",
    "# transaction is denied with a signature; the phone's own challenge is not approved at once and it approves",
    "# it itself, signed. seq = event order."],
    "gwen", "f0000007", [
    ("device.registered", T("06", "08:00:00"), {"deviceId": "phone", "name": "Gwen's Phone", "kind": "mobile", "platform": "ios", "binding": "permanent", "via": "initial", "publicKey": KE.jwk}),
    ("policy.set", T("06", "08:00:30"), {"requireSignedApprovals": True}),
    ("challenge.issued", T("06", "08:05:00"), {"challengeId": "c-login", "action": "login", "requestingDeviceId": "desktop", "expiresAt": T("06", "08:06:00"), "nonce": N1}),
    ("challenge.approved", T("06", "08:05:20"), {"challengeId": "c-login", "approverDeviceId": "phone", "userVerified": True, "signature": KE.answer("gwen", "c-login", "approve", "phone", N1, uv=True)}, {"actor": "device:phone"}),
    ("device.registered", T("06", "08:06:00"), {"deviceId": "desktop", "name": "Gwen's Desktop", "kind": "desktop", "platform": "linux", "binding": "permanent", "via": "trusted_device", "challengeId": "c-login"}),
    ("challenge.issued", T("06", "08:20:00"), {"challengeId": "c-tx", "action": "transaction", "requestingDeviceId": "desktop", "expiresAt": T("06", "08:21:00"), "nonce": N2}),
    ("challenge.denied", T("06", "08:20:10"), {"challengeId": "c-tx", "approverDeviceId": "phone", "signature": KE.answer("gwen", "c-tx", "deny", "phone", N2)}),
    ("challenge.issued", T("06", "08:30:00"), {"challengeId": "c-own", "action": "transaction", "requestingDeviceId": "phone", "expiresAt": T("06", "08:31:00"), "nonce": N3}),
    ("challenge.approved", T("06", "08:30:05"), {"challengeId": "c-own", "approverDeviceId": "phone", "signature": KE.answer("gwen", "c-own", "approve", "phone", N3)}),
])

# 08: key rotations
KF1, KF2, KF3 = Key("ES256", 8), Key("EdDSA", 8), Key("ES256", 9)
write("08-key-rotation", [
    "# Flow (h): key rotation. finn's phone rotates its P-256 key to an Ed25519 key (signed by the old key over the",
    "# new key's RFC 7638 thumbprint), approves a login with the new key, and rotates again. seq = event order."],
    "finn", "f0000008", [
    ("device.registered", T("07", "07:00:00"), {"deviceId": "phone", "name": "Finn's Phone", "kind": "mobile", "binding": "permanent", "via": "initial", "publicKey": KF1.jwk}),
    ("device.key_rotated", T("07", "07:10:00"), {"deviceId": "phone", "publicKey": KF2.jwk, "signature": KF1.sign(KF2.thumbprint().encode())}),
    ("challenge.issued", T("07", "07:20:00"), {"challengeId": "c1", "action": "login", "requestingDeviceId": "laptop", "expiresAt": T("07", "07:21:00"), "nonce": N4}),
    ("challenge.approved", T("07", "07:20:10"), {"challengeId": "c1", "approverDeviceId": "phone", "signature": KF2.answer("finn", "c1", "approve", "phone", N4)}),
    ("device.key_rotated", T("07", "07:30:00"), {"deviceId": "phone", "publicKey": KF3.jwk, "signature": KF2.sign(KF3.thumbprint().encode())}),
])
for n, k in [("dana phone", KA), ("dana laptop", KC), ("gwen phone", KE), ("finn 1", KF1), ("finn 2", KF2), ("finn 3", KF3)]:
    print(n, k.thumbprint())
