"""Fixtures for attached runs: a real `trainingrun watch` server on a free loopback port (it can
be killed and started again on the same port), and the example DDP job under torchrun."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "ddp_tiny.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


class WatchServer:
    """`python -m app.cli watch` on a fixed loopback port."""

    def __init__(self, run_dir: Path, port: int | None = None) -> None:
        self.run_dir = run_dir
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = run_dir.parent / f"watch-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> WatchServer:
        cmd = [sys.executable, "-m", "app.cli", "watch", "--port", str(self.port)]
        cmd += ["--run-dir", str(self.run_dir), "--log-level", "warning"]
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"watch server exited:\n{self.log_path.read_text()[-2000:]}")
            try:
                get_json(self.url + "/api/health", 1.0)
                return self
            except OSError:
                time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"watch server did not come up:\n{self.log_path.read_text()[-2000:]}")

    def kill(self) -> None:
        """A crash: SIGKILL, no chance to say goodbye to the ranks."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def status(self) -> dict[str, Any]:
        return get_json(self.url + "/api/attach")


@pytest.fixture
def watch_server(tmp_path: Path) -> Iterator[WatchServer]:
    srv = WatchServer(tmp_path / "watch")
    srv.start()
    try:
        yield srv
    finally:
        srv.kill()


def start_job(
    url: str | None,
    *,
    ranks: int = 4,
    steps: int = 100_000,
    max_seconds: float = 0.0,
    step_log: Path | None = None,
    out: Path,
) -> subprocess.Popen[bytes]:
    """The example under torchrun: `ranks` CPU ranks over gloo, on a master port of its own."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks)]
    cmd += ["--master-addr", "127.0.0.1", "--master-port", str(free_port())]
    cmd += [str(EXAMPLE), "--steps", str(steps), "--max-seconds", str(max_seconds)]
    if url:
        cmd += ["--report", url]
    if step_log:
        cmd += ["--step-log", str(step_log)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=out.open("wb"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip


def stop_job(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def wait_for(pred: Any, timeout: float, what: str, every: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = pred()
        except OSError:
            last = None
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def step_rows(path: Path) -> list[dict[str, Any]]:
    """Every step rank 0 finished: step, t (seconds since the job started) and reporter_s
    (what reporting had cost the process so far, in seconds)."""
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line being written
    return out


def step_log(path: Path) -> list[tuple[int, float]]:
    """(step, seconds since the job started) for every step rank 0 finished."""
    return [(row["step"], row["t"]) for row in step_rows(path)]
