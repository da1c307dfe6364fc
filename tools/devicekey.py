#!/usr/bin/env python3
"""A device's key, as an authenticator app would hold it, for trying device proofs from a shell
(docs/WALKTHROUGH.md, docs/REFERENCE.md §7). PyPI cryptography does the cryptography; the
private key stays in FILE (PEM, mode 0600) and never reaches the ledger.

usage: tools/devicekey.py new FILE [es256|eddsa]     create a key, print its public JWK
       tools/devicekey.py jwk FILE                   print the public JWK
       tools/devicekey.py thumbprint FILE            print its RFC 7638 thumbprint
       tools/devicekey.py rotate OLD NEW             print the JWS by OLD over NEW's thumbprint (rotate-key --signature)
       tools/devicekey.py answer FILE USER CHALLENGE approve|deny DEVICE NONCE [--user-verified]
                                                     print the JWS of an answer (approve/deny --signature)
"""
import base64, hashlib, json, os, sys
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def jcs(o):
    return json.dumps(o, sort_keys=True, separators=(",", ":")).encode()


def load(path):
    with open(path, "rb") as f:
        return serialization.load_pem_private_key(f.read(), password=None)


def jwk(key):
    if isinstance(key, ec.EllipticCurvePrivateKey):
        n = key.public_key().public_numbers()
        return {"kty": "EC", "crv": "P-256", "x": b64(n.x.to_bytes(32, "big")), "y": b64(n.y.to_bytes(32, "big"))}
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return {"kty": "OKP", "crv": "Ed25519", "x": b64(raw)}


def thumbprint(key):
    j = jwk(key)
    return b64(hashlib.sha256(jcs({m: j[m] for m in sorted(j)})).digest())


def sign(key, payload):
    alg = "ES256" if isinstance(key, ec.EllipticCurvePrivateKey) else "EdDSA"
    signing = b64(jcs({"alg": alg})) + "." + b64(payload)
    if alg == "ES256":
        r, s = decode_dss_signature(key.sign(signing.encode(), ec.ECDSA(hashes.SHA256())))
        sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    else:
        sig = key.sign(signing.encode())
    return signing + "." + b64(sig)


def main(args):
    if len(args) >= 2 and args[0] == "new":
        key = ec.generate_private_key(ec.SECP256R1()) if (args[2:] or ["es256"])[0] == "es256" else ed25519.Ed25519PrivateKey.generate()
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        fd = os.open(args[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, pem)
        os.close(fd)
        print(json.dumps(jwk(key), separators=(",", ":")))
    elif len(args) == 2 and args[0] == "jwk":
        print(json.dumps(jwk(load(args[1])), separators=(",", ":")))
    elif len(args) == 2 and args[0] == "thumbprint":
        print(thumbprint(load(args[1])))
    elif len(args) == 3 and args[0] == "rotate":
        print(sign(load(args[1]), thumbprint(load(args[2])).encode()))
    elif len(args) in (7, 8) and args[0] == "answer" and args[4] in ("approve", "deny"):
        payload = {"challengeId": args[3], "decision": args[4], "deviceId": args[5], "nonce": args[6], "user": args[2]}
        if args[7:] == ["--user-verified"]:
            payload["userVerified"] = True
        print(sign(load(args[1]), jcs(payload)))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
