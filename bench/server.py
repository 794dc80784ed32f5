"""The real server for a benchmark: `trainingrun serve` (or `watch`) on a free loopback port
with a run dir of its own, ready when its health answers, stopped with Ctrl+C (a final
checkpoint) and killed if it does not stop.

    with serving("--speed", "max") as (base, proc):
        httpx.get(base + "/api/run")
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def raise_fd_limit(wanted: int = 8192) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(wanted, hard) if hard != resource.RLIM_INFINITY else wanted
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(
    *args: str, command: str = "serve", ready_s: float = 120.0, run_dir: str | None = None
) -> Iterator[tuple[str, subprocess.Popen]]:
    """(base URL, server process) of a server (`trainingrun serve`, or `watch`) started with
    `args` beyond port and run dir (a temporary one unless `run_dir` is given)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        where = run_dir or tmp
        cmd = [sys.executable, "-m", "app.cli", command, "--port", str(port), "--run-dir", where]
        server = subprocess.Popen([*cmd, *args], cwd=ROOT, start_new_session=True)
        try:
            deadline = time.time() + ready_s
            while time.time() < deadline:
                try:
                    if httpx.get(base + "/api/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.3)
            else:
                raise RuntimeError(f"the server did not answer on {base} in {ready_s:g} s")
            yield base, server
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
