"""Helpers of the console's browser test (console_test.py): `authledger serve --dev` on a
free loopback port, and the page's tables and Verify results as the test reads them."""
import json, os, re, subprocess, time, urllib.request
from playwright.sync_api import expect

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

def log(msg):
    print(msg, flush=True)


class Server:
    """`authledger serve --dev` on a free port over a fresh store (the scenarios loaded)."""

    def __init__(self, binary, work):
        self.binary, self.work = binary, work
        self.auditor = "auditor-" + os.urandom(12).hex()
        env = dict(os.environ, AUTHLEDGER_TOKENS=self.auditor + ":read+audit")
        env.pop("AUTHLEDGER_STORE", None)
        self.out = open(os.path.join(work, "serve.out"), "w+")
        self.proc = subprocess.Popen(
            [binary, "serve", "--dev", "--port", "0", "--store", os.path.join(work, "store"),
             "--fixtures", os.path.join(ROOT, "Fixtures", "scenarios"), "--origin", "console-test.example/log",
             "--log-level", "warning"], stdout=self.out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        deadline = time.time() + 120
        while time.time() < deadline:
            self.out.seek(0)
            text = self.out.read()
            m = re.search(r"export AUTHLEDGER_URL=(\S+) TOKEN=(\S+)", text)
            link = re.search(r"^\s*(http://\S+/console#token=\S+)$", text, re.M)
            if m and link:
                self.base, self.admin, self.link = m.group(1), m.group(2), link.group(1)
                return
            if self.proc.poll() is not None:
                raise SystemExit("serve --dev stopped:\n" + text)
            time.sleep(0.1)
        raise SystemExit("serve --dev printed no banner with a console link")

    def call(self, method, path, body=None, token=None, raw=False):
        req = urllib.request.Request(self.base + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer " + (token or self.admin),
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            data = r.read()
            return (data.decode(), r.headers) if raw else json.loads(data)

    def fork_checkpoint(self):
        """A checkpoint signed with this server's key and origin over a log of other events."""
        fork = os.path.join(self.work, "fork")
        env = dict(os.environ, AUTHLEDGER_CHECKPOINT_KEY_FILE=os.path.join(self.work, "store", "checkpoint.key"),
                   AUTHLEDGER_ORIGIN="console-test.example/log")
        lines = [json.dumps({"type": "device.registered", "user": "mallory%d" % k, "at": "2026-02-01T00:00:%02dZ" % k,
                             "data": {"deviceId": "d%d" % k, "name": "Forked %d" % k, "kind": "mobile", "binding": "permanent",
                                      "via": "initial"}}) for k in range(3)]
        src = os.path.join(self.work, "fork.jsonl")
        open(src, "w").write("\n".join(lines) + "\n")
        subprocess.run([self.binary, "import", src, "--store", fork], env=env, check=True, capture_output=True)
        return subprocess.run([self.binary, "checkpoint", "--store", fork], env=env, check=True, capture_output=True, text=True).stdout

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def device_rows(page):
    """The Devices table as [(id, name, status)]."""
    return page.locator("#devices tbody tr[data-device]").evaluate_all(
        "rows => rows.map(r => [r.cells[0].textContent, r.cells[1].textContent, r.cells[3].textContent])")


def api_rows(answer):
    return [[d["deviceId"], d["name"] if d["name"] is not None else "", d["status"]] for d in answer["devices"]]


def wait_loaded(page, user):
    page.wait_for_function("u => document.body.dataset.loaded === u", arg=user, timeout=60_000)


def open_user(page, user):
    page.evaluate("() => { delete document.body.dataset.loaded; }")
    page.get_by_label("User", exact=True).fill(user)
    page.get_by_role("button", name="Show").click()
    wait_loaded(page, user)


def row_status(page, seq):
    return page.locator(f"#proof-{seq}")


def verify_row(page, seq):
    page.get_by_role("button", name=f"Verify seq {seq}", exact=True).click()
    status = row_status(page, seq)
    expect(status).to_have_attribute("data-ok", re.compile("true|false"), timeout=20_000)
    return status.text_content(), float(status.get_attribute("data-ms"))


def shot(page, out, name):
    page.screenshot(path=os.path.join(out, name + ".png"), full_page=True)


def doc_shot(page, out, name, selector, height=720):
    """A small picture for docs/CONSOLE.md: the top of one element (out/docs/NAME.png)."""
    os.makedirs(os.path.join(out, "docs"), exist_ok=True)
    el = page.locator(selector)
    el.scroll_into_view_if_needed()
    box = el.bounding_box()
    page.screenshot(path=os.path.join(out, "docs", name + ".png"),
                    clip={"x": box["x"], "y": box["y"], "width": box["width"], "height": min(box["height"], height)})
