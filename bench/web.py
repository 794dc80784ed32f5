"""Browser benchmark for the page: what it weighs, how fast it opens, what it costs to draw.

Starts the real server (uvicorn, via `trainingrun serve`) on a free loopback port, opens the
page in headless Chromium (the Debian build at /usr/bin/chromium, WebGL drawn by SwiftShader on
the CPU) once for the live scene and once per scale-field preset (`?gpus=N`), and prints per
row:

  - first load: bytes on the wire as the browser received them (gzip, headers included) for
    every request the page made until the network went quiet, and the same decoded
  - first frame: from navigation start to the first frame the stage drew (for a field, the
    first frame with the field built)
  - draw calls: the most any drawn frame needed while the page was watched
  - idle frames/s: frames drawn per second with the run paused and nothing moving (the render
    loop should draw none)

    python bench/web.py [--chromium /usr/bin/chromium] [--size 1280x720]

Targets: first load <= 400 KB compressed, first frame <= 1.5 s, draw calls <= 60 at every
scale, idle frames/s = 0. Software WebGL is far slower than any laptop's GPU, and a busy
machine slower still, so read the timings here as an upper bound.
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
PRESETS = (None, 512, 4096, 16384, 131072)
TR = "window.trainingRun"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(run_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--run-dir", str(run_dir), "--fresh"]
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


def first_load_bytes(finished: list) -> tuple[int, int]:
    """Bytes on the wire (as received, compressed) and decoded, over finished requests."""
    wire = decoded = 0
    for r in finished:
        sizes = r.sizes()
        wire += sizes["responseBodySize"] + sizes["responseHeadersSize"]
        resp = r.response()
        if resp is not None:
            try:
                decoded += len(resp.body())
            except Exception:  # noqa: BLE001 - a body may be gone (e.g. a redirect)
                pass
    return wire, decoded


def measure(browser, url: str, gpus: int | None, size: tuple[int, int]) -> dict[str, float]:
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = ctx.new_page()
    finished: list = []
    page.on("requestfinished", lambda r: finished.append(r))
    page.goto(url + ("/" if gpus is None else f"/?gpus={gpus}"))
    ready = f"{TR} && {TR}.frames > 0" + ("" if gpus is None else f" && {TR}.field.on")
    page.wait_for_function(ready, polling=20, timeout=120_000)
    first_frame_ms = page.evaluate("performance.now()")
    page.wait_for_load_state("networkidle")
    wire, decoded = first_load_bytes(finished)
    # Watch the draw calls of every frame from now on (the hook's own count may be missing).
    page.evaluate(
        """() => { window.__calls = 0; const tick = () => { const c = window.trainingRun.drawCalls;
        if (c > window.__calls) window.__calls = c; requestAnimationFrame(tick); }; tick(); }"""
    )
    control = f"{url}/api/run/control"
    httpx.post(control, json={"type": "control", "action": "pause"}, timeout=10)
    page.wait_for_function(f"{TR}.runState === 'paused'", timeout=60_000)
    page.wait_for_function(f"!{TR}.stageDebug.playing", timeout=60_000)
    time.sleep(1.0)
    f0 = page.evaluate(f"{TR}.frames")
    t0 = time.monotonic()
    time.sleep(3.0)
    idle_fps = (page.evaluate(f"{TR}.frames") - f0) / (time.monotonic() - t0)
    draw_calls = max(page.evaluate("window.__calls"), page.evaluate(f"{TR}.drawCalls") or 0)
    httpx.post(control, json={"type": "control", "action": "resume"}, timeout=10)
    ctx.close()
    return {
        "first_frame_ms": first_frame_ms,
        "draw_calls": draw_calls,
        "idle_fps": idle_fps,
        "requests": len(finished),
        "wire_bytes": wire,
        "decoded_bytes": decoded,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--size", default="1280x720", help="viewport, WIDTHxHEIGHT")
    opts = ap.parse_args()
    size = tuple(int(v) for v in opts.size.split("x"))
    from playwright.sync_api import sync_playwright

    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=opts.chromium, headless=True, args=ARGS)
        proc, url = start_server(Path(tmp) / "run")
        try:
            measure(browser, url, None, size)  # the first visit waits for the worker to start
            for gpus in PRESETS:
                rows.append((gpus, measure(browser, url, gpus, size)))
        finally:
            proc.terminate()
            proc.wait(30)
            browser.close()

    print(f"viewport {size[0]}x{size[1]}, headless Chromium, SwiftShader")
    head = f"{'scale':>14} {'first load':>12} {'decoded':>10} {'requests':>9}"
    print(head + f" {'first frame':>12} {'draw calls':>11} {'idle frames/s':>14}")
    ok = True
    for gpus, r in rows:
        label = "live scene" if gpus is None else f"{gpus:,} GPUs"
        print(
            f"{label:>14} {r['wire_bytes'] / 1000:>9.0f} KB {r['decoded_bytes'] / 1000:>7.0f} KB"
            f" {r['requests']:>9d} {r['first_frame_ms']:>9.0f} ms {r['draw_calls']:>11d}"
            f" {r['idle_fps']:>14.2f}"
        )
        ok &= r["wire_bytes"] <= 400_000 and r["draw_calls"] <= 60 and r["idle_fps"] < 0.5
    print("targets (<= 400 KB, <= 60 draw calls, idle loop):", "met" if ok else "MISSED")
    slow = [g for g, r in rows if r["first_frame_ms"] > 1500]
    if slow:
        print("first frame over 1.5 s here for:", ", ".join(str(g or "live") for g in slow))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
