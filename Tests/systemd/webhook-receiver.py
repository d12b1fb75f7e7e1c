#!/usr/bin/env python3
"""The staff's webhook in the systemd VM test: records every POST as one JSON line and answers 200.

    webhook-receiver.py PORT FILE
"""
import http.server
import json
import sys

PORT, RECORD = int(sys.argv[1]), sys.argv[2]
MAX_BODY = 64 * 1024


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0 or length > MAX_BODY:
            self.send_error(413)
            return
        body = self.rfile.read(length).decode("utf-8", "replace")
        with open(RECORD, "a", encoding="utf-8") as out:
            out.write(json.dumps({"path": self.path, "key": self.headers.get("Idempotency-Key"), "body": body}) + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
