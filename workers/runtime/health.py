"""The worker's HTTP endpoints: ``/metrics`` (Prometheus), ``/health/live`` and
``/health/ready``.

Live: the process answers.  Ready: it owns its share of the queries and is caught up — no
partition still being read, no query being taken up (its progress and view read, until the
first tick including it commits), no query waiting for the log to reach its progress, and at
most ``ready_lag_tx`` transactions of the log not yet applied.  Orchestrators route nothing to a
worker that is not ready and restart one that is not live.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

Readiness = Callable[[], tuple[bool, str]]


def serve(port: int, readiness: Readiness, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """Serve the endpoints on ``port`` from a daemon thread; returns the server."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/metrics":
                self._send(200, generate_latest(), CONTENT_TYPE_LATEST)
            elif self.path == "/health/live":
                self._json(200, {"live": True})
            elif self.path == "/health/ready":
                ready, reason = readiness()
                self._json(200 if ready else 503, {"ready": ready, "reason": reason})
            else:
                self._json(404, {"error": f"no endpoint {self.path}"})

        def _json(self, status: int, body: dict[str, object]) -> None:
            self._send(status, json.dumps(body).encode(), "application/json")

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # scrapes every few seconds would flood the log

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="deltalog-http", daemon=True).start()
    return server
