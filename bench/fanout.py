"""Fan-out benchmark: does training keep its pace while hundreds of viewers watch?

Starts the real server (uvicorn + training worker) on a free loopback port at max speed,
then for 0, 50, 200 and 500 viewers (loopback websocket clients in a separate process, for
a bounded time each) prints: training steps/s, step frames/s delivered to each viewer, and
p50 / p99 publish-to-receive latency (from the `sent_at` stamp in every step frame).

    python bench/fanout.py [--viewers 0,50,200,500] [--seconds 6] [--gpus 32 --servers 4]

With --present, one more connection presents (a presenter's page moving the room five times
a second) and every viewer follows it: the table adds the move latency, presenter's send to
a follower's receive (p50 / p99), for 0 and 300 followers by default:

    python bench/fanout.py --present [--viewers 0,300]

Targets: at 500 viewers training keeps >= 90% of its 0-viewer steps/s and p99 <= 100 ms;
with a presenter, 300 followers keep >= 90% of the step rate and get each move within
200 ms p99.
Figures depend on the machine: the server, the worker and the clients share its cores (the
clients run at a lower priority, standing in for browsers on other machines).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing as mp
import os
import statistics
import time

import httpx
from server import raise_fd_limit, serving

STAMP = '"sent_at":'
MOVE_STAMP = '"bench":{"t":'
MOVES_PER_S = 5.0


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
        if text.startswith('{"type":"follow"'):
            k = text.find(MOVE_STAMP)
            if k >= 0 and window and now >= window[0]:
                out["moves"].append(now - float(text[k + len(MOVE_STAMP) : text.find("}", k)]))
            continue
        i = text.find(STAMP, 0, 80) if text.startswith('{"type":"step"') else -1
        if i < 0 or not window or now < window[0]:
            continue
        j = text.find(",", i)
        lat.append(now - float(text[i + len(STAMP) : j]))
        frames += 1
    out["frames"].append(frames)
    out["lat"].extend(lat)


async def _present(ws, window: list[float]) -> None:
    """A presenter's page: starts presenting, then moves the room MOVES_PER_S times a second,
    each move stamped with the time it was sent (the parts are the page's own business)."""
    import json

    await ws.send(json.dumps({"type": "present", "action": "start", "parts": {}}))
    while not window or time.time() < window[1]:
        parts = {"bench": {"t": time.time()}}
        await ws.send(json.dumps({"type": "present", "action": "move", "parts": parts}))
        await asyncio.sleep(1.0 / MOVES_PER_S)


async def _drain(ws) -> None:
    with contextlib.suppress(Exception):
        while True:
            await ws.recv()


async def _viewers(url: str, n: int, seconds: float, q: mp.Queue, present: bool = False) -> dict:
    import websockets

    out: dict = {"frames": [], "lat": [], "moves": []}
    conns = []
    for i in range(0, n, 50):  # connect in batches, as a class opening the page would
        batch = [websockets.connect(url, max_size=2**22, open_timeout=120) for _ in range(50)]
        conns += await asyncio.gather(*batch[: n - i])
    window: list[float] = []
    tasks = [asyncio.create_task(_viewer(ws, window, out)) for ws in conns]
    lead = None
    if present:
        lead = await websockets.connect(url, max_size=2**22, open_timeout=120)
        tasks += [asyncio.create_task(_present(lead, window)), asyncio.create_task(_drain(lead))]
    start = time.time() + 1.0
    window += [start, start + seconds]
    q.put(start)  # everyone is connected: the driver measures the same window
    await asyncio.gather(*tasks[: len(conns)], return_exceptions=True)
    if lead is not None:
        await lead.close()
        await asyncio.gather(*tasks[len(conns) :], return_exceptions=True)
    await asyncio.gather(*(ws.close() for ws in conns), return_exceptions=True)
    return out


def viewers_process(url: str, n: int, seconds: float, q: mp.Queue, present: bool = False) -> None:
    raise_fd_limit()
    # Real viewers run on their own machines; here they share the server's cores, so they
    # yield to the server and the trainer rather than take the CPU the run would not lose.
    os.nice(10)
    q.put(asyncio.run(_viewers(url, n, seconds, q, present)))


# --- the driver -------------------------------------------------------------------------------


def run_step(base: str) -> int:
    return httpx.get(base + "/api/run", timeout=30).json()["step"]


def measure(
    base: str, ws_url: str, n: int, seconds: float, settle: float, present: bool = False
) -> dict:
    ctx = mp.get_context("spawn")
    q: mp.Queue = ctx.Queue()
    proc = None
    start_at = time.time() + settle
    if n:
        proc = ctx.Process(target=viewers_process, args=(ws_url, n, seconds, q, present))
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
        moves = sorted(got["moves"])
        res["moves"] = len(moves)
        res["move_p50_ms"] = 1000 * moves[len(moves) // 2] if moves else float("nan")
        res["move_p99_ms"] = 1000 * moves[int(0.99 * (len(moves) - 1))] if moves else float("nan")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--viewers", default="0,50,200,500")
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--gpus", default="32")
    ap.add_argument("--servers", default="4")
    ap.add_argument("--present", action="store_true", help="one presenter, every viewer follows")
    args = ap.parse_args(argv)
    if args.present and args.viewers == "0,50,200,500":
        args.viewers = "0,300"
    raise_fd_limit()
    args_serve = [
        "--gpus", args.gpus, "--servers", args.servers, "--speed", "max",
        "--rest-after", "0", "--checkpoint-every", "0", "--log-level", "warning",
    ]  # fmt: skip
    with serving(*args_serve) as (base, _server):
        ws_url = base.replace("http://", "ws://") + "/ws"
        print(f"server on {base}: {args.gpus} GPUs, speed max, {os.cpu_count()} CPU cores")
        head = f"{'viewers':>7} {'steps/s':>8} {'vs 0':>6} {'fps/viewer':>10} "
        head += f"{'p50 ms':>7} {'p99 ms':>7}"
        if args.present:
            head += f" {'moves':>7} {'move p50':>8} {'move p99':>8}"
        print(head)
        baseline = None
        for n in [int(x) for x in args.viewers.split(",")]:
            r = measure(base, ws_url, n, args.seconds, args.settle, args.present)
            baseline = baseline or r["steps_per_s"]
            rel = r["steps_per_s"] / baseline if baseline else float("nan")
            if n:
                line = f"{n:>7} {r['steps_per_s']:>8.1f} {rel:>6.0%} {r['fps']:>10.1f} "
                line += f"{r['p50_ms']:>7.1f} {r['p99_ms']:>7.1f}"
                if args.present:
                    line += f" {r['moves']:>7} {r['move_p50_ms']:>8.1f} "
                    line += f"{r['move_p99_ms']:>8.1f}"
                if r["connected"] != n:
                    line += f"  (only {r['connected']} connected)"
                print(line)
            else:
                print(f"{n:>7} {r['steps_per_s']:>8.1f} {rel:>6.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
