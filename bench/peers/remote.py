"""Peers that run in their own process: a JSON-lines protocol over stdin/stdout.

Pathway keeps process-global state (its parse graph, a runtime per `pw.run`) and pydbsp
needs Python 3.12+, so each runs in a worker process (`python -m bench.peers.worker KIND`)
with the benchmark's module tree on its path. The worker times each call itself, so the
pipe and JSON costs stay out of the numbers; a call that outlives its time-out kills the
worker and fails the peer for that query, and the run goes on.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.data import Fact, Tick
from bench.peers.base import PeerFailure
from bench.queries import Spec

ROOT = Path(__file__).resolve().parents[2]


class Remote:
    """A peer in a worker process; `last_ns` is the worker's own timing of the last call."""

    def __init__(self, kind: str, python: str | None = None,
                 unsupported: str | None = None) -> None:
        self.name = kind
        self.python = python or sys.executable
        self.reason = unsupported
        self.proc: subprocess.Popen[bytes] | None = None
        self.timeout_s = 600.0
        self.last_ns: int | None = None
        self.last_work: int | None = None

    def unsupported(self, spec: Spec) -> str | None:
        if self.reason is not None:
            return self.reason
        if spec.closure is not None:
            return "closure not wired for this peer (a join chain only)"
        return None

    def open(self, query: str, spec: Spec, facts: Sequence[Fact]) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen(
            [self.python, "-m", "bench.peers.worker", self.name],
            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )
        self.call({"op": "open", "query": query, "facts": list(facts)})

    def apply(self, tick: Tick) -> int:
        return int(self.call({"op": "apply", "tick": tick.to_json()})["count"])

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one request and wait (at most `timeout_s`) for its answer."""
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            started = time.monotonic()
            if not selector.select(self.timeout_s):
                self.close()
                raise PeerFailure(f"{self.name}: no answer within {self.timeout_s:.0f} s "
                                  f"(after {time.monotonic() - started:.0f} s), killed")
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            self.proc = None
            raise PeerFailure(f"{self.name}: worker exited with status {code}")
        answer: dict[str, Any] = json.loads(line)
        if not answer.get("ok"):
            self.close()
            raise PeerFailure(f"{self.name}: {answer.get('error')}")
        self.last_ns = answer.get("ns")
        return answer

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=10)
        finally:
            self.proc = None
