#!/usr/bin/env python3
"""A misbehaving witness for the fault tests: `badwitness.py PORT MODE`, MODE one of
garbage (200 with random bytes), hang (never answers within the log's timeout),
larger (409 claiming a size far beyond any log), error (500)."""
import http.server, os, sys, time

port, mode = int(sys.argv[1]), sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if mode == "hang":
            time.sleep(120)
            return
        status, ctype, body = {
            "garbage": (200, "text/plain", os.urandom(300)),
            "larger": (409, "text/x.tlog.size", b"999999999\n"),
            "error": (500, "text/plain", b"boom\n"),
        }[mode]
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
