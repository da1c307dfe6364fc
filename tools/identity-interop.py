#!/usr/bin/env python3
"""Service identity and transport, as an operator runs them, against stock clients.

Starts `authledger serve` as a child, on loopback, with:
- an identity provider played by a small OIDC discovery + JWKS server (http.server),
  its keys made and its tokens signed by joserfc (RS256, ES256, EdDSA); every bad token
  (expired, not yet valid, wrong audience, wrong issuer, alg none, HS256 keyed with the
  public key, unknown kid, garbage) is 401 with its reason in WWW-Authenticate, nothing
  appended, the server up; a rotated key is fetched again for its unknown kid, at most
  once a minute;
- TLS and mTLS with certificates made here (PyCA cryptography), checked with Python's
  ssl: plain HTTP and TLS 1.1 refused, a client certificate of another CA refused, the
  certificate's SAN URI / DNS name recorded as meta.caller cert:<identity>;
- SIGHUP swapping the server certificate and the tokens while a connection stays open
  (it keeps working), and a broken reload keeping the old ones;
- --config FILE (YAML and JSON): options from the file, a flag overriding one, unknown
  keys and bad values refused with exit 2 naming the key.

usage: tools/identity-interop.py [--bin .build/debug/authledger]
Exit 0 when every check passes; prints what failed otherwise.
"""
import argparse
import warnings
import base64
import datetime
import hashlib
import hmac
import http.client
import http.server
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from joserfc import jwt
from joserfc.jwk import ECKey, OKPKey, RSAKey

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_support import Checks, ServeProcess, free_port  # noqa: E402

ADMIN = "ops-admin-secret"
READER = "auditor-reader-secret"
check = Checks()
failures = check.failures


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# ---------------------------------------------------------------- certificates

def make_key():
    return ec.generate_private_key(ec.SECP256R1())


def make_ca(name):
    key = make_key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


def issue(ca, cn, sans, server):
    ca_key, ca_cert = ca
    key = make_key()
    now = datetime.datetime.now(datetime.timezone.utc)
    usage = x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server else x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH])
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(usage, critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert


def write_pem(path, key=None, cert=None):
    with open(path, "wb") as f:
        if cert is not None:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        if key is not None:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    return path


def server_sans():
    import ipaddress
    return [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]


# ---------------------------------------------------------------- the server

class Serve(ServeProcess):
    def __init__(self, binary, workdir, args, env=None, name="serve"):
        super().__init__(binary, args, os.path.join(workdir, name + ".log"), env=env)
        self.start()


def request(base_or_conn, method, path, body=None, token=None, context=None, timeout=30):
    """(status, headers, json or text) over a new connection to base, or an open one."""
    if isinstance(base_or_conn, http.client.HTTPConnection):
        conn, close = base_or_conn, False
    else:
        scheme, rest = base_or_conn.split("://")
        host, port = rest.split(":")
        conn = (http.client.HTTPSConnection(host, int(port), context=context, timeout=timeout) if scheme == "https"
                else http.client.HTTPConnection(host, int(port), timeout=timeout))
        close = True
    headers = {}
    data = None
    if token:
        headers["Authorization"] = "Bearer " + token
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        text = r.read().decode()
        try:
            parsed = json.loads(text) if text.strip() else None
        except ValueError:
            parsed = text
        return r.status, {k.lower(): v for k, v in r.getheaders()}, parsed
    finally:
        if close:
            conn.close()


def wait_healthy(base, context=None, attempts=600):
    for _ in range(attempts):
        try:
            if request(base, "GET", "/health", context=context, timeout=5)[0] == 200:
                return True
        except (OSError, ssl.SSLError, http.client.HTTPException):
            pass
        time.sleep(0.05)
    return False


def client_context(ca_path, cert=None, key=None, maximum=None):
    ctx = ssl.create_default_context(cafile=ca_path)
    if cert:
        ctx.load_cert_chain(cert, key)
    if maximum:
        ctx.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        ctx.maximum_version = maximum
    return ctx


def refused_handshake(base, ctx):
    """True when no HTTP answer comes over this TLS context (the handshake or the first read fails)."""
    try:
        request(base, "GET", "/health", context=ctx, timeout=10)
        return False
    except (ssl.SSLError, ConnectionError, OSError, http.client.HTTPException):
        return True


# ---------------------------------------------------------------- the identity provider

class IdentityProvider:
    """OIDC discovery and a JWKS on loopback; the JWKS is replaced by `publish`; counts fetches."""

    def __init__(self):
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}/realms/ops"
        self.jwks = {"keys": []}
        self.jwks_fetches = 0
        idp = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                if self.path == "/realms/ops/.well-known/openid-configuration":
                    body = {"issuer": idp.issuer, "jwks_uri": idp.issuer + "/protocol/openid-connect/certs"}
                elif self.path == "/realms/ops/protocol/openid-connect/certs":
                    idp.jwks_fetches += 1
                    body = idp.jwks
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def publish(self, keys):
        self.jwks = {"keys": [k.as_dict(private=False) for k in keys]}

    def stop(self):
        self.httpd.shutdown()


def token(key, alg, claims, kid=None):
    header = {"alg": alg, "typ": "at+jwt", "kid": kid or key.kid}
    return jwt.encode(header, claims, key, algorithms=[alg])


def claims_for(idp, **extra):
    now = int(time.time())
    c = {"iss": idp.issuer, "aud": "authledger", "exp": now + 300, "nbf": now - 5, "iat": now,
         "client_id": "push-sender", "sub": "svc-push", "scope": "openid authledger:read authledger:write"}
    c.update(extra)
    return {k: v for k, v in c.items() if v is not None}


def hand_made(header, claims, signing_input_key=None):
    h = b64url(json.dumps(header).encode())
    p = b64url(json.dumps(claims).encode())
    if signing_input_key is None:
        return f"{h}.{p}."
    mac = hmac.new(signing_input_key, f"{h}.{p}".encode(), hashlib.sha256).digest()
    return f"{h}.{p}.{b64url(mac)}"


def history(base, user, context=None):
    status, _, body = request(base, "GET", f"/v1/users/{user}/history", token=READER, context=context)
    return body if status == 200 else []


# ---------------------------------------------------------------- the checks

def jwt_checks(binary, work):
    idp = IdentityProvider()
    rsa = RSAKey.generate_key(2048, parameters={"kid": "rsa-1", "use": "sig"})
    eck = ECKey.generate_key("P-256", parameters={"kid": "ec-1"})
    okp = OKPKey.generate_key("Ed25519", parameters={"kid": "ed-1"})
    idp.publish([rsa, eck, okp])
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    store = os.path.join(work, "jwt-store")
    s = Serve(binary, work, ["--store", store, "--port", str(port), "--jwt-issuer", idp.issuer, "--jwt-audience", "authledger",
                             "--auth-failure-limit", "0"],
              env={"AUTHLEDGER_TOKENS": f"ops={ADMIN}:admin,auditor={READER}:read"}, name="jwt")
    try:
        if not check(wait_healthy(base), "jwt: the server starts"):
            print(s.output())
            return None
        started = time.monotonic()
        events = []
        for key, alg, user in [(rsa, "RS256", "carol"), (eck, "ES256", "dave"), (okp, "EdDSA", "erin")]:
            status, _, body = request(base, "POST", f"/v1/users/{user}/devices", {"deviceId": "p1", "name": f"Phone {alg}"},
                                      token=token(key, alg, claims_for(idp)))
            check(status == 201, f"jwt: a valid {alg} token registers ({status} {body})")
            events += history(base, user)
        check(len(events) == 3 and all(e.get("meta", {}).get("caller") == "service:push-sender" for e in events),
              f"jwt: meta.caller service:push-sender on each event ({[e.get('meta') for e in events]})")
        check(all(e.get("meta", {}).get("actor") == "service:push-sender" for e in events), "jwt: the default actor is service:<client_id>")
        status, _, _ = request(base, "POST", "/v1/users/frank/devices", {"deviceId": "p1", "name": "Frank phone"},
                               token=token(rsa, "RS256", claims_for(idp, client_id=None, azp=None, sub="svc-batch")))
        check(status == 201 and history(base, "frank")[0]["meta"].get("caller") == "service:svc-batch",
              "jwt: without client_id and azp the caller is service:<sub>")
        status, _, _ = request(base, "POST", "/v1/users/carol/devices", {"deviceId": "x", "name": "Read only"},
                               token=token(eck, "ES256", claims_for(idp, scope="authledger:read")))
        check(status == 403, f"jwt: a token without authledger:write is 403 on a command ({status})")
        check(request(base, "GET", "/v1/users/carol/devices", token=READER)[0] == 200, "jwt: static tokens keep working")

        rsa_public_pem = rsa.as_pem(private=False)
        bad = [
            ("expired", token(eck, "ES256", claims_for(idp, exp=int(time.time()) - 3600)), "expired"),
            ("not yet valid", token(eck, "ES256", claims_for(idp, nbf=int(time.time()) + 3600)), "not valid yet"),
            ("wrong audience", token(eck, "ES256", claims_for(idp, aud="someone-else")), "wrong audience"),
            ("wrong issuer", token(eck, "ES256", claims_for(idp, iss="https://evil.example/realms/ops")), "wrong issuer"),
            ("alg none", hand_made({"alg": "none", "typ": "JWT", "kid": "rsa-1"}, claims_for(idp)), "alg 'none' is not accepted"),
            ("HS256 with the public key", hand_made({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}, claims_for(idp), rsa_public_pem),
             "alg 'HS256' is not accepted"),
            ("unknown kid", token(ECKey.generate_key("P-256", parameters={"kid": "stranger"}), "ES256", claims_for(idp)), "unknown kid 'stranger'"),
            ("garbage", "eyJhbGciOi.garbage.garbage", "malformed token"),
            ("not a token", "just-some-words", "unknown token"),
        ]
        for what, tok, reason in bad:
            status, headers, body = request(base, "POST", "/v1/users/mallory/devices", {"deviceId": "bad", "name": "Bad token"}, token=tok)
            www = headers.get("www-authenticate", "")
            check(status == 401 and 'error="invalid_token"' in www and reason in www,
                  f"jwt: {what}: 401 with '{reason}' in WWW-Authenticate (got {status}, {www!r})")
        check(history(base, "mallory") == [], "jwt: nothing appended by the refused tokens")
        check(wait_healthy(base, attempts=5), "jwt: the server is up after the bad tokens")

        # Rotation: within a minute of the fetch at start, a new kid is refused without a fetch.
        new = ECKey.generate_key("P-256", parameters={"kid": "ec-2"})
        fetches = idp.jwks_fetches
        check(fetches == 1, f"jwt: one JWKS fetch so far, the unknown kid 'stranger' included ({fetches})")
        idp.publish([new])
        status, headers, _ = request(base, "GET", "/v1/users/carol/devices", token=token(new, "ES256", claims_for(idp)))
        check(status == 401 and "unknown kid 'ec-2'" in headers.get("www-authenticate", ""),
              f"rotation: an unknown kid within a minute of the last fetch is refused ({status})")
        check(idp.jwks_fetches == fetches, "rotation: no second fetch within the minute")
        return s, idp, base, new, started, fetches, store
    except Exception:
        s.stop()
        idp.stop()
        raise


def jwt_rotation(state):
    """The rotated key of jwt_checks, once the minute since the fetch at start has passed."""
    s, idp, base, new, started, fetches, store = state
    try:
        # The other checks ran meanwhile; wait out what is left of the minute (and a margin).
        time.sleep(max(0, started + 62 - time.monotonic()))
        status, _, body = request(base, "GET", "/v1/users/carol/devices", token=token(new, "ES256", claims_for(idp)))
        check(status == 200, f"rotation: after a minute the unknown kid fetches the JWKS again and passes ({status} {body})")
        check(idp.jwks_fetches == fetches + 1, f"rotation: exactly one fetch ({idp.jwks_fetches - fetches})")
    finally:
        s.stop()
        idp.stop()
    # The CLI's history shows who appended, as the service recorded it.
    r = subprocess.run([s.binary, "history", "carol", "--store", store], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and '"caller":"service:push-sender"' in r.stdout, f"history (CLI) shows meta.caller ({r.stdout[:300]!r})")


def tls_checks(binary, work):
    ca = make_ca("AuthLedger test server CA")
    ca_path = write_pem(os.path.join(work, "server-ca.pem"), cert=ca[1])
    key, cert = issue(ca, "localhost", server_sans(), server=True)
    cert_path = write_pem(os.path.join(work, "server.pem"), cert=cert)
    key_path = write_pem(os.path.join(work, "server.key"), key=key)
    port = free_port()
    s = Serve(binary, work, ["--store", os.path.join(work, "tls-store"), "--port", str(port), "--tls-cert", cert_path, "--tls-key", key_path],
              env={"AUTHLEDGER_TOKENS": f"ops={ADMIN}:admin,auditor={READER}:read"}, name="tls")
    base = f"https://127.0.0.1:{port}"
    try:
        ctx = client_context(ca_path)
        if not check(wait_healthy(base, ctx), "tls: HTTPS answers with the test CA"):
            print(s.output())
            return
        status, _, _ = request(base, "POST", "/v1/users/dave/devices", {"deviceId": "d1", "name": "Dave phone"}, token=ADMIN, context=ctx)
        check(status == 201, f"tls: a command over HTTPS ({status})")
        try:
            plain = request(f"http://127.0.0.1:{port}", "GET", "/health", timeout=10)[0]
        except (OSError, http.client.HTTPException):
            plain = None
        check(plain is None, f"tls: plain HTTP gets no HTTP answer ({plain})")
        check(refused_handshake(base, client_context(ca_path, maximum=ssl.TLSVersion.TLSv1_1)), "tls: TLS 1.1 is refused")
        other = make_ca("somebody else")
        check(refused_handshake(base, client_context(write_pem(os.path.join(work, "other-ca.pem"), cert=other[1]))),
              "tls: a client trusting another CA fails to verify the server")
        with socket.create_connection(("127.0.0.1", port)) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                check(tls.version() in ("TLSv1.2", "TLSv1.3"), f"tls: negotiated {tls.version()}")
    finally:
        s.stop()


def mtls_and_reload_checks(binary, work):
    server_ca = make_ca("server CA")
    server_ca_b = make_ca("server CA, next year")
    client_ca = make_ca("client CA")
    stranger_ca = make_ca("another client CA")
    ca_path = write_pem(os.path.join(work, "m-server-ca.pem"), cert=server_ca[1])
    ca_b_path = write_pem(os.path.join(work, "m-server-ca-b.pem"), cert=server_ca_b[1])
    client_ca_path = write_pem(os.path.join(work, "client-ca.pem"), cert=client_ca[1])
    key, cert = issue(server_ca, "localhost", server_sans(), server=True)
    cert_path = write_pem(os.path.join(work, "m-server.pem"), cert=cert)
    key_path = write_pem(os.path.join(work, "m-server.key"), key=key)
    mailer = issue(client_ca, "mailer", [x509.UniformResourceIdentifier("spiffe://example.org/mailer"), x509.DNSName("mailer.internal")], server=False)
    mailer_paths = (write_pem(os.path.join(work, "mailer.pem"), cert=mailer[1]), write_pem(os.path.join(work, "mailer.key"), key=mailer[0]))
    batch = issue(client_ca, "batch", [x509.DNSName("batch.internal")], server=False)
    batch_paths = (write_pem(os.path.join(work, "batch.pem"), cert=batch[1]), write_pem(os.path.join(work, "batch.key"), key=batch[0]))
    forged = issue(stranger_ca, "mailer", [x509.UniformResourceIdentifier("spiffe://example.org/mailer")], server=False)
    forged_paths = (write_pem(os.path.join(work, "forged.pem"), cert=forged[1]), write_pem(os.path.join(work, "forged.key"), key=forged[0]))
    tokens_path = os.path.join(work, "tokens")
    with open(tokens_path, "w") as f:
        f.write(f"# services\nops={ADMIN}:admin\nauditor={READER}:read\ncert=spiffe://example.org/mailer:read+write\ncert=batch.internal:read\n")
    port = free_port()
    config_path = os.path.join(work, "serve.yaml")
    with open(config_path, "w") as f:
        f.write(f"# authledger serve\nstore: {os.path.join(work, 'mtls-store')}\nport: 1\ntokens: {tokens_path}\n"
                f"tls-cert: {cert_path}\ntls-key: {key_path}\ntls-client-ca: {client_ca_path}\nlog-level: info\n")
    # The file names every option but the port, which the flag overrides.
    s = Serve(binary, work, ["--config", config_path, "--port", str(port)], name="mtls")
    base = f"https://127.0.0.1:{port}"
    try:
        mailer_ctx = client_context(ca_path, *mailer_paths)
        if not check(wait_healthy(base, mailer_ctx), "mtls: serve --config with a flag override answers over mTLS"):
            print(s.output())
            return
        status, _, body = request(base, "POST", "/v1/users/erin/devices", {"deviceId": "e1", "name": "Erin phone"}, context=mailer_ctx)
        check(status == 201, f"mtls: the client certificate's identity has write ({status} {body})")
        status, _, _ = request(base, "POST", "/v1/users/erin/devices", {"deviceId": "e2", "name": "Erin tablet"},
                               context=client_context(ca_path, *batch_paths))
        check(status == 403, f"mtls: a DNS-name identity with read only is 403 on a command ({status})")
        status, _, body = request(base, "GET", "/v1/users/erin/history", context=client_context(ca_path, *batch_paths))
        events = body if status == 200 else []
        check(len(events) == 1 and events[0]["meta"].get("caller") == "cert:spiffe://example.org/mailer"
              and events[0]["meta"].get("actor") == "service:spiffe://example.org/mailer",
              f"mtls: meta.caller cert:<SAN URI> ({events})")
        status, _, _ = request(base, "GET", "/v1/users/erin/devices", token=READER, context=mailer_ctx)
        check(status == 200, "mtls: a bearer token beside the certificate")
        check(refused_handshake(base, client_context(ca_path)), "mtls: a client without a certificate is refused")
        check(refused_handshake(base, client_context(ca_path, *forged_paths)), "mtls: a client certificate from another CA is refused")
        check(s.proc.poll() is None, "mtls: the server is up after the refused clients")

        # SIGHUP: a connection opened before keeps working; new connections get the new certificate and tokens.
        kept = http.client.HTTPSConnection("127.0.0.1", port, context=mailer_ctx, timeout=30)
        check(request(kept, "GET", "/v1/users/erin/devices")[0] == 200, "reload: the kept connection before")
        new_key, new_cert = issue(server_ca_b, "localhost", server_sans(), server=True)
        write_pem(cert_path, cert=new_cert)
        write_pem(key_path, key=new_key)
        with open(tokens_path, "a") as f:
            f.write("late=late-joiner-secret:read\n")
        mark = len(s.output())
        s.proc.send_signal(signal.SIGHUP)
        check(s.wait_for("tokens reloaded", after=mark), "reload: SIGHUP reloads the tokens")
        check(s.wait_for("TLS certificate reloaded", after=mark), "reload: SIGHUP reloads the certificate")
        check(request(kept, "GET", "/v1/users/erin/devices")[0] == 200, "reload: the connection opened before SIGHUP still works")
        kept.close()
        ctx_b = client_context(ca_b_path, *mailer_paths)
        check(request(base, "GET", "/v1/users/erin/devices", context=ctx_b)[0] == 200, "reload: a new connection gets the new certificate")
        check(refused_handshake(base, client_context(ca_path, *mailer_paths)), "reload: the old certificate is no longer served")
        check(request(base, "GET", "/v1/users/erin/devices", token="late-joiner-secret", context=ctx_b)[0] == 200,
              "reload: a token added to the file works after SIGHUP")

        # A broken reload keeps what is in force and says why.
        with open(cert_path, "w") as f:
            f.write("not a certificate\n")
        with open(tokens_path, "a") as f:
            f.write("broken entry without scopes\n")
        mark = len(s.output())
        s.proc.send_signal(signal.SIGHUP)
        check(s.wait_for("reload failed", after=mark), "reload: a broken reload is logged")
        out = s.output()[mark:]
        check("--tls-cert" in out and "tokens" in out, f"reload: the log says what failed ({out.strip()[-300:]!r})")
        check(request(base, "GET", "/v1/users/erin/devices", token="late-joiner-secret", context=ctx_b)[0] == 200,
              "reload: after a failed reload the certificate and tokens in force still serve")
        check(s.proc.poll() is None, "reload: the server is up")
    finally:
        s.stop()


def config_checks(binary, work):
    cases = [
        ("unknown.yaml", "port: 8080\ncolour: blue\n", "colour"),
        ("badport.yaml", "port: eighty\n", "port"),
        ("badjson.json", '{"port": 8080, "rate-limit": "fast"}', "rate-limit"),
        ("nested.yaml", "tls:\n  cert: x\n", "tls"),
    ]
    for name, text, key in cases:
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write(text)
        r = subprocess.run([binary, "serve", "--config", path, "--store", os.path.join(work, "cfg-store")], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ, AUTHLEDGER_TOKENS=f"{ADMIN}:admin"))
        check(r.returncode == 2 and key in r.stderr, f"config: {name} is a usage error naming {key!r} (exit {r.returncode}: {r.stderr.strip()})")
    # JSON works as well as YAML.
    port = free_port()
    path = os.path.join(work, "serve.json")
    with open(path, "w") as f:
        json.dump({"store": os.path.join(work, "json-store"), "port": port, "max-concurrent-verifies": 3}, f)
    s = Serve(binary, work, ["--config", path], env={"AUTHLEDGER_TOKENS": f"{ADMIN}:admin"}, name="json-config")
    try:
        check(wait_healthy(f"http://127.0.0.1:{port}"), "config: a JSON config file sets the port")
    finally:
        s.stop()


def main():
    # joserfc warns that RFC 9864 prefers "Ed25519" to "EdDSA"; the service accepts EdDSA, as issuers still send it.
    warnings.filterwarnings("ignore", message="EdDSA is deprecated")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=".build/debug/authledger")
    binary = os.path.abspath(ap.parse_args().bin)
    work = tempfile.mkdtemp(prefix="authledger-identity-")
    try:
        state = jwt_checks(binary, work)
        tls_checks(binary, work)
        mtls_and_reload_checks(binary, work)
        config_checks(binary, work)
        if state:
            jwt_rotation(state)
    finally:
        if failures:
            print(f"(logs kept in {work})")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"identity-interop: {check.passed} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
