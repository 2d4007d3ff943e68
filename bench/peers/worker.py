"""Worker process of a remote peer (`bench.peers.remote`): one JSON request per line in, one
answer per line out, each call timed here. Imports only the standard library, the bench
modules that need nothing else, and the peer's own package, so it runs under any Python the
peer needs.

    python -m bench.peers.worker pathway|pydbsp
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from typing import Any

from bench.data import Tick, as_fact
from bench.peers.base import Peer
from bench.queries import SPECS


def make(kind: str) -> Peer:
    """The in-process peer this worker hosts."""
    if kind == "pathway":
        from bench.peers.pathway_peer import PathwayPeer

        return PathwayPeer()
    if kind == "pydbsp":
        from bench.peers.pydbsp_peer import PydbspPeer

        return PydbspPeer()
    raise SystemExit(f"unknown peer {kind!r}")


def handle(peer: Peer, message: dict[str, Any]) -> dict[str, Any]:
    """Run one request; the answer carries the call's duration in ns."""
    started = time.perf_counter_ns()
    if message["op"] == "open":
        facts = [as_fact(f) for f in message["facts"]]
        peer.open(message["query"], SPECS[message["query"]], facts)
        return {"ok": True, "ns": time.perf_counter_ns() - started}
    count = peer.apply(Tick.from_json(message["tick"]))
    return {"ok": True, "ns": time.perf_counter_ns() - started, "count": count}


def main() -> None:
    peer = make(sys.argv[1])
    out = sys.stdout
    sys.stdout = sys.stderr  # a library's prints must not corrupt the protocol
    for line in sys.stdin:
        try:
            answer = handle(peer, json.loads(line))
        except Exception as exc:  # reported to the parent, which records it
            traceback.print_exc()
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()
        if not answer["ok"]:
            break
    peer.close()


if __name__ == "__main__":
    main()
