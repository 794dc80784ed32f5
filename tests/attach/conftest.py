"""Fixtures for attached runs: a real `trainingrun watch` server on a free loopback port (it can
be killed and started again on the same port), and the example DDP job under torchrun."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import ServerProcess, free_port, get_json

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "ddp_tiny.py"


def rank_info(rank: int, world: int, per_node: int, host: str | None = None) -> dict[str, Any]:
    """What a CPU rank of a gloo job says of itself when it attaches (its host named after its
    node unless given)."""
    return {
        "rank": rank,
        "world_size": world,
        "local_rank": rank % per_node,
        "local_world_size": per_node,
        "node": rank // per_node,
        "host": host or f"node{rank // per_node}",
        "backend": "gloo",
        "device": "cpu",
        "params": 1000,
        "weights_bytes": 4000,
    }


class WatchServer(ServerProcess):
    """`trainingrun watch` on a loopback port: it can be killed and started again on the
    same port, as the ranks report to a fixed address."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(run_dir, "--log-level", "warning", command="watch")

    def status(self) -> dict[str, Any]:
        return get_json(self.url + "/api/attach", 2.0)


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
    stop_file: Path | None = None,
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
    if stop_file:
        cmd += ["--stop-file", str(stop_file)]
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
