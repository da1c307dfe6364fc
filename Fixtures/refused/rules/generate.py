# Writes Fixtures/refused/rules/*.jsonl and manifest.json. The refused event is always the
# last line; the expected code is written by hand below (from docs/REFERENCE.md §2 and §2.9).
import json, os
out = os.path.dirname(os.path.abspath(__file__))
os.makedirs(out, exist_ok=True)
def T(hms): return f"2026-04-01T{hms}Z"
def ev(type, at, data, user="u", meta=None, id=None, **extra):
    e = {}
    if id: e["id"] = id
    e["type"] = type
    if user is not None: e["user"] = user
    e["at"] = T(at) if len(at) <= 12 else at
    e["data"] = data
    if meta: e["meta"] = meta
    e.update(extra)
    return e
def reg(dev, at, via="initial", name=None, **more):
    d = {"deviceId": dev, "name": name or f"Device {dev}", "kind": "mobile", "binding": "permanent", "via": via}
    d.update(more)
    return ev("device.registered", at, d)
def vreq(dev, at): return ev("device.verification_requested", at, {"deviceId": dev})
def rename(dev, at, name): return ev("device.renamed", at, {"deviceId": dev, "name": name})
def revoke(dev, at, actor=None): return ev("device.revoked", at, {"deviceId": dev}, meta={"actor": actor} if actor else None)
def access(dev, at, **extra): return ev("device.accessed", at, {"deviceId": dev, **extra})
def issue(cid, at, exp, req="laptop", action="login"):
    return ev("challenge.issued", at, {"challengeId": cid, "action": action, "requestingDeviceId": req, "expiresAt": T(exp)})
def approve(cid, at, dev): return ev("challenge.approved", at, {"challengeId": cid, "approverDeviceId": dev})
def deny(cid, at, dev): return ev("challenge.denied", at, {"challengeId": cid, "approverDeviceId": dev})
def cexpire(cid, at): return ev("challenge.expired", at, {"challengeId": cid})
H = "ab" * 32
def otp(oid, at, exp, maxA=5): return ev("otp.issued", at, {"otpId": oid, "channel": "email", "target": "u***@example.com", "codeHash": H, "expiresAt": T(exp), "maxAttempts": maxA})
def ofail(oid, at): return ev("otp.failed", at, {"otpId": oid})
def overify(oid, at, gid, gexp): return ev("otp.verified", at, {"otpId": oid, "grantId": gid, "grantExpiresAt": T(gexp)})
def policy(at, **d): return ev("policy.set", at, d, user=None)
P = reg("phone", "10:00:00")

cases = [
 # name, code, why, events (last one is refused)[, more manifest members, e.g. the refusal's "until"]
 ("time_regression", "time_regression", "an event earlier than its stream's last", [P, access("phone", "09:59:59.999")]),
 ("time_regression-policy", "time_regression", "the $system stream has its own clock", [policy("10:00:00", coolingSeconds=60), policy("09:00:00", coolingSeconds=30)]),
 ("invalid_name-too-short", "invalid_name", "a name of 2 characters after trimming", [P, rename("phone", "10:01:00", "  ab  ")]),
 ("invalid_name-too-long", "invalid_name", "a name of 51 characters", [reg("phone", "10:00:00", name="x" * 51)]),
 ("invalid_name-control", "invalid_name", "a name with a control character", [reg("phone", "10:00:00", name="Bad\u0007Name")]),
 ("invalid_name-verification", "invalid_name", "a verification request's optional name is a name too", [ev("device.verification_requested", "10:00:00", {"deviceId": "x", "name": "no"})]),
 ("device_exists", "device_exists", "registering an active device again", [P, reg("phone", "10:10:00", via="admin")]),
 ("device_exists-verification", "device_exists", "a verification request for an active device", [P, vreq("phone", "10:01:00")]),
 ("device_revoked", "device_revoked", "access of a revoked device", [P, vreq("tablet", "10:01:00"), revoke("tablet", "10:02:00"), access("tablet", "10:03:00")]),
 ("device_revoked-register", "device_revoked", "a revoked device stays revoked", [P, vreq("tablet", "10:01:00"), revoke("tablet", "10:02:00"), reg("tablet", "10:30:00", via="admin")]),
 ("device_revoked-verification", "device_revoked", "a verification request for a revoked device", [P, vreq("tablet", "10:01:00"), revoke("tablet", "10:02:00"), vreq("tablet", "10:03:00")]),
 ("device_revoked-revoke", "device_revoked", "revoking a revoked device", [P, vreq("tablet", "10:01:00"), revoke("tablet", "10:02:00"), revoke("tablet", "10:30:00")]),
 ("device_revoked-push-token", "device_revoked", "push-token update of a revoked device", [P, vreq("tablet", "10:01:00"), revoke("tablet", "10:02:00"), ev("device.push_token_updated", "10:03:00", {"deviceId": "tablet", "pushToken": "tok"})]),
 ("device_not_found", "device_not_found", "access of an unknown device", [P, access("ghost", "10:01:00")]),
 ("device_not_found-rename-pending", "device_not_found", "rename needs an active device (a pending one is not)", [P, vreq("tablet", "10:01:00"), rename("tablet", "10:02:00", "New Tablet")]),
 ("device_not_found-revoke", "device_not_found", "revoking an unknown device", [P, revoke("ghost", "10:01:00")]),
 ("device_not_found-push-token-pending", "device_not_found", "push-token update of a pending device", [P, vreq("tablet", "10:01:00"), ev("device.push_token_updated", "10:02:00", {"deviceId": "tablet", "pushToken": "tok"})]),
 ("name_unchanged", "name_unchanged", "the new name equals the current one after trimming", [P, rename("phone", "10:01:00", "  Device phone ")]),
 ("verification_required-initial", "verification_required", "via initial for a user who already had a device", [P, reg("laptop", "10:10:00")]),
 ("verification_required-initial-after-revoke-all", "verification_required", "via initial stays closed after every device was revoked", [P, ev("device.all_revoked", "10:01:00", {}), reg("laptop", "10:10:00")]),
 ("verification_required-email-link", "verification_required", "via email_link without a pending request", [P, reg("laptop", "10:10:00", via="email_link")]),
 ("verification_required-trusted-denied", "verification_required", "via trusted_device with a denied challenge", [P, issue("c1", "10:01:00", "10:02:00"), deny("c1", "10:01:10", "phone"), reg("laptop", "10:03:00", via="trusted_device", challengeId="c1")]),
 ("verification_required-trusted-other-device", "verification_required", "the approved challenge was requested by another device", [P, issue("c1", "10:01:00", "10:02:00", req="tablet"), approve("c1", "10:01:10", "phone"), reg("laptop", "10:03:00", via="trusted_device", challengeId="c1")]),
 ("verification_required-trusted-not-login", "verification_required", "the approved challenge is not a login", [P, issue("c1", "10:01:00", "10:02:00", action="transaction"), approve("c1", "10:01:10", "phone"), reg("laptop", "10:03:00", via="trusted_device", challengeId="c1")]),
 ("verification_required-trusted-stale", "verification_required", "registration grantTtlSeconds (600) after the approval", [P, issue("c1", "10:01:00", "10:02:00"), approve("c1", "10:01:10", "phone"), reg("laptop", "10:11:10", via="trusted_device", challengeId="c1")]),
 ("grant_invalid-unknown", "grant_invalid", "via otp with a grant that was never issued", [P, reg("laptop", "10:10:00", via="otp", grantId="g-none")]),
 ("grant_invalid-used", "grant_invalid", "a grant is single-use", [P, otp("o1", "10:01:00", "10:06:00"), overify("o1", "10:02:00", "g1", "10:12:00"), reg("laptop", "10:03:00", via="otp", grantId="g1"), reg("tablet", "10:09:00", via="otp", grantId="g1")]),
 ("grant_invalid-expired", "grant_invalid", "a grant expires at grantExpiresAt", [P, otp("o1", "10:01:00", "10:06:00"), overify("o1", "10:02:00", "g1", "10:12:00"), reg("laptop", "10:12:00", via="otp", grantId="g1")]),
 ("device_limit_reached", "device_limit_reached", "maxDevices active devices", [policy("09:00:00", maxDevices=1), P, vreq("tablet", "10:01:00"), reg("tablet", "10:02:00", via="email_link")]),
 ("current_device_protected", "current_device_protected", "a device may not revoke itself", [P, ev("device.revoked", "10:01:00", {"deviceId": "phone"}, meta={"actor": "device:phone"})]),
 ("cooling_period_active-rename", "cooling_period_active", "a rename inside the window opened by a rename", [P, rename("phone", "10:01:00", "Phone Two"), rename("phone", "10:05:59.999", "Phone Three")]),
 ("cooling_period_active-register", "cooling_period_active", "a registration inside the window opened by a revoke", [P, vreq("tablet", "10:01:00"), revoke("tablet", "10:02:00"), vreq("laptop", "10:03:00"), reg("laptop", "10:04:00", via="email_link")]),
 ("cooling_period_active-revoke", "cooling_period_active", "a revoke inside the window opened by a registration", [P, reg("tablet", "10:01:00", via="admin"), revoke("tablet", "10:02:00")]),
 ("cooling_period_active-revoke-all", "cooling_period_active", "revoke-all inside the window opened by a rename", [P, rename("phone", "10:01:00", "Phone Two"), ev("device.all_revoked", "10:02:00", {})]),
 ("challenge_exists", "challenge_exists", "a challengeId is unique per user", [P, issue("c1", "10:01:00", "10:02:00"), issue("c1", "10:05:00", "10:06:00")]),
 ("challenge_not_found", "challenge_not_found", "approving an unknown challenge", [P, approve("c9", "10:01:00", "phone")]),
 ("challenge_not_found-expire", "challenge_not_found", "expiring an unknown challenge", [P, cexpire("c9", "10:01:00")]),
 ("challenge_resolved", "challenge_resolved", "approving a denied challenge", [P, issue("c1", "10:01:00", "10:02:00"), deny("c1", "10:01:10", "phone"), approve("c1", "10:01:20", "phone")]),
 ("challenge_resolved-expire", "challenge_resolved", "expiring an approved challenge", [P, issue("c1", "10:01:00", "10:02:00"), approve("c1", "10:01:10", "phone"), cexpire("c1", "10:03:00")]),
 ("challenge_expired", "challenge_expired", "approving at expiresAt (pending means at < expiresAt)", [P, issue("c1", "10:01:00", "10:02:00"), approve("c1", "10:02:00", "phone")]),
 ("challenge_expired-deny", "challenge_expired", "denying after silent expiry", [P, issue("c1", "10:01:00", "10:02:00"), deny("c1", "10:30:00", "phone")]),
 ("challenge_expired-after-expired-event", "challenge_expired", "approving a challenge whose challenge.expired is recorded (expired, not resolved)", [P, issue("c1", "10:01:00", "10:02:00"), cexpire("c1", "10:03:00"), approve("c1", "10:04:00", "phone")], {"until": T("10:02:00.000")}),
 ("challenge_expired-deny-after-expired-event", "challenge_expired", "denying a challenge whose challenge.expired is recorded", [P, issue("c1", "10:01:00", "10:02:00"), cexpire("c1", "10:02:00"), deny("c1", "10:02:30", "phone")], {"until": T("10:02:00.000")}),
 ("challenge_not_expired", "challenge_not_expired", "challenge.expired before expiresAt", [P, issue("c1", "10:01:00", "10:02:00"), cexpire("c1", "10:01:59.999")]),
 ("approver_not_trusted-pending-device", "approver_not_trusted", "the approver is not an active device", [P, vreq("laptop", "10:00:30"), issue("c1", "10:01:00", "10:02:00", req="tablet"), approve("c1", "10:01:10", "laptop")]),
 ("approver_not_trusted-self", "approver_not_trusted", "a requester that was not active at issue may not approve itself", [P, issue("c1", "10:01:00", "10:02:00", req="laptop"), approve("c1", "10:01:10", "laptop")]),
 ("approver_not_trusted-self-activated-later", "approver_not_trusted", "self-approval needs the requester active when the challenge was issued", [P, issue("c1", "10:01:00", "10:20:00", req="tablet"), reg("tablet", "10:02:00", via="admin"), approve("c1", "10:03:00", "tablet")]),
 ("approver_not_trusted-revoked", "approver_not_trusted", "a revoked device may not approve", [P, reg("tablet", "10:00:30", via="admin"), revoke("tablet", "10:06:00"), issue("c1", "10:12:00", "10:13:00"), approve("c1", "10:12:10", "tablet")]),
 ("approver_not_trusted-self-deny", "approver_not_trusted", "only the self-approval is exempt, not a self-denial", [P, issue("c1", "10:01:00", "10:02:00", req="phone"), deny("c1", "10:01:10", "phone")]),
 ("otp_exists", "otp_exists", "an otpId is unique per user", [P, otp("o1", "10:01:00", "10:06:00"), otp("o1", "10:02:00", "10:07:00")]),
 ("otp_rate_limited", "otp_rate_limited", "a 6th OTP within (t - 3600 s, t]", [otp("o1", "10:00:00", "10:05:00"), otp("o2", "10:10:00", "10:15:00"), otp("o3", "10:20:00", "10:25:00"), otp("o4", "10:30:00", "10:35:00"), otp("o5", "10:40:00", "10:45:00"), otp("o6", "10:59:59.999", "11:04:00")]),
 ("otp_rate_limited-policy", "otp_rate_limited", "otpPerHour from policy.set", [policy("09:00:00", otpPerHour=1), otp("o1", "10:00:00", "10:05:00"), otp("o2", "10:30:00", "10:35:00")]),
 ("otp_rate_limited-lowered", "otp_rate_limited", "after otpPerHour is lowered to 2, the limit lifts when all but one of the hour's issues are over an hour old", [otp("o1", "10:00:00", "10:05:00"), otp("o2", "10:10:00", "10:15:00"), otp("o3", "10:20:00", "10:25:00"), otp("o4", "10:30:00", "10:35:00"), policy("10:35:00", otpPerHour=2), otp("o5", "10:40:00", "10:45:00")], {"until": T("11:20:00.000")}),
 ("otp_not_found", "otp_not_found", "failing an unknown OTP", [P, ofail("o9", "10:01:00")]),
 ("otp_not_found-superseded", "otp_not_found", "a new otp.issued supersedes earlier ones", [P, otp("o1", "10:01:00", "10:06:00"), otp("o2", "10:02:00", "10:07:00"), overify("o1", "10:03:00", "g1", "10:13:00")]),
 ("otp_not_found-verified", "otp_not_found", "a verified OTP cannot be verified again", [P, otp("o1", "10:01:00", "10:06:00"), overify("o1", "10:02:00", "g1", "10:12:00"), overify("o1", "10:03:00", "g2", "10:13:00")]),
 ("otp_expired", "otp_expired", "failing at expiresAt", [P, otp("o1", "10:01:00", "10:06:00"), ofail("o1", "10:06:00")]),
 ("otp_locked", "otp_locked", "maxAttempts failures lock the OTP", [P, otp("o1", "10:01:00", "10:06:00", maxA=2), ofail("o1", "10:02:00"), ofail("o1", "10:03:00"), overify("o1", "10:04:00", "g1", "10:14:00")]),
 ("duplicate_event_id", "duplicate_event_id", "an id already in the log with other content", [ev("device.registered", "10:00:00", P["data"], id="d0000000-0000-4000-8000-000000000001"), ev("device.accessed", "10:01:00", {"deviceId": "phone"}, id="d0000000-0000-4000-8000-000000000001")]),
 ("chain_mismatch-seq", "chain_mismatch", "a recorded seq that is not the next position", [P, ev("device.accessed", "10:01:00", {"deviceId": "phone"}, seq=3)]),
 ("chain_mismatch-version", "chain_mismatch", "a recorded version that is not the stream's next", [P, ev("device.accessed", "10:01:00", {"deviceId": "phone"}, version=1)]),
 ("chain_mismatch-hash", "chain_mismatch", "a recorded hash that is not the computed one", [P, ev("device.accessed", "10:01:00", {"deviceId": "phone"}, id="d0000000-0000-4000-8000-000000000002", seq=2, version=2, hash="0" * 64)]),
 ("invalid_event-grant-without-otp", "invalid_event", "grantId only with via otp", [P, reg("laptop", "10:10:00", via="admin", grantId="g1")]),
 ("invalid_event-challenge-without-trusted-device", "invalid_event", "challengeId only with via trusted_device", [P, reg("laptop", "10:10:00", via="otp", grantId="g1", challengeId="c1")]),
 ("invalid_event-otp-without-grant", "invalid_event", "via otp needs grantId", [P, reg("laptop", "10:10:00", via="otp")]),
 ("invalid_event-trusted-device-without-challenge", "invalid_event", "via trusted_device needs challengeId", [P, reg("laptop", "10:10:00", via="trusted_device")]),
 ("invalid_event-reserved-user", "invalid_event", "user keys starting with $ are reserved", [ev("device.registered", "10:00:00", P["data"], user="$system")]),
 ("invalid_event-policy-with-user", "invalid_event", "policy.set has no user", [ev("policy.set", "10:00:00", {"coolingSeconds": 60}, user="u")]),
 ("invalid_event-unknown-field", "invalid_event", "unknown data fields are refused", [P, access("phone", "10:01:00", extra="x")]),
 ("invalid_event-bad-actor", "invalid_event", "meta.actor must have one of the five forms", [P, ev("device.accessed", "10:01:00", {"deviceId": "phone"}, meta={"actor": "root"})]),
 # docs/REFERENCE.md §2.9: which code wins when several rules fail.
 ("prec-invalid_event-over-time_regression", "invalid_event", "unknown field and earlier time", [P, access("phone", "09:00:00", extra="x")]),
 ("prec-invalid_event-expiry-over-time_regression", "invalid_event", "expiresAt before at (a static fault) and earlier time", [P, issue("c1", "09:00:00", "08:00:00")]),
 ("prec-time_regression-over-invalid_name", "time_regression", "earlier time and a bad name", [P, rename("ghost", "09:00:00", "x")]),
 ("prec-invalid_name-over-device_not_found", "invalid_name", "a bad name for an unknown device", [P, rename("ghost", "10:01:00", "x")]),
 ("prec-device_exists-over-verification_required", "device_exists", "via initial again for the same device", [P, reg("phone", "10:10:00")]),
 ("prec-device_not_found-over-current_device_protected", "device_not_found", "an unknown device revoking itself", [P, revoke("ghost", "10:01:00", actor="device:ghost")]),
 ("prec-device_revoked-over-current_device_protected", "device_revoked", "a revoked device revoking itself", [P, vreq("tablet", "10:01:00"), revoke("tablet", "10:02:00"), revoke("tablet", "10:30:00", actor="device:tablet")]),
 ("prec-device_revoked-over-cooling", "device_revoked", "a revoked device, during cooling", [P, vreq("tablet", "10:01:00"), revoke("tablet", "10:02:00"), revoke("tablet", "10:03:00")]),
 ("prec-name_unchanged-over-cooling", "name_unchanged", "same name, during cooling", [P, rename("phone", "10:01:00", "Phone Two"), rename("phone", "10:02:00", "Phone Two")]),
 ("prec-verification_required-over-cooling", "verification_required", "no pending request, during cooling", [P, rename("phone", "10:01:00", "Phone Two"), reg("laptop", "10:02:00", via="email_link")]),
 ("prec-grant_invalid-over-cooling", "grant_invalid", "an unknown grant, during cooling", [P, rename("phone", "10:01:00", "Phone Two"), reg("laptop", "10:02:00", via="otp", grantId="g-none")]),
 ("prec-current_device_protected-over-cooling", "current_device_protected", "self-revoke, during cooling", [P, rename("phone", "10:01:00", "Phone Two"), revoke("phone", "10:02:00", actor="device:phone")]),
 ("prec-cooling-over-device_limit_reached", "cooling_period_active", "over the limit, during cooling", [policy("09:00:00", maxDevices=1), P, rename("phone", "10:01:00", "Phone Two"), reg("tablet", "10:02:00", via="admin")]),
 ("prec-otp_exists-over-otp_rate_limited", "otp_exists", "a reused otpId, over the rate", [otp("o1", "10:00:00", "10:05:00"), otp("o2", "10:10:00", "10:15:00"), otp("o3", "10:20:00", "10:25:00"), otp("o4", "10:30:00", "10:35:00"), otp("o5", "10:40:00", "10:45:00"), otp("o1", "10:50:00", "10:55:00")]),
 ("prec-challenge_expired-over-approver_not_trusted", "challenge_expired", "an untrusted approver, after expiry", [P, issue("c1", "10:01:00", "10:02:00"), approve("c1", "10:03:00", "ghost")]),
 ("prec-challenge_resolved-over-challenge_expired", "challenge_resolved", "a denied challenge, after expiry", [P, issue("c1", "10:01:00", "10:02:00"), deny("c1", "10:01:10", "phone"), approve("c1", "10:30:00", "phone")]),
 ("prec-otp_not_found-over-otp_expired", "otp_not_found", "a superseded OTP, after expiry", [otp("o1", "10:00:00", "10:05:00"), otp("o2", "10:01:00", "10:06:00"), ofail("o1", "10:10:00")]),
 ("prec-otp_expired-over-otp_locked", "otp_expired", "a locked OTP, after expiry", [otp("o1", "10:00:00", "10:05:00", maxA=1), ofail("o1", "10:01:00"), ofail("o1", "10:06:00")]),
]
# Device proofs (docs/REFERENCE.md §11). Ed25519 signatures are deterministic, so these files
# regenerate byte for byte; the keys are fixed test keys (PyPI cryptography signs).
import base64, hashlib
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives import serialization
def b64(b): return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
def edkey(n): return ed25519.Ed25519PrivateKey.from_private_bytes(bytes([n]) * 32)
def jwk(k): return {"kty": "OKP", "crv": "Ed25519", "x": b64(k.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))}
def jws(k, payload):
    signing = b64(b'{"alg":"EdDSA"}') + "." + b64(payload)
    return signing + "." + b64(k.sign(signing.encode()))
def jcs(o): return json.dumps(o, sort_keys=True, separators=(",", ":")).encode()
def thumb(j): return b64(hashlib.sha256(jcs({m: j[m] for m in ("crv", "kty", "x")})).digest())
KA, KB = edkey(1), edkey(2)
N = "AAECAwQFBgcICQoLDA0ODw"
def answer(k, cid, decision, dev, nonce=N): return jws(k, jcs({"challengeId": cid, "decision": decision, "deviceId": dev, "nonce": nonce, "user": "u"}))
PK = reg("phone", "10:00:00", publicKey=jwk(KA))
def nissue(cid, at, exp, req="laptop"): return ev("challenge.issued", at, {"challengeId": cid, "action": "login", "requestingDeviceId": req, "expiresAt": T(exp), "nonce": N})
def sapprove(cid, at, dev, sig): return ev("challenge.approved", at, {"challengeId": cid, "approverDeviceId": dev, "signature": sig})
def sdeny(cid, at, dev, sig): return ev("challenge.denied", at, {"challengeId": cid, "approverDeviceId": dev, "signature": sig})
def lreq(dev, at, vid, exp, h="cd" * 32): return ev("device.verification_requested", at, {"deviceId": dev, "verificationId": vid, "linkHash": h, "linkExpiresAt": T(exp)})
EC_OFF = {"kty": "EC", "crv": "P-256", "x": b64(bytes(32)), "y": b64(bytes(31) + b"\x01")}
cases += [
 ("signature_invalid-forged-approval", "signature_invalid", "an approval signed by another key than the approver's", [PK, nissue("c1", "10:01:00", "10:02:00"), sapprove("c1", "10:01:10", "phone", answer(KB, "c1", "approve", "phone"))]),
 ("signature_invalid-replayed-denial", "signature_invalid", "a denial carrying the approver's signature of an approval", [PK, nissue("c1", "10:01:00", "10:02:00"), sdeny("c1", "10:01:10", "phone", answer(KA, "c1", "approve", "phone"))]),
 ("signature_invalid-other-nonce", "signature_invalid", "an approval signed over another nonce", [PK, nissue("c1", "10:01:00", "10:02:00"), sapprove("c1", "10:01:10", "phone", answer(KA, "c1", "approve", "phone", nonce="DwAAAAAAAAAAAAAAAAAAAA"))]),
 ("signature_invalid-no-key", "signature_invalid", "a signature from a device without a key", [P, nissue("c1", "10:01:00", "10:02:00"), sapprove("c1", "10:01:10", "phone", answer(KA, "c1", "approve", "phone"))]),
 ("signature_invalid-no-nonce", "signature_invalid", "a signed answer to a challenge recorded without nonce", [PK, issue("c1", "10:01:00", "10:02:00"), sapprove("c1", "10:01:10", "phone", answer(KA, "c1", "approve", "phone"))]),
 ("signature_invalid-rotation", "signature_invalid", "a key rotation signed by the new key instead of the old one", [PK, ev("device.key_rotated", "10:01:00", {"deviceId": "phone", "publicKey": jwk(KB), "signature": jws(KB, thumb(jwk(KB)).encode())})]),
 ("signature_invalid-not-jws", "signature_invalid", "a signature that is not a compact JWS", [PK, nissue("c1", "10:01:00", "10:02:00"), sapprove("c1", "10:01:10", "phone", "not.a-jws")]),
 ("signature_required", "signature_required", "requireSignedApprovals and an unsigned approval by a device with a key", [policy("09:00:00", requireSignedApprovals=True), PK, nissue("c1", "10:01:00", "10:02:00"), approve("c1", "10:01:10", "phone")]),
 ("verification_required-link", "verification_required", "via email_link without the verificationId of a request that has a link", [P, lreq("laptop", "10:01:00", "v1", "10:11:00"), reg("laptop", "10:02:00", via="email_link")]),
 ("verification_required-link-expired", "verification_required", "via email_link at the request's linkExpiresAt", [P, lreq("laptop", "10:01:00", "v1", "10:11:00"), reg("laptop", "10:11:00", via="email_link", verificationId="v1")]),
 ("verification_required-link-superseded", "verification_required", "the verificationId of a superseded request", [P, lreq("laptop", "10:01:00", "v1", "10:11:00"), lreq("laptop", "10:02:00", "v2", "10:12:00", h="ef" * 32), reg("laptop", "10:03:00", via="email_link", verificationId="v1")]),
 ("invalid_event-private-jwk", "invalid_event", "a publicKey with the private member d", [reg("phone", "10:00:00", publicKey=dict(jwk(KA), d=b64(bytes([1]) * 32)))]),
 ("invalid_event-off-curve-jwk", "invalid_event", "a P-256 publicKey whose point is not on the curve", [reg("phone", "10:00:00", publicKey=EC_OFF)]),
 ("invalid_event-verification-id-reused", "invalid_event", "a verificationId is unique per user", [P, lreq("laptop", "10:01:00", "v1", "10:11:00"), lreq("tablet", "10:02:00", "v1", "10:12:00", h="ef" * 32)]),
 ("prec-approver_not_trusted-over-signature_invalid", "approver_not_trusted", "a forged signature from a device that may not approve", [PK, nissue("c1", "10:01:00", "10:02:00"), sapprove("c1", "10:01:10", "ghost", answer(KB, "c1", "approve", "ghost"))]),
 ("prec-challenge_expired-over-signature_invalid", "challenge_expired", "a forged signature, after expiry", [PK, nissue("c1", "10:01:00", "10:02:00"), sapprove("c1", "10:03:00", "phone", answer(KB, "c1", "approve", "phone"))]),
]
manifest = []
for name, code, why, events, *more in cases:
    lines = [f"# refused: {code} — {why}"] + [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in events]
    open(f"{out}/{name}.jsonl", "w").write("\n".join(lines) + "\n")
    manifest.append({"file": f"{name}.jsonl", "code": code, "line": len(lines), "why": why, **(more[0] if more else {})})
open(f"{out}/manifest.json", "w").write(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
print(len(cases), sorted(set(c[1] for c in cases)))
