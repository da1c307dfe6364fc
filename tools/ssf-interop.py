#!/usr/bin/env python3
"""Shared Signals end to end, against a receiver we did not write the JOSE of.

Starts `authledger serve` on a fresh store, a push receiver (Python's http.server)
and a poll client, both verifying every SET with joserfc (PyPI) against the JWKS the
server publishes, and checks: the transmitter metadata; the mapping of ledger events
to CAEP/RISC events; verification events; a SET the receiver refuses (400, recorded);
a receiver outage (retries deliver later); key rotation (old kid still published);
and a server killed mid-stream (SIGKILL) and restarted: no SET lost, duplicates
only as the same jti.

usage: tools/ssf-interop.py [--bin .build/debug/authledger]
Exit 0 when every check passes; prints what failed otherwise.
"""
import argparse
import base64
import calendar
import http.server
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_support import Checks, ServeProcess, free_port  # noqa: E402

from joserfc import jws
from joserfc.jwk import KeySet

CAEP = "https://schemas.openid.net/secevent/caep/event-type/"
RISC = "https://schemas.openid.net/secevent/risc/event-type/"
VERIFICATION = "https://schemas.openid.net/secevent/ssf/event-type/verification"
ADMIN = "ssf-admin-token"
READER = "ssf-reader-token"
PUSH_AUTH = "Bearer receiver-secret-123"

check = Checks()
failures = check.failures


class Server(ServeProcess):
    def __init__(self, binary, store, port):
        super().__init__(binary, ["--store", store, "--port", str(port), "--ssf-retry-max", "0.5",
                                  "--rate-limit", "0", "--log-level", "warning"],
                         store + "-serve.log", env={"AUTHLEDGER_TOKENS": f"{ADMIN}:admin,{READER}:read"})
        self.store, self.port = store, port
        self.base = f"http://127.0.0.1:{port}"

    def start(self):
        super().start()
        self.wait_healthy(self.base)

    def call(self, method, path, body=None, token=ADMIN):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if token:
            req.add_header("Authorization", "Bearer " + token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                text = r.read().decode()
                return r.status, (json.loads(text) if text.strip() else None)
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            return e.code, (json.loads(text) if text.strip() else None)


class Verifier:
    """Verifies SETs with joserfc against the published JWKS (fetched again for an unknown kid)."""

    def __init__(self, server, issuer):
        self.server, self.issuer = server, issuer
        self.lock = threading.Lock()
        self.keys = None
        self.kids = set()

    def refresh(self):
        with urllib.request.urlopen(self.server.base + "/ssf/jwks", timeout=30) as r:
            jwks = json.loads(r.read())
        with self.lock:
            self.keys = KeySet.import_key_set(jwks)
            self.kids = {k["kid"] for k in jwks["keys"]}

    def verify(self, token, aud):
        header = json.loads(b64(token.split(".")[0]))
        if header.get("kid") not in self.kids:
            self.refresh()
        obj = jws.deserialize_compact(token, self.keys, algorithms=["RS256"])
        h = obj.headers()
        claims = json.loads(obj.payload)
        assert h["typ"] == "secevent+jwt", f"typ {h.get('typ')}"
        assert h["alg"] == "RS256"
        assert claims["iss"] == self.issuer, "iss"
        assert claims["aud"] == aud, "aud"
        assert "sub" not in claims and "exp" not in claims, "sub/exp in a SET"
        assert len(claims["events"]) == 1, "one event per SET"
        return h, claims


def b64(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


class PushReceiver:
    """RFC 8935 receiver: 202 for a valid SET, 400 with an error body otherwise."""

    def __init__(self, port):
        self.port = port
        self.verifier = None
        self.aud = None
        self.arrivals = []  # (jti, claims, kid) in arrival order
        self.bad = []
        self.lock = threading.Lock()
        self.httpd = None
        self.down = False
        self.delay = 0.0

    def start(self):
        receiver = self
        self.down = False

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                if len(raw) < length:
                    # The transmitter died mid-request (the kill -9 phase): the request never
                    # arrived whole, so there is nothing to judge; its retry will come.
                    self.close_connection = True
                    return
                body = raw.decode()
                if receiver.down:
                    # Down: the connection drops without an answer (kept-alive
                    # connections outlive the listener otherwise).
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if receiver.delay:
                    time.sleep(receiver.delay)
                status, answer = receiver.handle(self.headers, body)
                data = json.dumps(answer).encode() if answer else b""
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                if data:
                    self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(data)

        class Quiet(http.server.ThreadingHTTPServer):
            allow_reuse_address = True

            def handle_error(self, request, client_address):
                pass  # a transmitter killed mid-request: its connection breaks

        self.httpd = Quiet(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.down = True
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle(self, headers, body):
        if headers.get("Content-Type") != "application/secevent+jwt":
            return 400, {"err": "invalid_request", "description": "not application/secevent+jwt"}
        if headers.get("Authorization") != PUSH_AUTH:
            return 401, None
        try:
            h, claims = self.verifier.verify(body, self.aud)
        except Exception as e:  # noqa: BLE001 - any failure is the transmitter's
            with self.lock:
                self.bad.append(repr(e))
            return 400, {"err": "invalid_key", "description": repr(e)[:200]}
        event = next(iter(claims["events"].values()))
        if event.get("state") == "please-refuse":
            return 400, {"err": "invalid_request", "description": "refused on purpose"}
        with self.lock:
            self.arrivals.append((claims["jti"], claims, h["kid"]))
        return 202, None

    def jtis(self):
        with self.lock:
            return {a[0] for a in self.arrivals}


def seq_of(jti):
    tail = jti.rsplit("-", 1)[1]
    return None if tail.startswith("v") else int(tail)


def expected_sets(server, stream_id):
    """The ledger events that become SETs, from the export: {jti: recorded event}."""
    req = urllib.request.Request(server.base + "/v1/export", headers={"Authorization": "Bearer " + ADMIN})
    with urllib.request.urlopen(req, timeout=60) as r:
        events = [json.loads(line) for line in r.read().decode().splitlines() if line.strip()]
    mapped = {"device.registered", "device.renamed", "device.push_token_updated", "device.revoked",
              "device.all_revoked", "otp.verified"}
    return {f"{stream_id}-{e['seq']}": e for e in events if e["type"] in mapped}


def check_mapping(claims, e):
    """The CAEP/RISC event of one ledger event, as docs/SHARED-SIGNALS.md says."""
    (uri, body), = claims["events"].items()
    t = e["type"]
    want = {"device.registered": (CAEP + "credential-change", "create"),
            "device.renamed": (CAEP + "credential-change", "update"),
            "device.push_token_updated": (CAEP + "credential-change", "update"),
            "device.revoked": (CAEP + "credential-change", "revoke"),
            "device.all_revoked": (CAEP + "session-revoked", None),
            "otp.verified": (RISC + "recovery-activated", None)}[t]
    ok = uri == want[0]
    if want[1]:
        ok = ok and body.get("change_type") == want[1] and body.get("credential_type") == "app"
    sub = claims["sub_id"]
    ok = ok and sub["format"] == "complex" and sub["user"] == {"format": "opaque", "id": e["user"]}
    if "deviceId" in e["data"]:
        ok = ok and sub["device"] == {"format": "opaque", "id": e["data"]["deviceId"]}
    ok = ok and claims["txn"] == e["id"]
    sec = calendar.timegm(time.strptime(e["at"][:19], "%Y-%m-%dT%H:%M:%S"))
    ok = ok and body.get("event_timestamp") == sec
    ok = ok and isinstance(body.get("reason_admin"), dict) and body["reason_admin"].get("en")
    actor = (e.get("meta") or {}).get("actor")
    entity = {"user": "user", "system": "system"}.get(actor) or (
        "user" if actor and actor.startswith("device:") else
        "admin" if actor and actor.startswith("admin:") else
        "system" if actor and actor.startswith("service:") else None)
    ok = ok and body.get("initiating_entity") == entity
    return check(ok, f"mapping of seq {e['seq']} {t}: {json.dumps(claims)}")


def workload(server, user, with_recovery=True):
    """One user's life: registrations, a rename, a push token, revocations, OTP recovery."""
    c = server.call
    st, _ = c("POST", f"/v1/users/{user}/devices", {"deviceId": "phone", "name": "Phone one", "kind": "mobile", "actor": "user"})
    check(st == 201, f"register {user}/phone: {st}")
    c("POST", f"/v1/users/{user}/devices", {"deviceId": "laptop", "name": "Laptop one", "kind": "desktop", "via": "admin", "actor": "admin:ops"})
    c("PATCH", f"/v1/users/{user}/devices/phone", {"name": "Phone renamed", "actor": "device:phone"})
    c("PATCH", f"/v1/users/{user}/devices/phone", {"pushToken": "tok-" + user, "actor": "service:push"})
    c("DELETE", f"/v1/users/{user}/devices/laptop", {"reason": "lost", "actor": "device:phone"})
    if with_recovery:
        st, otp = c("POST", f"/v1/users/{user}/otps", {"channel": "email", "target": user + "@example.com"})
        st, grant = c("POST", f"/v1/users/{user}/otps/{otp['otpId']}/verify", {"code": otp["code"], "actor": "user"})
        c("POST", f"/v1/users/{user}/devices", {"deviceId": "tablet", "name": "Tablet one", "kind": "tablet", "via": "otp", "grantId": grant["grantId"], "actor": "user"})
    c("DELETE", f"/v1/users/{user}/devices", {"reason": "signed out everywhere", "actor": "admin:ops"})


def wait_for(cond, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return check(False, "timed out waiting for " + what)


class Poller:
    """RFC 8936 client: polls, verifies, acknowledges."""

    def __init__(self, server, verifier, stream_id, aud):
        self.server, self.verifier, self.stream_id, self.aud = server, verifier, stream_id, aud
        self.pending_acks = []
        self.received = {}
        self.verifications = []

    def poll_once(self, max_events=50, immediately=True):
        st, ans = self.server.call("POST", f"/ssf/poll/{self.stream_id}",
                                   {"maxEvents": max_events, "returnImmediately": immediately, "ack": self.pending_acks},
                                   token=READER)
        if not check(st == 200, f"poll: {st} {ans}"):
            return 0, False
        self.pending_acks = []
        for jti, token in ans["sets"].items():
            try:
                _, claims = self.verifier.verify(token, self.aud)
            except Exception as e:  # noqa: BLE001
                check(False, f"poll SET {jti} does not verify: {e!r}")
                continue
            check(claims["jti"] == jti, "poll: jti key matches the SET")
            if VERIFICATION in claims["events"]:
                self.verifications.append(claims)
            else:
                prev = self.received.get(jti)
                check(prev is None or prev["txn"] == claims["txn"], f"poll duplicate {jti} with other content")
                self.received[jti] = claims
            self.pending_acks.append(jti)
        return len(ans["sets"]), ans.get("moreAvailable", False)

    def drain(self):
        while True:
            n, more = self.poll_once()
            if n == 0 and not more:
                # Acknowledge the last ones.
                if self.pending_acks:
                    continue
                return


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=".build/debug/authledger")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    tmp = tempfile.mkdtemp(prefix="authledger-ssf-interop-")
    store = os.path.join(tmp, "store")
    server = Server(binary, store, free_port())
    receiver = PushReceiver(free_port())
    try:
        server.start()
        receiver.start()
        st, meta = server.call("GET", "/.well-known/ssf-configuration", token=None)
        check(st == 200, "metadata answers 200")
        issuer = meta["issuer"]
        for k in ["jwks_uri", "configuration_endpoint", "status_endpoint", "verification_endpoint", "authorization_schemes"]:
            check(k in meta, f"metadata has {k}")
        check(meta.get("spec_version") == "1_0", "spec_version 1_0")
        check(set(meta.get("delivery_methods_supported", [])) == {"urn:ietf:rfc:8935", "urn:ietf:rfc:8936"}, "both delivery methods")
        check({"spec_urn": "urn:ietf:rfc:6749"} in meta["authorization_schemes"], "authorization scheme urn:ietf:rfc:6749")
        verifier = Verifier(server, issuer)
        verifier.refresh()
        with urllib.request.urlopen(meta["jwks_uri"], timeout=30) as r:
            jwks = json.loads(r.read())
        for k in jwks["keys"]:
            check(k["kty"] == "RSA" and len(b64(k["n"])) * 8 >= 2048, "RSA key of 2048 bits or more")
        check(os.stat(os.path.join(store, "ssf-keys")).st_mode & 0o077 == 0, "key directory is private")
        for name in os.listdir(os.path.join(store, "ssf-keys")):
            check(os.stat(os.path.join(store, "ssf-keys", name)).st_mode & 0o777 == 0o600, f"key file {name} is 0600")

        st, _ = server.call("PUT", "/v1/policy", {"coolingSeconds": 0})
        check(st in (200, 201), f"policy: {st}")

        st, push = server.call("POST", "/ssf/streams", {
            "delivery": {"method": "urn:ietf:rfc:8935", "endpoint_url": f"http://127.0.0.1:{receiver.port}/push",
                         "authorization_header": PUSH_AUTH},
            "events_requested": [CAEP + "credential-change", CAEP + "session-revoked", RISC + "recovery-activated"],
            "description": "interop push"})
        check(st == 201, f"create push stream: {st} {push}")
        check("authorization_header" not in json.dumps(push), "the authorization header is never shown")
        st, poll = server.call("POST", "/ssf/streams", {"delivery": {"method": "urn:ietf:rfc:8936"}})
        check(st == 201 and poll["delivery"]["endpoint_url"].endswith("/ssf/poll/" + poll["stream_id"]), f"create poll stream: {st} {poll}")
        receiver.verifier, receiver.aud = verifier, push["aud"]
        poller = Poller(server, verifier, poll["stream_id"], poll["aud"])
        push_id = push["stream_id"]

        # Verification events, one of them refused by the receiver (400, recorded).
        for sid in (push_id, poll["stream_id"]):
            st, _ = server.call("POST", "/ssf/verify", {"stream_id": sid, "state": "hello-" + sid})
            check(st == 204, f"verify request: {st}")
        server.call("POST", "/ssf/verify", {"stream_id": push_id, "state": "please-refuse"})

        # Phase A: a workload, delivered.
        for u in ["alice", "bob"]:
            workload(server, u)
        exp = expected_sets(server, push_id)
        wait_for(lambda: set(exp) <= receiver.jtis(), 60, "phase A push delivery")
        check(any(c["events"].get(VERIFICATION, {}).get("state") == "hello-" + push_id for _, c, _ in receiver.arrivals),
              "push verification event with its state")
        st, status = server.call("GET", f"/ssf/status?stream_id={push_id}")
        check(any(e.get("err") == "invalid_request" and e.get("jti", "").endswith("-v2") for e in status["errors"]),
              f"the refused SET is recorded: {status['errors']}")

        # Phase B: receiver outage; retries deliver later.
        receiver.stop()
        workload(server, "carol")
        time.sleep(1.5)
        st, status = server.call("GET", f"/ssf/status?stream_id={push_id}")
        behind = expected_sets(server, push_id)
        check(status["delivered_through"] < max(seq_of(j) for j in behind), "delivery is behind while the receiver is down")
        receiver.start()
        wait_for(lambda: set(behind) <= receiver.jtis(), 60, "delivery after the receiver outage")

        # Key rotation: the new kid signs, the old one stays published.
        old_kid = receiver.arrivals[-1][2]
        st, rot = server.call("POST", "/ssf/keys/rotate")
        check(st == 200 and rot["kid"] != old_kid and old_kid in rot["published"], f"rotation: {rot}")
        # Phase C: the server is killed (SIGKILL) mid-stream and restarted; a slow
        # receiver makes sure there is a backlog when it dies.
        n0 = len(receiver.jtis())
        receiver.delay = 0.03
        for u in ["dave", "erin", "frank", "grace"]:
            workload(server, u, with_recovery=False)
        poller.poll_once(max_events=7)  # some polled (acked on the next poll), most not
        wait_for(lambda: len(receiver.jtis()) > n0 + 3, 30, "some delivery before the kill")
        check(not set(expected_sets(server, push_id)) <= receiver.jtis(), "the kill comes mid-stream")
        server.kill()
        receiver.delay = 0.0
        server.start()
        for u in ["heidi", "ivan"]:
            workload(server, u)
        final = expected_sets(server, push_id)
        wait_for(lambda: set(final) <= receiver.jtis(), 90, "delivery after the restart")
        check(any(kid == rot["kid"] for _, _, kid in receiver.arrivals), "SETs signed with the new key")

        # Push: every SET once at least, the right mapping, in seq order, duplicates only by jti.
        first = {}
        order = []
        for jti, claims, _ in receiver.arrivals:
            if jti in first:
                check(first[jti]["txn"] == claims["txn"] and first[jti]["events"] == claims["events"], f"duplicate {jti} differs")
                continue
            first[jti] = claims
            if seq_of(jti) is not None:
                order.append(seq_of(jti))
        check(order == sorted(order), "push delivers in seq order")
        check(set(first) - {j for j in first if seq_of(j) is None} == set(final), "push: exactly the expected SETs")
        for jti, e in final.items():
            check_mapping(first[jti], e)
        check(not receiver.bad, f"every pushed SET verified: {receiver.bad[:3]}")
        dups = len(receiver.arrivals) - len(first)

        # Poll: everything, verified, acknowledged; nothing left after.
        poller.drain()
        poll_expected = {j.replace(push_id, poll["stream_id"]): e for j, e in final.items()}
        check(set(poller.received) == set(poll_expected), f"poll: exactly the expected SETs ({len(poller.received)} of {len(poll_expected)})")
        for jti, e in poll_expected.items():
            if jti in poller.received:
                check_mapping(poller.received[jti], e)
        check(any(v["events"][VERIFICATION].get("state") == "hello-" + poll["stream_id"] for v in poller.verifications),
              "poll verification event with its state")
        n, more = poller.poll_once()
        check(n == 0 and not more, "poll: nothing left after acknowledging")
        st, pstatus = server.call("GET", f"/ssf/status?stream_id={poll['stream_id']}")
        check(pstatus["delivered_through"] == max(seq_of(j) for j in final), f"poll checkpoint at the last SET: {pstatus}")

        print(json.dumps({"push_sets": len(first), "push_duplicates_after_restart": dups,
                          "poll_sets": len(poller.received), "failures": len(failures)}))
    finally:
        server.stop()
        try:
            receiver.stop()
        except Exception:  # noqa: BLE001
            pass
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"ssf-interop: {len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print("ssf-interop: ok")


if __name__ == "__main__":
    main()
