"""Fan-out benchmark: does training keep its pace while hundreds of viewers watch?

Starts the real server (uvicorn + training worker) on a free loopback port at max speed,
then for 0, 50, 200 and 500 viewers (loopback websocket clients in a separate process, for
a bounded time each) prints: training steps/s, step frames/s delivered to each viewer, and
p50 / p99 publish-to-receive latency (from the `sent_at` stamp in every step frame).

    python bench/fanout.py [--viewers 0,50,200,500] [--seconds 6] [--gpus 32 --servers 4]

Targets: at 500 viewers training keeps >= 90% of its 0-viewer steps/s and p99 <= 100 ms.
Figures depend on the machine: the server, the worker and the clients share its cores (the
clients run at a lower priority, standing in for browsers on other machines).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
STAMP = '"sent_at":'


def raise_fd_limit(wanted: int = 8192) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(wanted, hard) if hard != resource.RLIM_INFINITY else wanted
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the viewers (run in their own process) ---------------------------------------------------


async def _viewer(ws, window: list[float], out: dict) -> None:
    frames, lat = 0, []
    while True:
        left = window[1] - time.time() if window else 1.0
        if window and left <= 0:
            break
        try:
            text = await asyncio.wait_for(ws.recv(), max(left, 0.01))
        except TimeoutError:
            continue
        now = time.time()
        i = text.find(STAMP, 0, 80) if text.startswith('{"type":"step"') else -1
        if i < 0 or not window or now < window[0]:
            continue
        j = text.find(",", i)
        lat.append(now - float(text[i + len(STAMP) : j]))
        frames += 1
    out["frames"].append(frames)
    out["lat"].extend(lat)


async def _viewers(url: str, n: int, seconds: float, q: mp.Queue) -> dict:
    import websockets

    out: dict = {"frames": [], "lat": []}
    conns = []
    for i in range(0, n, 50):  # connect in batches, as a class opening the page would
        batch = [websockets.connect(url, max_size=2**22, open_timeout=120) for _ in range(50)]
        conns += await asyncio.gather(*batch[: n - i])
    window: list[float] = []
    tasks = [asyncio.create_task(_viewer(ws, window, out)) for ws in conns]
    start = time.time() + 1.0
    window += [start, start + seconds]
    q.put(start)  # everyone is connected: the driver measures the same window
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*(ws.close() for ws in conns), return_exceptions=True)
    return out


def viewers_process(url: str, n: int, seconds: float, q: mp.Queue) -> None:
    raise_fd_limit()
    # Real viewers run on their own machines; here they share the server's cores, so they
    # yield to the server and the trainer rather than take the CPU the run would not lose.
    os.nice(10)
    q.put(asyncio.run(_viewers(url, n, seconds, q)))


# --- the driver -------------------------------------------------------------------------------


def run_step(base: str) -> int:
    return httpx.get(base + "/api/run", timeout=30).json()["step"]


def measure(base: str, ws_url: str, n: int, seconds: float, settle: float) -> dict:
    ctx = mp.get_context("spawn")
    q: mp.Queue = ctx.Queue()
    proc = None
    start_at = time.time() + settle
    if n:
        proc = ctx.Process(target=viewers_process, args=(ws_url, n, seconds, q))
        proc.start()
        start_at = q.get(timeout=300)
    time.sleep(max(0.0, start_at - time.time()))
    s0, t0 = run_step(base), time.time()
    time.sleep(seconds)
    s1, t1 = run_step(base), time.time()
    res = {"viewers": n, "steps_per_s": (s1 - s0) / (t1 - t0)}
    if proc is not None:
        got = q.get(timeout=seconds + 120)
        proc.join(30)
        lat = sorted(got["lat"])
        res["connected"] = len(got["frames"])
        res["fps"] = statistics.mean(got["frames"]) / seconds if got["frames"] else 0.0
        res["p50_ms"] = 1000 * lat[len(lat) // 2] if lat else float("nan")
        res["p99_ms"] = 1000 * lat[int(0.99 * (len(lat) - 1))] if lat else float("nan")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--viewers", default="0,50,200,500")
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--gpus", default="32")
    ap.add_argument("--servers", default="4")
    args = ap.parse_args(argv)
    raise_fd_limit()
    port = free_port()
    base, ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/ws"
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--run-dir", tmp,
            "--gpus", args.gpus, "--servers", args.servers, "--speed", "max",
            "--rest-after", "0", "--checkpoint-every", "0", "--log-level", "warning",
        ]  # fmt: skip
        server = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True)
        try:
            deadline = time.time() + 120
            while time.time() < deadline:
                try:
                    if httpx.get(base + "/api/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.3)
            print(f"server on {base}: {args.gpus} GPUs, speed max, {os.cpu_count()} CPU cores")
            print(f"{'viewers':>7} {'steps/s':>8} {'vs 0':>6} {'fps/viewer':>10} "
                  f"{'p50 ms':>7} {'p99 ms':>7}")  # fmt: skip
            baseline = None
            for n in [int(x) for x in args.viewers.split(",")]:
                r = measure(base, ws_url, n, args.seconds, args.settle)
                baseline = baseline or r["steps_per_s"]
                rel = r["steps_per_s"] / baseline if baseline else float("nan")
                if n:
                    line = f"{n:>7} {r['steps_per_s']:>8.1f} {rel:>6.0%} {r['fps']:>10.1f} "
                    line += f"{r['p50_ms']:>7.1f} {r['p99_ms']:>7.1f}"
                    if r["connected"] != n:
                        line += f"  (only {r['connected']} connected)"
                    print(line)
                else:
                    print(f"{n:>7} {r['steps_per_s']:>8.1f} {rel:>6.0%}")
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
