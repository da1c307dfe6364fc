#!/usr/bin/env python3
"""Watches of projections through a third-party Server-Sent Events client.

Starts `authledger serve` on a fresh store and follows watches with httpx-sse (PyPI), the
way a service in another language would: a snapshot, then changes; a reconnection with
Last-Event-ID that repeats no snapshot and sends only what changed; the same across a
SIGKILL and restart of the server; several keys on one connection (/v1/watch); a challenge
waited for with ?wait=; and the 400s for bad input. Exits non-zero on the first failure.
"""

import argparse
import json
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time

import httpx
from httpx_sse import connect_sse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_support import ServeProcess, free_port  # noqa: E402

ADMIN = "admin-" + secrets.token_hex(16)
READER = "reader-" + secrets.token_hex(16)


class Server(ServeProcess):
    def __init__(self, binary, store, port):
        super().__init__(binary, ["--store", store, "--port", str(port), "--log-level", "warning"], store + "-serve.log",
                         env={"AUTHLEDGER_TOKENS": f"{ADMIN}:admin,{READER}:read"})
        self.store, self.port = store, port
        self.base = f"http://127.0.0.1:{port}"
        self.http = httpx.Client(base_url=self.base, timeout=70)

    def start(self):
        super().start()
        self.wait_healthy(self.base)

    def call(self, method, path, body=None, token=ADMIN, headers=None):
        h = {"Authorization": "Bearer " + token, **(headers or {})}
        r = self.http.request(method, path, json=body, headers=h)
        return r.status_code, (r.json() if r.text.strip() else None)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def take(server, path, count, last_id=None, until=None):
    """The first `count` watch events of `path` (progress events left out), read with
    httpx-sse; `last_id` is sent as Last-Event-ID. `until` runs once the stream is open."""
    headers = {"Authorization": "Bearer " + READER}
    if last_id is not None:
        headers["Last-Event-ID"] = str(last_id)
    out = []
    with httpx.Client(base_url=server.base, timeout=httpx.Timeout(30, read=30)) as c:
        with connect_sse(c, "GET", path, headers=headers) as source:
            check(source.response.status_code == 200, f"{path}: {source.response.status_code}")
            if until:
                threading.Timer(0.3, until).start()
            for sse in source.iter_sse():
                # progress notes, and the stream's opening (`retry:` alone, no data)
                if sse.event == "progress" or not sse.data:
                    continue
                out.append({"event": sse.event, "id": int(sse.id), "data": sse.json()})
                if len(out) == count:
                    break
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=".build/debug/authledger")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="authledger-watch-interop-")
    server = Server(os.path.abspath(args.bin), os.path.join(work, "store"), free_port())
    try:
        server.start()
        check(server.call("POST", "/v1/users/alice/devices", {"deviceId": "phone", "name": "Alice Phone", "kind": "mobile"})[0] == 201, "register")
        # A snapshot: exactly the plain GET's answer, id its position
        [snap] = take(server, "/v1/users/alice/devices?watch=true", 1)
        plain = server.call("GET", "/v1/users/alice/devices", token=READER)[1]
        same = lambda a, b: {**a, "asOf": None} == {**b, "asOf": None}  # evaluated a few ms apart
        check(snap["event"] == "snapshot" and snap["id"] == 1 and same(snap["data"], plain), f"snapshot: {snap} / {plain}")
        print("ok: snapshot at position %d is the plain answer" % snap["id"])
        # A change while connected
        add = lambda: server.call("POST", "/v1/users/alice/devices", {"deviceId": "laptop", "name": "Alice Laptop", "kind": "desktop", "via": "admin"})
        snap2, changed = take(server, "/v1/users/alice/devices?watch=true", 2, until=add)
        check(snap2["event"] == "snapshot" and changed["event"] == "changed" and changed["id"] == 2, f"change: {changed}")
        check([d["deviceId"] for d in changed["data"]["devices"]] == ["phone", "laptop"], "two devices")
        print("ok: the change arrived as `changed` at position %d" % changed["id"])
        other = lambda: server.call("POST", "/v1/users/bob/devices", {"deviceId": "phone", "name": "Bob Phone", "kind": "mobile"})
        status, _ = server.call("GET", "/v1/users/alice/devices?watch=true", token=READER, headers={"Last-Event-ID": "99"})
        check(status == 400, "Last-Event-ID beyond the head: %d" % status)
        # Resumed from before the change: the current answer as a change, no snapshot
        [again] = take(server, "/v1/users/alice/devices?watch=true", 1, last_id=1)
        check(again["event"] == "changed" and same(again["data"], changed["data"]), f"resume: {again}")
        print("ok: Last-Event-ID 1 resumes with the change, no snapshot")
        # SIGKILL and restart: the watcher resumes from its last id on the new process
        other()
        server.kill()
        server.start()
        check(server.call("POST", "/v1/users/alice/verification-requests", {"deviceId": "tablet", "name": "Alice Tablet"})[0] == 201, "request")
        [after] = take(server, "/v1/users/alice/devices?watch=true", 1, last_id=changed["id"])
        check(after["event"] == "changed" and after["id"] == 4, f"after restart: {after}")
        check([d["deviceId"] for d in after["data"]["devices"]] == ["phone", "laptop", "tablet"], f"after restart: {after}")
        print("ok: after kill -9 and restart, Last-Event-ID %d resumes with only the new change (position %d)" % (changed["id"], after["id"]))
        # Several keys on one connection, resumed together
        events = take(server, "/v1/watch?devices=alice,bob&cooling=alice", 3)
        check([e["event"] for e in events] == ["snapshot"] * 3, f"multi: {events}")
        got = [(e["data"]["projection"], e["data"]["user"]) for e in events]
        check(got == [("devices", "alice"), ("devices", "bob"), ("cooling", "alice")], f"keys: {got}")
        resumed = take(server, "/v1/watch?devices=alice,bob&cooling=alice", 2, last_id=2)
        check(sorted((e["event"], e["data"]["projection"], e["data"]["user"]) for e in resumed)
              == [("changed", "devices", "alice"), ("changed", "devices", "bob")], f"multi resume: {resumed}")
        print("ok: /v1/watch: one snapshot per key, then a resume from 2 sends the two devices answers changed since (not the cooling)")
        # The requester's wait
        st, c = server.call("POST", "/v1/users/bob/challenges", {"requestingDeviceId": "tablet"})
        check(st == 201, "challenge")
        cid = c["challengeId"]
        threading.Timer(0.3, lambda: server.call("POST", f"/v1/users/bob/challenges/{cid}/deny", {"deviceId": "phone"})).start()
        t = time.monotonic()
        st, view = server.call("GET", f"/v1/users/bob/challenges/{cid}?wait=30&view=requester", token=READER)
        check(st == 200 and view == {"challengeId": cid, "status": "not_approved"}, f"wait: {view}")
        print("ok: ?wait=30 answered not_approved %.2f s after the request (the denial came at 0.3 s)" % (time.monotonic() - t))
        for path, field in [("/v1/watch?devcies=alice", "devcies"), ("/v1/watch?challenge=bob", "challenge"),
                            (f"/v1/users/bob/challenges/{cid}?wait=61", "wait"), ("/v1/users/bob/devices?watch=true&at=1", "at")]:
            st, body = server.call("GET", path, token=READER)
            check(st == 400 and body.get("field") == field, f"{path}: {st} {body}")
        print("ok: bad input is 400 naming the parameter")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print("watch-interop: FAILED: %s" % e, file=sys.stderr)
        sys.exit(1)
