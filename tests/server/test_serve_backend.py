"""`trainingrun serve --backend torch --device cuda|cpu`: the served run computes with torch
(falling back to the CPU, and saying so, without CUDA) and shows the same numbers."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
from extras import need

torch = need("torch", "torch")

ROOT = Path(__file__).resolve().parents[2]
ARGS = ("--speed", "max", "--checkpoint-every", "0")


def recorded(srv, steps: int) -> list[float]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        page = httpx.get(f"{srv.url}/api/steps", params={"from": 1, "to": steps}, timeout=10)
        rows = page.json()["steps"]
        if len(rows) >= steps:
            return [r["loss"] for r in rows[:steps]]
        time.sleep(0.3)
    raise AssertionError(f"fewer than {steps} steps recorded:\n{srv.log()}")


def test_served_torch_run_matches_numpy(live_server) -> None:
    ours = live_server(*ARGS, "--backend", "torch", "--device", "cuda")
    ref = live_server(*ARGS)
    got, want = recorded(ours, 5), recorded(ref, 5)
    for a, b in zip(got, want, strict=True):
        assert abs(a - b) <= 1e-4 * abs(b)
    log = ours.log()
    if torch.cuda.is_available():
        assert "computes with torch on cuda" in log
    else:
        assert "--device cuda: CUDA is not available here" in log
        assert "the model computes with torch on cpu" in log
    assert "computes with" not in ref.log()


def test_numpy_on_cuda_is_refused_by_serve(tmp_path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--device", "cuda", "--run-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "--device cuda: the numpy backend runs on the CPU; add --backend torch" in proc.stderr
