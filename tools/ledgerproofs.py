"""Device proofs of an AuthLedger export (docs/REFERENCE.md §11), checked offline with PyPI
`cryptography` (no AuthLedger code): keys from device.registered / device.key_rotated, signed
answers over the JCS of {challengeId, decision, deviceId, nonce, user[, userVerified]}, rotations
over the new key's RFC 7638 thumbprint. Used by tools/verify-export.py.
"""
import base64, hashlib, json


def b64d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def b64e(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def jcs(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def thumbprint(jwk):
    members = ("crv", "kty", "x", "y") if jwk["kty"] == "EC" else ("crv", "kty", "x")
    return b64e(hashlib.sha256(jcs({k: jwk[k] for k in members})).digest())


def verify_jws(jwk, token):
    """The payload of compact JWS `token` when it verifies under `jwk`, else None."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    try:
        h, p, s = token.split(".")
        alg = json.loads(b64d(h))["alg"]
        sig, signing_input = b64d(s), (h + "." + p).encode()
        if jwk["kty"] == "EC" and alg == "ES256" and len(sig) == 64:
            key = ec.EllipticCurvePublicNumbers(int.from_bytes(b64d(jwk["x"]), "big"), int.from_bytes(b64d(jwk["y"]), "big"),
                                                ec.SECP256R1()).public_key()
            key.verify(encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big")), signing_input,
                       ec.ECDSA(hashes.SHA256()))
        elif jwk["kty"] == "OKP" and alg == "EdDSA":
            ed25519.Ed25519PublicKey.from_public_bytes(b64d(jwk["x"])).verify(sig, signing_input)
        else:
            return None
        return b64d(p)
    except (InvalidSignature, ValueError, KeyError, TypeError):
        return None


class ProofChecker:
    """Fed the export's events in order; `check` returns an error text for a bad signature, else None."""

    def __init__(self):
        self.keys, self.nonces, self.count = {}, {}, 0

    def check(self, e):
        d, u = e.get("data", {}), e.get("user")
        t = e.get("type")
        if t == "device.registered" and "publicKey" in d:
            self.keys[(u, d["deviceId"])] = d["publicKey"]
        elif t == "challenge.issued" and "nonce" in d:
            self.nonces[(u, d["challengeId"])] = d["nonce"]
        elif t == "device.key_rotated":
            old = self.keys.get((u, d["deviceId"]))
            if old is None or verify_jws(old, d["signature"]) != thumbprint(d["publicKey"]).encode():
                return "key rotation not signed by the old key over the new key's thumbprint"
            self.keys[(u, d["deviceId"])] = d["publicKey"]
            self.count += 1
        elif t in ("challenge.approved", "challenge.denied") and "signature" in d:
            key, nonce = self.keys.get((u, d["approverDeviceId"])), self.nonces.get((u, d["challengeId"]))
            payload = {"challengeId": d["challengeId"], "decision": "approve" if t == "challenge.approved" else "deny",
                       "deviceId": d["approverDeviceId"], "nonce": nonce, "user": u}
            if d.get("userVerified") is True:
                payload["userVerified"] = True
            if key is None or nonce is None or verify_jws(key, d["signature"]) != jcs(payload):
                return "signed answer does not verify against the device's key"
            self.count += 1
        return None
