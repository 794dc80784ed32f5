"""Browser benchmark for the 3D scene: how fast it opens, what it costs to draw, what it weighs.

Starts the real server on a free loopback port (16 GPUs, then 256 GPUs), opens the page in
headless Chromium (the Debian build at /usr/bin/chromium, WebGL drawn by SwiftShader on the
CPU) and prints:

  - time to first frame: from navigation start to the stage's first rendered frame, for a
    viewer joining a running server (and for the very first visit, while it starts)
  - draw calls at 16 and 256 GPUs: the most any frame needed while one full step played
  - first page load: bytes on the wire (gzip, as the browser asks for it) and decoded bytes

    python bench/web.py [--chromium /usr/bin/chromium]

Targets: draw calls <= 60 at 16 GPUs and within +10 % at 256. Software WebGL is far slower
than any laptop GPU, so read the frame timing here as an upper bound.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--mute-audio"]
DEBUG = "document.getElementById('stage').stageDebug()"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(run_dir: Path, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--run-dir", str(run_dir), "--fresh", "--speed", "2", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(450):  # up to 90 s
        try:
            with urllib.request.urlopen(f"{url}/api/health", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("server did not come up")


def measure(browser, url: str) -> dict[str, float]:
    ctx = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = ctx.new_page()
    wire = 0
    decoded = 0
    responses = []
    page.on("requestfinished", lambda r: responses.append(r))
    page.goto(url + "/")
    page.wait_for_function("window.trainingRun && window.trainingRun.frames > 0", polling=20)
    first_frame_ms = page.evaluate("performance.now()")
    page.wait_for_load_state("networkidle")
    for r in responses:
        sizes = r.sizes()
        wire += sizes["responseBodySize"] + sizes["responseHeadersSize"]
        resp = r.response()
        if resp is not None:
            try:
                decoded += len(resp.body())
            except Exception:  # noqa: BLE001 - a body may be gone (e.g. a redirect)
                pass
    control = f"{url}/api/run/control"
    httpx.post(control, json={"type": "control", "action": "pause"}, timeout=10)
    page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=60_000)
    page.wait_for_function(f"!{DEBUG}.playing", timeout=60_000)
    steps = page.evaluate(f"{DEBUG}.seen.steps")
    httpx.post(control, json={"type": "control", "action": "step"}, timeout=10)
    page.wait_for_function(f"{DEBUG}.seen.steps > {steps}", timeout=60_000)
    page.wait_for_function(f"!{DEBUG}.playing", timeout=60_000)
    dbg = page.evaluate(DEBUG)
    ctx.close()
    return {
        "first_frame_ms": first_frame_ms,
        "draw_calls": dbg["seen"]["maxDrawCalls"],
        "drawables": dbg["drawables"],
        "requests": len(responses),
        "wire_bytes": wire,
        "decoded_bytes": decoded,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    opts = ap.parse_args()
    from playwright.sync_api import sync_playwright

    results = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=opts.chromium, headless=True, args=ARGS)
        for label, args in (
            ("16", ["--gpus", "16", "--servers", "4"]),
            ("256", ["--gpus", "256", "--servers", "32", "--batch-size", "256"]),
        ):
            proc, url = start_server(Path(tmp) / label, *args)
            try:
                # The first visit may wait for the training worker to finish starting; the
                # second is what a viewer joining a running server sees.
                cold = measure(browser, url)
                results[label] = measure(browser, url)
                results[label]["cold_first_frame_ms"] = cold["first_frame_ms"]
            finally:
                proc.terminate()
                proc.wait(30)
        browser.close()

    s, b = results["16"], results["256"]
    for label, r in (("16", s), ("256", b)):
        pad = " " * (5 - len(label))
        print(f"time to first frame, {label} GPUs:{pad}{r['first_frame_ms']:8.0f} ms", end="")
        print(f"   (just after the server started: {r['cold_first_frame_ms']:.0f} ms)")
    for label, r in (("16", s), ("256", b)):
        print(f"draw calls, {label} GPUs:{'':<{13 - len(label)}}{r['draw_calls']:8d}", end="")
        print(f"   (scene objects {r['drawables']})")
    print(f"first load, requests:            {s['requests']:8d}")
    print(f"first load, on the wire (gzip):  {s['wire_bytes'] / 1024:8.0f} KiB")
    print(f"first load, decoded:             {s['decoded_bytes'] / 1024:8.0f} KiB")
    ok = s["draw_calls"] <= 60 and b["draw_calls"] <= s["draw_calls"] * 1.1
    print("draw-call budget:", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
