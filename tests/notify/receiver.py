"""A real HTTP receiver in a thread, standing in for a webhook consumer, Slack,
Teams or PagerDuty (the real services cannot be reached from where the tests
run): it keeps every request, checks seclake's signature when given the
secret, answers ``status``, and can be stopped and started on the same port
(a destination down, then back)."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server(ThreadingHTTPServer):
    allow_reuse_address = True  # started again on its port after a stop
    daemon_threads = True


class Receiver:
    def __init__(self, secret: str | None = None, tolerance_s: int = 300):
        self.secret = secret
        self.tolerance_s = tolerance_s
        self.requests: list[dict[str, Any]] = []
        self.bad_signatures = 0
        self.status = 200
        self.lock = threading.Lock()
        self.port = 0
        self.server: ThreadingHTTPServer | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                ok = receiver.verify(self.headers.get("Seclake-Signature"), body)
                with receiver.lock:
                    receiver.requests.append({"path": self.path, "headers": dict(self.headers), "body": body,
                                              "json": json.loads(body or b"null"), "signed": ok})
                    if ok is False:
                        receiver.bad_signatures += 1
                self.send_response(receiver.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = _Server(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def verify(self, header: str | None, body: bytes) -> bool | None:
        """As a receiver should: recompute over the raw body, compare in constant time, refuse old stamps."""
        if self.secret is None:
            return None
        if not header:
            return False
        parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
        t = parts.get("t", "")
        if not t.isdigit() or abs(time.time() - int(t)) > self.tolerance_s:
            return False
        mac = hmac.new(self.secret.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(mac, parts.get("v1", ""))

    def bodies(self) -> list[Any]:
        with self.lock:
            return [r["json"] for r in self.requests]

    def wait_for(self, n: int, timeout: float = 30.0) -> list[Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.requests) >= n:
                return self.bodies()
            time.sleep(0.05)
        raise AssertionError(f"expected {n} requests, got {len(self.requests)}: {self.bodies()}")
