"""What the interop scripts share: a free loopback port, checks that are counted, and
`authledger serve` as a child process (started, waited for, killed or stopped).

Imported by tools/ssf-interop.py, tools/watch-interop.py and tools/identity-interop.py
(standard library only).
"""
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request


class Checks:
    """Checks that go on after a failure: each is counted, each failure printed."""

    def __init__(self):
        self.failures = []
        self.passed = 0

    def __call__(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failures.append(what)
            print("FAIL:", what, flush=True)
        return cond


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class ServeProcess:
    """`binary serve ARGS` with its output appended to `log_path`; the environment is this
    process's, without AUTHLEDGER_TOKENS unless `env` sets it."""

    def __init__(self, binary, args, log_path, env=None):
        self.binary, self.args, self.log_path, self.env = binary, args, log_path, env
        self.proc = None

    def start(self):
        full_env = dict(os.environ)
        full_env.pop("AUTHLEDGER_TOKENS", None)
        full_env.update(self.env or {})
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([self.binary, "serve"] + list(self.args), env=full_env,
                                     stdout=self.log, stderr=self.log)
        return self

    def wait_healthy(self, base, attempts=600):
        """Until GET base/health answers 200 (plain HTTP); raises when it never does."""
        for _ in range(attempts):
            try:
                with urllib.request.urlopen(base + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"the server did not start (see {self.log_path})")

    def output(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def wait_for(self, text, after=0, attempts=600):
        """Whether `text` appears in the output after offset `after` before the process ends."""
        for _ in range(attempts):
            if text in self.output()[after:]:
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.05)
        return False

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
