"""Attach benchmark: what a job of many ranks costs a `trainingrun watch` viewer.

Starts a real watch server (`python -m app.cli watch`) on a free loopback port for each job
size, connects one real websocket viewer, and has N ranks (64, 256, 1024, 4096 by default)
register with real HTTP posts (each rank posts its first step; 8 posting threads, each with
one kept-alive http.client connection, as a rank's reporter posts; 127.0.0.1 only). For each
N it prints the seconds until every rank was registered and the viewer had the job's first
step, the hellos and bytes the viewer received, and bytes per rank (flat when the viewer's
bytes grow linearly with the ranks).
Then a rank whose host name changes on every post (600 posts of rank 0 of a 1,024-rank job):
the hellos and bytes that cost the viewer.

    python bench/attach_ranks.py [--ranks 64,256,1024,4096] [--flaps 600] [--flap-ranks 1024]

Targets: a 1,024-rank job registers in a few seconds and sends the viewer under 1 MB; bytes
per rank do not grow with N; a flapping host name sends a hello at most every 2 s, not one
per post. Figures depend on the machine (server, posters and viewer share its cores).
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import serving  # noqa: E402

PER_NODE = 8
POSTERS = 8
SETTLE_S = 2.5  # longer than the server's longest hold of a hello, to count a trailing one


class Viewer:
    """One websocket viewer in a thread: bytes and hellos received, and the latest step."""

    def __init__(self, url: str) -> None:
        self._conn = connect(url.replace("http://", "ws://") + "/ws", max_size=2**27)
        self.ws = self._conn.__enter__()
        self.bytes = self.hellos = 0
        self.step: int | None = None
        self.hosts: list[str] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while True:
                text = self.ws.recv()
                self.bytes += len(text.encode() if isinstance(text, str) else text)
                msg = json.loads(text)
                if msg["type"] == "hello":
                    self.hellos += 1
                    self.hosts = msg["attached"]["hosts"]
                elif msg["type"] == "step":
                    self.step = msg["step"]
        except ConnectionClosed:
            pass

    def reset(self) -> None:
        self.bytes = self.hellos = 0

    def close(self) -> None:
        self._conn.__exit__(None, None, None)
        self._thread.join(5)


def body(rank: int, world: int, step: int, *, host: str | None = None) -> dict[str, Any]:
    info = {
        "rank": rank,
        "world_size": world,
        "local_rank": rank % PER_NODE,
        "local_world_size": min(PER_NODE, world),
        "node": rank // PER_NODE,
        "host": host or f"node{rank // PER_NODE}",
        "backend": "nccl",
        "device": "cuda",
        "params": 124_000_000,
        "weights_bytes": 496_000_000,
    }
    report = {
        "step": step,
        "loss": 3.0,
        "tokens": 8192,
        "data_s": 0.001,
        "forward_s": 0.02,
        "backward_s": 0.04,
        "optimizer_s": 0.005,
        "step_s": 0.07,
        "allreduce_s": 0.03,
        "allreduce_exposed_s": 0.01,
        "allreduce_bytes": 496_000_000,
        "allreduce_elements": 124_000_000,
        "allreduce_calls": 20,
    }
    return {"type": "attach", "protocol": 2, "run_id": "bench", "rank": info, "steps": [report]}


def wait_until(pred: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return False


def post_all(url: str, world: int) -> None:
    """Every rank of a `world`-rank job posts its first step, from POSTERS threads."""
    port = int(url.rsplit(":", 1)[1])

    def post_some(ranks: range) -> None:
        # As a rank's reporter posts: http.client over one kept-alive connection.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Content-Type": "application/json", "Connection": "keep-alive"}
        try:
            for r in ranks:
                conn.request("POST", "/api/attach", json.dumps(body(r, world, 1)), headers)
                resp = conn.getresponse()
                text = resp.read()
                if resp.status != 200:
                    raise SystemExit(f"rank {r}: {resp.status} {text[:200]!r}")
        finally:
            conn.close()

    with ThreadPoolExecutor(POSTERS) as pool:
        list(pool.map(post_some, [range(i, world, POSTERS) for i in range(POSTERS)]))


def register(url: str, world: int) -> tuple[float, Viewer]:
    viewer = Viewer(url)
    wait_until(lambda: viewer.bytes > 0, 10)
    t0 = time.monotonic()
    post_all(url, world)
    if not wait_until(lambda: viewer.step == 1, 120):
        raise SystemExit(f"{world} ranks: the viewer never got the first step")
    took = time.monotonic() - t0
    nodes = -(-world // PER_NODE)
    wait_until(lambda: len(viewer.hosts) == nodes, 10)
    time.sleep(SETTLE_S)  # a hello still held back is counted too
    return took, viewer


def flapping(url: str, posts: int, world: int) -> tuple[float, Viewer]:
    """A `world`-rank job registers; then rank 0 posts `posts` times, its host name new each
    time. What the viewer gets from the first of those posts on is counted."""
    _, viewer = register(url, world)
    viewer.reset()
    with httpx.Client(base_url=url, timeout=60) as http:
        t0 = time.monotonic()
        for i in range(posts):
            sent = body(0, world, i + 2, host=f"flap-{i}")
            http.post("/api/attach", json=sent).raise_for_status()
        took = time.monotonic() - t0
    wait_until(lambda: f"flap-{posts - 1}" in viewer.hosts, 10)
    time.sleep(SETTLE_S)
    return took, viewer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="64,256,1024,4096", help="job sizes, comma separated")
    ap.add_argument("--flaps", type=int, default=600, help="posts with a changing host name")
    ap.add_argument("--flap-ranks", type=int, default=1024, help="the flapping job's ranks")
    args = ap.parse_args()
    sizes = [int(x) for x in args.ranks.split(",") if x]
    print(f"{'ranks':>6} {'register s':>11} {'hellos':>7} {'viewer bytes':>13} {'bytes/rank':>11}")
    watch = ("--log-level", "warning")
    for world in sizes:
        with serving(*watch, command="watch", ready_s=60) as (url, _server):
            took, viewer = register(url, world)
            viewer.close()
        print(
            f"{world:>6} {took:>11.2f} {viewer.hellos:>7} {viewer.bytes:>13,} "
            f"{viewer.bytes / world:>11,.0f}",
            flush=True,
        )
    if args.flaps:
        with serving(*watch, command="watch", ready_s=60) as (url, _server):
            took, viewer = flapping(url, args.flaps, args.flap_ranks)
            viewer.close()
        print(
            f"flapping host name, {args.flap_ranks} ranks: {args.flaps} posts of rank 0 in "
            f"{took:.2f} s -> {viewer.hellos} hellos, {viewer.bytes:,} bytes to the viewer",
            flush=True,
        )


if __name__ == "__main__":
    main()
