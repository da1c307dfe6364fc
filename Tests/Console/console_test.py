#!/usr/bin/env python3
"""The auditor console in a real browser (Playwright for Python driving Debian's chromium)
against a real `authledger serve --dev` over the recorded scenarios, plus a user with
30,000 events and an erased user.

Usage: console_test.py --bin PATH/authledger --out DIR
Checks (each an assertion): the CSP header, sign-in by the dev link and by the Token field,
the token never in a URL, the user view against the API's answers, the As of slider
against ?at=, Compare's Changes, Verify on a good event and on a proof, checkpoint or
event changed in transit (Not verified), Continuity, live events and Pause, deep links,
an erased user, evidence checked by tools/verify-proof.py, no request to another origin.
Prints the measured figures (asset size, first render, slider move, Verify) and saves
screenshots of the main views (1280 px and a phone width) into --out.
"""
import argparse, base64, json, os, re, subprocess, sys, tempfile, time, urllib.request
from playwright.sync_api import sync_playwright, expect

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_support import (ROOT, Server, api_rows, device_rows, doc_shot, log, open_user,  # noqa: E402
                             row_status, shot, verify_row, wait_loaded)

BIG = 30_000
figures = {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="console-test-")
    server = Server(a.bin, work)
    try:
        run(server, a.out)
    finally:
        server.stop()
    log("figures: " + json.dumps(figures))
    log("ok: the console test passed")


def run(s, out):
    base = s.base
    # The data: an erased user (alice), and a user with 30,000 events.
    s.call("DELETE", "/v1/users/alice")
    events = [{"type": "device.registered", "user": "big", "at": "2026-04-01T00:00:00Z",
               "data": {"deviceId": "phone", "name": "Big's Phone", "kind": "mobile", "binding": "permanent", "via": "initial"}}]
    events += [{"type": "device.accessed", "user": "big", "at": "2026-04-01T%02d:%02d:%02dZ" % (k // 3600 + 1, k // 60 % 60, k % 60),
                "data": {"deviceId": "phone"}} for k in range(1, BIG)]
    for k in range(0, len(events), 2000):
        s.call("POST", "/v1/events", events[k:k + 2000])
    # 60 users of one prefix (the Users pages), and one whose key is markup
    s.call("POST", "/v1/events", [{"type": "device.registered", "user": u, "at": "2026-04-02T00:00:00Z",
                                   "data": {"deviceId": "phone", "name": "A Phone", "kind": "mobile", "binding": "permanent", "via": "initial"}}
                                  for u in ["page-user-%02d" % k for k in range(60)] + ["<i>markup</i>"]])
    vkey = s.call("GET", "/checkpoint/vkey", raw=True, token=s.auditor)[0]
    assert re.fullmatch(r"console-test\.example/log\+[0-9a-f]{8}\+[A-Za-z0-9+/=]+\n", vkey), vkey
    log("ok: GET /checkpoint/vkey answers the verifier key")

    with sync_playwright() as p:
        # console.test is the loopback too, but under a name that is not a secure context
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--host-resolver-rules=MAP console.test 127.0.0.1"])
        ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        page = ctx.new_page()
        foreign, errors, assets = [], [], set()
        page.on("request", lambda r: None if r.url.startswith(base + "/") or r.url.startswith("blob:" + base) else foreign.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

        page.on("request", lambda r: assets.add(r.url.split("#")[0]) if "/console" in r.url else None)

        # The page and its headers
        resp = page.goto(base + "/console")
        csp = resp.headers.get("content-security-policy", "")
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp, csp
        shot(page, out, "signin-1280")
        log("ok: /console carries Content-Security-Policy: " + csp)

        # Sign in by the dev link: the token leaves the address bar for sessionStorage
        page.goto(s.link)
        expect(page.get_by_label("Verifier key")).to_have_value(vkey.strip(), timeout=20_000)
        assert "token" not in page.url, page.url
        assert page.evaluate("() => sessionStorage.getItem('authledger.token')") == s.admin
        log("ok: the dev link signs in; the token is in sessionStorage, not in the URL")
        # Sign out; sign in as the auditor by typing the token into Token
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_label("Token")).to_be_visible()
        page.get_by_label("Token").fill("wrong-token")
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#signin-status")).to_have_text("Unknown token.")
        page.get_by_label("Token").fill(s.auditor)
        page.get_by_label("Token").press("Enter")
        expect(page.get_by_label("Verifier key")).to_have_value(vkey.strip(), timeout=20_000)
        # Pin the key: continuity starts from this checkpoint
        page.get_by_role("button", name="Pin").click()
        expect(page.get_by_role("status", name="Continuity")).to_contain_text("kept this one", timeout=20_000)
        log("ok: sign-in with the Token field, the verifier key pinned")
        front_page(s, page, out)

        # A user: the devices, cooling, pending and history as the API answers them
        open_user(page, "bob")
        api = s.call("GET", "/v1/users/bob/devices?includeRevoked=true", token=s.auditor)
        assert device_rows(page) == api_rows(api), (device_rows(page), api_rows(api))
        hist = s.call("GET", "/v1/users/bob/history", token=s.auditor)
        seqs = page.locator("#history tbody tr").evaluate_all("rows => rows.map(r => Number(r.dataset.seq))")
        assert seqs == [e["seq"] for e in hist], (seqs, [e["seq"] for e in hist])
        types = page.locator("#history tbody tr td:nth-child(3)").all_text_contents()
        assert types == [e["type"] for e in hist]
        expect(page.get_by_role("region", name="Cooling")).to_be_visible()
        expect(page.get_by_role("region", name="Pending challenges")).to_be_visible()
        expect(page.get_by_role("table", name="Devices")).to_be_visible()
        expect(page.get_by_role("table", name="History")).to_be_visible()
        shot(page, out, "user-1280")
        doc_shot(page, out, "user", "#user-view")
        log("ok: bob's devices and history match the API (%d events)" % len(hist))

        # History complete: bob's user proof checked in the page over the history it loaded
        complete = page.get_by_role("status", name="Completeness")
        expect(complete).to_have_attribute("data-ok", "true", timeout=30_000)
        text = complete.text_content()
        proof = s.call("GET", "/v1/users/bob/proof", token=s.auditor)
        assert proof["count"] == len(hist), (proof["count"], len(hist))
        assert text.startswith("History complete:") and ("the %d events shown" % len(hist)) in text, text
        log("ok: " + text)

        # …and when the server hides one of bob's events: Not complete, and why
        hidden = hist[len(hist) // 2]["seq"]

        def hide_one(route):
            r = route.fetch()
            route.fulfill(response=r, body=json.dumps([e for e in r.json() if e["seq"] != hidden]))
        page.route("**/v1/users/bob/history*", hide_one)
        open_user(page, "bob")
        expect(complete).to_have_attribute("data-ok", "false", timeout=30_000)
        text = complete.text_content()
        assert text.startswith("Not complete:") and ("holds %d" % (len(hist) - 1)) in text, text
        shot(page, out, "not-complete-1280")
        page.unroute("**/v1/users/bob/history*")
        open_user(page, "bob")
        expect(complete).to_have_attribute("data-ok", "true", timeout=30_000)
        # …and a proof changed in transit (its stream hash): Not complete
        def tamper_user_proof(route):
            r = route.fetch()
            body = r.json()
            h = bytearray(base64.b64decode(body["streamHash"]))
            h[0] ^= 1
            body["streamHash"] = base64.b64encode(bytes(h)).decode()
            route.fulfill(response=r, body=json.dumps(body))
        page.route("**/v1/users/bob/proof", tamper_user_proof)
        page.get_by_role("button", name="Check completeness").click()
        expect(complete).to_have_attribute("data-ok", "false", timeout=30_000)
        assert "Not complete: the prefix proof's value is not the user's" in complete.text_content(), complete.text_content()
        page.unroute("**/v1/users/bob/proof")
        page.get_by_role("button", name="Check completeness").click()
        expect(complete).to_have_attribute("data-ok", "true", timeout=30_000)
        doc_shot(page, out, "complete", "#user-view", height=200)
        log("ok: a hidden event is Not complete (%s); so is a proof changed in transit" % text)

        # Filters: Type, then From time / To time
        page.get_by_label("Type").select_option("device.registered")
        page.get_by_role("button", name="Filter").click()
        types = page.locator("#history tbody tr td:nth-child(3)").all_text_contents()
        assert types and set(types) == {"device.registered"}, types
        mid = hist[len(hist) // 2]["at"]
        page.get_by_label("Type").select_option("")
        page.get_by_label("From time").fill(mid)
        page.get_by_role("button", name="Filter").click()
        seqs = page.locator("#history tbody tr").evaluate_all("rows => rows.map(r => Number(r.dataset.seq))")
        assert seqs == [e["seq"] for e in hist if e["at"] >= mid], seqs
        page.get_by_label("From time").fill("")
        page.get_by_label("To time").fill(hist[0]["at"])
        page.get_by_role("button", name="Filter").click()
        seqs = page.locator("#history tbody tr").evaluate_all("rows => rows.map(r => Number(r.dataset.seq))")
        assert seqs == [e["seq"] for e in hist if e["at"] <= hist[0]["at"]], seqs
        page.get_by_label("To time").fill("not a time")
        page.get_by_role("button", name="Filter").click()
        expect(page.locator("#history-status")).to_contain_text("To time is not a time")
        page.get_by_label("To time").fill("")
        page.get_by_role("button", name="Filter").click()
        log("ok: the Type, From time and To time filters")

        # Time travel: the As of slider by keyboard, against ?at=
        slider = page.get_by_label("As of", exact=True)
        slider.focus()
        slider.press("Home")
        for k in range(len(hist)):
            e = hist[k]
            page.wait_for_function("s => document.body.dataset.shownAt === s", arg=str(e["seq"]))
            assert ("seq %d" % e["seq"]) in slider.get_attribute("aria-valuetext")
            at = s.call("GET", "/v1/users/bob/devices?includeRevoked=true&at=%d&asOf=%s" % (e["seq"], e["at"]), token=s.auditor)
            assert device_rows(page) == api_rows(at), (e["seq"], device_rows(page), api_rows(at))
            slider.press("ArrowRight")
        page.wait_for_function("() => document.body.dataset.shownAt === 'now'")
        assert "now" in slider.get_attribute("aria-valuetext")
        log("ok: the As of slider shows the devices of ?at= at each of bob's %d events" % len(hist))

        # Compare: From at the first event, As of now: bob's devices were added
        page.get_by_role("button", name="Compare").click()
        frm = page.get_by_label("From", exact=True)
        frm.focus()
        frm.press("Home")
        page.wait_for_function("() => document.body.dataset.changes !== undefined")
        first = s.call("GET", "/v1/users/bob/devices?includeRevoked=true&at=%d&asOf=%s" % (hist[0]["seq"], hist[0]["at"]), token=s.auditor)
        before = {d["deviceId"] for d in first["devices"]}
        changes = page.get_by_role("list", name="Changes").locator("li").all_text_contents()
        expected_added = [d["deviceId"] for d in api["devices"] if d["deviceId"] not in before]
        for d in expected_added:
            assert any(c.startswith("added: " + d) for c in changes), (changes, d)
        assert "from=" in page.url and "token" not in page.url
        shot(page, out, "compare-1280")
        doc_shot(page, out, "compare", "#user-view", height=420)
        log("ok: Compare lists %s" % changes)

        # Verify a good event (keyboard: focus the button, Enter)
        seq = hist[0]["seq"]
        page.get_by_role("button", name=f"Verify seq {seq}", exact=True).focus()
        page.keyboard.press("Enter")
        expect(row_status(page, seq)).to_have_attribute("data-ok", "true", timeout=20_000)
        text = row_status(page, seq).text_content()
        m = re.search(r"of (\d+) events", text)
        assert text.startswith("Verified:") and m and int(m.group(1)) >= seq, text
        shot(page, out, "verified-1280")
        doc_shot(page, out, "verified", "#history-box", height=360)
        log("ok: Verify (keyboard) says: " + text)

        # …and on a proof, a checkpoint, an event changed in transit: Not verified
        def tamper_proof(route):
            r = route.fetch()
            body = r.json()
            h = bytearray(base64.b64decode(body["proof"][0]))
            h[0] ^= 1
            body["proof"][0] = base64.b64encode(bytes(h)).decode()
            route.fulfill(response=r, body=json.dumps(body))

        def tamper_checkpoint(route):
            r = route.fetch()
            lines = r.text().split("\n")
            root = bytearray(base64.b64decode(lines[2]))
            root[5] ^= 1
            lines[2] = base64.b64encode(bytes(root)).decode()
            route.fulfill(response=r, body="\n".join(lines))

        for pattern, handler, why in [("**/v1/proofs/inclusion*", tamper_proof, "root other than the checkpoint"),
                                      (re.compile(r".*/checkpoint$"), tamper_checkpoint, "signature does not check")]:
            page.route(pattern, handler)
            text, _ = verify_row(page, seq)
            assert text.startswith("Not verified:") and why in text, text
            page.unroute(pattern)
            log("ok: tampered in transit (%s): %s" % (why, text))

        # Witnessed checkpoints: while /checkpoint answers 404 (no quorum yet) the page uses
        # /checkpoint/latest and says it is not witnessed; cosignature lines are listed, unchecked
        real_note = s.call("GET", "/checkpoint", raw=True, token=s.auditor)[0]
        cosigned = real_note + "\u2014 witness.example/w1 " + base64.b64encode(b"\x01" * 76).decode() + "\n"
        page.route(re.compile(r".*/checkpoint$"), lambda route: route.fulfill(
            status=404, content_type="application/json", body='{"error":"not_found","message":"no witnessed checkpoint yet"}'))
        page.route(re.compile(r".*/checkpoint/latest$"), lambda route: route.fulfill(status=200, content_type="text/plain", body=cosigned))
        text, _ = verify_row(page, seq)
        assert text.startswith("Verified:") and "Not witnessed yet" in text and "witness.example/w1" in text and "not checked" in text, text
        page.unroute(re.compile(r".*/checkpoint$"))
        page.unroute(re.compile(r".*/checkpoint/latest$"))
        log("ok: /checkpoint 404, /checkpoint/latest used: " + text)

        def tamper_history(route):
            r = route.fetch()
            body = r.json()
            for e in body:
                if e["seq"] == seq:
                    e["at"] = "2026-01-01T00:00:00.000Z"
            route.fulfill(response=r, body=json.dumps(body))
        page.route("**/v1/users/bob/history*", tamper_history)
        open_user(page, "bob")
        text, _ = verify_row(page, seq)
        assert text.startswith("Not verified:"), text
        page.unroute("**/v1/users/bob/history*")
        shot(page, out, "not-verified-1280")
        log("ok: an event changed in transit: " + text)

        # Continuity: a later visit checks a consistency proof from the kept checkpoint
        kept = page.evaluate("() => localStorage.getItem('authledger.lastCheckpoint')")
        s.call("POST", "/v1/users/frank/devices", {"deviceId": "iphone", "name": "Frank iPhone", "kind": "mobile"})
        page.reload()
        expect(page.get_by_role("status", name="Continuity")).to_contain_text("Consistent:", timeout=20_000)
        ctext = page.get_by_role("status", name="Continuity").text_content()
        assert "extends the one of %s" % kept.split("\n")[1] in ctext, ctext
        # A kept checkpoint, signed by the same key, of a log the current one does not
        # extend (a fork: other events): Not consistent
        page.evaluate("t => localStorage.setItem('authledger.lastCheckpoint', t)", s.fork_checkpoint())
        page.reload()
        expect(page.get_by_role("status", name="Continuity")).to_contain_text("Not consistent:", timeout=20_000)
        log("ok: Continuity: %s / a forged kept checkpoint: %s" % (ctext, page.get_by_role("status", name="Continuity").text_content()))
        page.evaluate("t => localStorage.setItem('authledger.lastCheckpoint', t)", kept)

        # Live: an append arrives in the Live log; Pause holds lines until Resume
        wait_loaded(page, "bob")
        live = page.get_by_role("log", name="Live")
        expect(page.locator("#live-state")).to_contain_text("Connected", timeout=20_000)
        r = s.call("PATCH", "/v1/users/frank/devices/iphone", {"name": "Work iPhone"})
        live_seq = r["events"][0]["seq"]
        expect(live).to_contain_text("seq %d" % live_seq, timeout=20_000)
        page.get_by_role("button", name="Pause").click()
        r = s.call("POST", "/v1/users/frank/devices/iphone/access", {})
        held = r["events"][0]["seq"]
        expect(page.get_by_role("button", name=re.compile("Resume"))).to_have_text(re.compile(r"Resume \(1 held\)"), timeout=20_000)
        assert ("seq %d" % held) not in live.text_content()
        page.get_by_role("button", name=re.compile("Resume")).click()
        expect(live).to_contain_text("seq %d" % held)
        log("ok: live events seq %d and, after Resume, seq %d" % (live_seq, held))

        # Compare on frank: renamed between his first event and now
        open_user(page, "frank")
        page.get_by_role("button", name="Compare").click()
        frm = page.get_by_label("From", exact=True)
        frm.focus()
        frm.press("End")
        frm.press("Home")
        expect(page.get_by_role("list", name="Changes")).to_contain_text("renamed: iphone from Frank iPhone to Work iPhone", timeout=20_000)
        page.get_by_role("button", name="Compare").click()
        log("ok: Compare lists frank's rename")

        # Deep links: a view's URL reopens it (the token is not in it)
        target = hist[1]
        page.goto(base + "/console#user=bob&at=%d" % target["seq"])
        page.reload()
        wait_loaded(page, "bob")
        page.wait_for_function("s => document.body.dataset.shownAt === s", arg=str(target["seq"]))
        at = s.call("GET", "/v1/users/bob/devices?includeRevoked=true&at=%d&asOf=%s" % (target["seq"], target["at"]), token=s.auditor)
        assert device_rows(page) == api_rows(at)
        assert ("seq %d" % target["seq"]) in page.get_by_label("As of", exact=True).get_attribute("aria-valuetext")
        page.goto(base + "/console#user=bob&type=device.registered")
        page.reload()
        wait_loaded(page, "bob")
        assert set(page.locator("#history tbody tr td:nth-child(3)").all_text_contents()) == {"device.registered"}
        log("ok: deep links reopen the slider position and the filter")

        # Names are text: markup in a device's name is shown, never parsed
        markup = "<b>x</b><img src=/x>"
        s.call("POST", "/v1/users/mallet/devices", {"deviceId": "pc", "name": markup, "kind": "desktop"})
        open_user(page, "mallet")
        assert device_rows(page) == [["pc", markup, "active"]], device_rows(page)
        assert page.locator("#devices img, #devices b, #history img, #history b").count() == 0
        assert markup in page.locator("#history tbody").text_content()
        log("ok: a name with markup is shown as text")

        # At now, the user view follows a watch: devices, cooling and pending update live
        s.call("POST", "/v1/users/wendy/devices", {"deviceId": "phone", "name": "Wendy Phone", "kind": "mobile"})
        open_user(page, "wendy")
        page.wait_for_function("() => document.body.dataset.shownAt === 'now'")
        page.wait_for_function("() => document.body.dataset.watched !== undefined", timeout=20_000)
        expect(page.locator("#cooling-text")).to_have_text("Not active.")
        s.call("POST", "/v1/users/wendy/devices", {"deviceId": "tablet", "name": "Wendy Tablet", "kind": "tablet", "via": "admin"})
        expect(page.get_by_role("table", name="Devices")).to_contain_text("Wendy Tablet", timeout=20_000)
        expect(page.locator("#cooling-text")).to_contain_text("Active until", timeout=20_000)
        c = s.call("POST", "/v1/users/wendy/challenges", {"requestingDeviceId": "watch"})
        expect(page.locator("#pending-list")).to_contain_text(c["challengeId"], timeout=20_000)
        api = s.call("GET", "/v1/users/wendy/devices?includeRevoked=true", token=s.auditor)
        assert device_rows(page) == api_rows(api), (device_rows(page), api_rows(api))
        log("ok: at now the user view follows a watch: a new device, its cooling window and a challenge appear without a reload")

        # An erased user: erased values shown as erased, with their commitments; Verify still checks
        open_user(page, "alice")
        names = page.locator("#devices tbody tr td:nth-child(2)").all_text_contents()
        assert names and all(n.startswith("erased _sd:") for n in names), names
        assert page.locator("#history em.erased").count() > 0
        aseq = int(page.locator("#history tbody tr").first.get_attribute("data-seq"))
        text, _ = verify_row(page, aseq)
        assert text.startswith("Verified:"), text
        shot(page, out, "erased-1280")
        log("ok: alice erased: %s; Verify: %s" % (names, text))

        # Evidence: the page's bundle checks offline; the same bundle changed does not
        with page.expect_download() as dl:
            page.get_by_role("button", name="Download evidence for this page").click()
        path = os.path.join(out, "evidence-alice.json")
        dl.value.save_as(path)
        with page.expect_download() as dl:
            page.get_by_role("button", name="Download evidence for seq %d" % aseq, exact=True).click()
        one = os.path.join(out, "evidence-alice-one.json")
        dl.value.save_as(one)
        checker = [sys.executable, os.path.join(ROOT, "tools", "verify-proof.py"), "evidence", "--vkey", vkey.strip()]
        for f in (path, one):
            r = subprocess.run(checker + [f], capture_output=True, text=True)
            assert r.returncode == 0 and r.stdout.startswith("ok: "), r.stdout + r.stderr
            log("ok: tools/verify-proof.py evidence %s: %s" % (os.path.basename(f), r.stdout.strip()))
        bundle = json.load(open(path))
        bundle["events"][0]["at"] = "2026-01-01T00:00:00.000Z"
        bad = os.path.join(out, "evidence-tampered.json")
        json.dump(bundle, open(bad, "w"))
        r = subprocess.run(checker + [bad], capture_output=True, text=True)
        assert r.returncode == 1 and "error:" in r.stderr, r.stdout + r.stderr
        log("ok: a changed bundle is refused: " + r.stderr.strip())

        # 30,000 events: first render, slider move, Verify (figures, not assertions)
        page.goto(base + "/console#user=big")
        t0 = time.perf_counter()
        page.reload()
        page.wait_for_function("() => document.body.dataset.firstPage === 'big'", timeout=60_000)
        figures["first_render_ms_30k"] = round(page.evaluate("() => performance.now()"), 1)
        wait_loaded(page, "big")
        figures["full_history_loaded_s_30k"] = round(time.perf_counter() - t0, 2)
        slider = page.get_by_label("As of", exact=True)
        slider.focus()
        moves = []
        for key, expect_seq in [("Home", None), ("End", "now"), ("PageDown", None), ("ArrowLeft", None)]:
            before = page.evaluate("() => document.body.dataset.shownAt")
            t = time.perf_counter()
            slider.press(key)
            page.wait_for_function("b => document.body.dataset.shownAt !== b", arg=before, timeout=30_000)
            moves.append(round((time.perf_counter() - t) * 1000, 1))
        figures["slider_move_ms_30k"] = moves
        bseq = int(page.locator("#history tbody tr").first.get_attribute("data-seq"))
        verifies = []
        for _ in range(3):
            text, ms = verify_row(page, bseq)
            assert text.startswith("Verified:"), text
            verifies.append(ms)
        figures["verify_ms"] = verifies
        assert page.locator("#history tbody tr").count() == 100
        assert "of 30000" in page.locator("#page-text").text_content()
        log("ok: the user with 30,000 events pages by 100")
        expect(page.get_by_role("status", name="Completeness")).to_have_attribute("data-ok", "true", timeout=120_000)
        figures["history_complete_ms_30k"] = float(page.get_by_role("status", name="Completeness").get_attribute("data-ms"))
        log("ok: History complete over 30,000 events in %.0f ms" % figures["history_complete_ms_30k"])

        # Phone width
        page.set_viewport_size({"width": 390, "height": 844})
        open_user(page, "bob")
        shot(page, out, "user-390")
        doc_shot(page, out, "phone", "#user-view", height=760)
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 400, "the page scrolls sideways at 390 px: %d" % width
        log("ok: no sideways scroll at 390 px")
        # The front page at the same width: one column, no sideways scroll either
        page.get_by_role("link", name="Front page: recent events and users").click()
        expect(page.get_by_role("table", name="Users")).to_be_visible(timeout=20_000)
        page.wait_for_function("() => document.body.dataset.users !== undefined")
        shot(page, out, "front-390")
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 400, "the front page scrolls sideways at 390 px: %d" % width
        log("ok: the front page has no sideways scroll at 390 px")

        sizes = {u.rsplit("/", 1)[-1]: len(urllib.request.urlopen(u, timeout=30).read()) for u in assets}
        # Outside a secure context (plain HTTP to a name that is not the loopback): cannot verify
        insecure = ctx.new_page()
        other = base.replace("127.0.0.1", "console.test")
        insecure.goto(other + "/console#token=" + s.auditor)
        expect(insecure.locator("#context-note")).to_contain_text("cannot verify proofs here", timeout=20_000)
        insecure.get_by_label("User", exact=True).fill("bob")
        insecure.get_by_role("button", name="Show").click()
        wait_loaded(insecure, "bob")
        text, _ = verify_row(insecure, seq)
        assert text.startswith("Cannot verify:") and "secure context" in text, text
        expect(insecure.get_by_role("status", name="Continuity")).to_contain_text("Cannot check")
        insecure.close()
        log("ok: outside a secure context: " + text)

        figures["assets_bytes"] = sum(sizes.values())
        figures["assets"] = sizes
        assert figures["assets_bytes"] <= 150 * 1024, figures
        assert not foreign, "requests to another origin: %s" % foreign
        real_errors = [e for e in errors if "Failed to load resource" not in e]
        assert not real_errors, real_errors
        log("ok: no request left %s; no script error" % base)
        browser.close()


def front_page(s, page, out):
    """Before any user is chosen: The log, Recent events, Users; links to users; deep links."""
    head = s.call("GET", "/v1/users?limit=1", token=s.auditor)["position"]
    # The log: the newest checkpoint, verified in the page against the pinned key
    status = page.get_by_role("status", name="Checkpoint")
    expect(status).to_have_attribute("data-ok", "true", timeout=20_000)
    assert status.get_attribute("data-size") == str(head) and "Verified:" in status.text_content(), status.text_content()
    assert "holds %d events" % head in status.text_content(), status.text_content()
    expect(page.locator("#witnesses-box")).to_be_hidden()
    # Recent events: the newest 50, newest first, each user a link
    recent = page.get_by_role("table", name="Recent events")
    page.wait_for_function("h => document.body.dataset.recent === String(h)", arg=head, timeout=20_000)
    seqs = recent.locator("tbody tr").evaluate_all("rows => rows.map(r => Number(r.dataset.seq))")
    assert seqs == list(range(head, head - 50, -1)), seqs
    users = recent.locator("tbody tr td:nth-child(4)").all_text_contents()
    assert "<i>markup</i>" in users and page.locator("#recent i, #users i").count() == 0, users
    shot(page, out, "front-1280")
    doc_shot(page, out, "front", "main", height=900)
    # Older events, then the deep link of that page
    page.get_by_role("button", name="Older events").click()
    page.wait_for_function("h => document.body.dataset.recent === String(h)", arg=head - 50, timeout=20_000)
    assert "older=%d" % (head - 49) in page.url and "token" not in page.url, page.url
    seqs = recent.locator("tbody tr").evaluate_all("rows => rows.map(r => Number(r.dataset.seq))")
    assert seqs == list(range(head - 50, head - 100, -1)), seqs
    page.reload()
    page.wait_for_function("h => document.body.dataset.recent === String(h)", arg=head - 50, timeout=20_000)
    page.get_by_role("button", name="Newer events").click()
    page.wait_for_function("h => document.body.dataset.recent === String(h)", arg=head, timeout=20_000)
    log("ok: Recent events: the newest 50 (seq %d down), older and newer pages, a deep link" % head)
    # Users: a prefix search, paged, as GET /v1/users answers it
    page.get_by_label("Key prefix").fill("page-user-")
    page.get_by_label("Key prefix").press("Enter")
    page.wait_for_function("() => document.body.dataset.users === 'page-user-|'", timeout=20_000)
    table = page.get_by_role("table", name="Users")
    rows = table.locator("tbody tr").evaluate_all("rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    api = s.call("GET", "/v1/users?prefix=page-user-&limit=50", token=s.auditor)
    assert rows == [[u["user"], str(u["events"]), str(u["lastSeq"]), u["lastAt"]] for u in api["users"]], rows[:3]
    assert len(rows) == 50
    page.get_by_role("button", name="Next page").click()
    page.wait_for_function("() => document.body.dataset.users === 'page-user-|page-user-49'", timeout=20_000)
    assert table.locator("tbody tr").count() == 10
    assert "prefix=page-user-" in page.url and "after=page-user-49" in page.url, page.url
    expect(page.get_by_role("button", name="Next page")).to_be_disabled()
    shot(page, out, "users-1280")
    # A user whose key is markup is text; a prefix that matches nobody says so
    page.get_by_label("Key prefix").fill("<i>")
    page.get_by_role("button", name="Search").click()
    page.wait_for_function("() => document.body.dataset.users === '<i>|'", timeout=20_000)
    assert table.locator("tbody tr td:first-child").all_text_contents() == ["<i>markup</i>"]
    assert page.locator("#users i").count() == 0
    log("ok: Users: a prefix search in pages of 50 (%d then 10), markup shown as text" % len(rows))
    # A user's link opens that user's view (keyboard), and Back returns to the front page
    table.get_by_role("link", name="<i>markup</i>").focus()
    page.keyboard.press("Enter")
    wait_loaded(page, "<i>markup</i>")
    expect(page.locator("#home")).to_be_hidden()
    page.go_back()
    expect(page.get_by_role("table", name="Users")).to_be_visible(timeout=20_000)
    page.wait_for_function("() => document.body.dataset.users === '<i>|'", timeout=20_000)
    # The Live feed continues Recent events: a new event on top of the newest page
    page.get_by_role("link", name="Front page: recent events and users").click()
    page.wait_for_function("h => document.body.dataset.recent === String(h)", arg=head, timeout=20_000)
    expect(page.locator("#live-state")).to_contain_text("Connected", timeout=20_000)
    new = s.call("POST", "/v1/users/page-user-00/devices", {"deviceId": "tablet", "name": "A Tablet", "kind": "tablet", "via": "admin"})["events"][0]["seq"]
    expect(recent.locator("tbody tr").first).to_have_attribute("data-seq", str(new), timeout=20_000)
    assert recent.locator("tbody tr").count() == 50
    log("ok: a user link opens the user's view; Back and the front page link return; Live continues Recent events (seq %d)" % new)
    # Witnesses, when the server has a policy: GET /health lists them
    page.route("**/health", lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(
        {"status": "ok", "witnesses": [{"witness": "w1", "size": head, "behind": 0, "error": None,
                                         "users": {"size": 4, "behind": 0, "error": None}},
                                        {"witness": "w2", "size": None, "behind": head, "error": "connection refused",
                                         "users": {"size": None, "behind": 4, "error": "connection refused"}}]})))
    page.reload()
    expect(page.get_by_role("list", name="Witnesses")).to_contain_text("w1: holds size %d, up to date; of the index log size 4, up to date" % head, timeout=20_000)
    expect(page.get_by_role("list", name="Witnesses")).to_contain_text("w2: has cosigned nothing yet, %d events behind; of the index log nothing yet, 4 entries behind — last error: connection refused" % head)
    doc_shot(page, out, "log", "#keys", height=400)
    page.unroute("**/health")
    log("ok: the witnesses' state from /health")


if __name__ == "__main__":
    main()
