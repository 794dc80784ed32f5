"""Story pace: how fast does each chapter's run step on this machine?

Starts the real server on a free loopback port (the class run at the story's model, as a
teacher would start it), then for each run the "One GPU" story's chapters watch
(scenes/stories/one-gpu.json: one, dp2, ep2, pp4, pp4mb, team64) connects one websocket
viewer to that side run (`/ws?run=one-gpu.<run>`, app/web/runs.py) and prints: seconds from
the ask to its hello, seconds to its first step, and steps/s over the next `--seconds`
(at the server's `--speed`, default max). The chapters that use each run are named.

    python bench/story_pace.py [--seconds 15] [--speed max] [--runs team64,pp4] [--record 30]

Target: every chapter's run at least 1 step/s on a 2-core machine. The 64-GPU team (chapters
24-29) is far below that when trained live; so the story's heavy runs (its "recorded" list)
are then recorded for real (`trainingrun record --steps N`, timed) and measured again as a
server plays them: the rows marked "played", beside the live ones, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import websockets
from server import serving

ROOT = Path(__file__).resolve().parents[1]
STORY = json.loads((ROOT / "scenes" / "stories" / "one-gpu.json").read_text())


async def pace(ws_base: str, key: str, seconds: float) -> dict[str, float]:
    t0 = time.monotonic()
    async with websockets.connect(f"{ws_base}?run=one-gpu.{key}", max_size=None) as ws:
        hello_s = first_s = None
        steps: list[float] = []
        deadline = t0 + 600
        while time.monotonic() < deadline:
            msg = json.loads(await asyncio.wait_for(ws.recv(), deadline - time.monotonic()))
            now = time.monotonic()
            if msg["type"] == "hello":
                hello_s = now - t0
            elif msg["type"] == "step":
                if first_s is None:
                    first_s = now - t0
                steps.append(now)
                if now - steps[0] >= seconds:
                    break
        rate = (len(steps) - 1) / (steps[-1] - steps[0]) if len(steps) > 1 else 0.0
        return {
            "hello_s": hello_s or float("nan"),
            "first_s": first_s or float("nan"),
            "rate": rate,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--speed", default="max")
    ap.add_argument("--runs", default=",".join(STORY["runs"]))
    ap.add_argument("--record", type=int, default=30, help="steps to record (0: no played rows)")
    args = ap.parse_args()
    chapters: dict[str, list[int]] = {}
    for n, ch in enumerate(STORY["chapters"], 1):
        chapters.setdefault(ch["run"], []).append(n)
    one = STORY["runs"]["one"]
    serve = ("--gpus", "1", "--servers", "1", "--layers", str(one["n_layer"]),
             "--experts", str(one["experts"]), "--speed", args.speed, "--rest-after", "2",
             "--log-level", "warning")  # fmt: skip
    print(f"{'run':8} {'chapters':10} {'GPUs':>5} {'hello s':>8} {'1st step s':>10} {'steps/s':>8}")

    def row(key: str, got: dict[str, float], how: str) -> None:
        ns = chapters.get(key, [])
        span = f"{ns[0]}-{ns[-1]}" if ns else "-"
        gpus = STORY["runs"][key]["gpus"]
        print(
            f"{key:8} {span:10} {gpus:5d} {got['hello_s']:8.1f} {got['first_s']:10.1f}"
            f" {got['rate']:8.2f}  {how}",
            flush=True,
        )

    with serving(*serve) as (base, _):
        ws_base = base.replace("http://", "ws://") + "/ws"
        for key in args.runs.split(","):
            row(key, asyncio.run(pace(ws_base, key, args.seconds)), "live")
    heavy = [k for k in STORY["recorded"] if k in args.runs.split(",")]
    if not heavy or args.record < 1:
        return
    with tempfile.TemporaryDirectory() as run_dir:
        for key in heavy:
            t0 = time.monotonic()
            subprocess.run(
                [sys.executable, "-m", "app.cli", "record", f"one-gpu.{key}", "--steps",
                 str(args.record), "--run-dir", run_dir, *serve],
                cwd=ROOT, check=True, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            print(f"recorded {key}: {args.record} steps in {time.monotonic() - t0:.0f} s")
        with serving(*serve, run_dir=run_dir) as (base, _):
            ws_base = base.replace("http://", "ws://") + "/ws"
            seconds = min(args.seconds, args.record / 6)  # within the recording's length
            for key in heavy:
                row(key, asyncio.run(pace(ws_base, key, seconds)), "played")


if __name__ == "__main__":
    main()
