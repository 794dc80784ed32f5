"""Shared fixtures: `live_server` starts the real app (uvicorn + training worker) on a free
loopback port in a subprocess and hands back its URLs; any test folder can use it.

    def test_x(live_server):
        srv = live_server("--speed", "max")          # extra `trainingrun serve` options
        httpx.get(srv.url + "/api/run")
        srv.stop()                                  # optional: SIGINT, final checkpoint

`live_server_module` is the same factory with module scope, for suites that share one server.
Defaults keep runs small and quick: 8 GPUs on 2 servers, 10 steps/s, no resting.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ARGS = ("--gpus", "8", "--servers", "2", "--speed", "10", "--rest-after", "0")
START_TIMEOUT_S = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveServer:
    url: str  # http://127.0.0.1:PORT
    ws_url: str  # ws://127.0.0.1:PORT/ws
    port: int
    run_dir: Path
    args: list[str]
    proc: subprocess.Popen[bytes]
    log_path: Path
    stopped: bool = field(default=False)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 60.0) -> int:
        """Ctrl+C: the server stops its worker after a final checkpoint."""
        if not self.stopped:
            self.stopped = True
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def kill(self) -> None:
        """A crash: SIGKILL the server and its worker, no chance to save anything."""
        self.stopped = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)


def _starter(base: Path, started: list[LiveServer]) -> Callable[..., LiveServer]:
    def start(
        *args: str, run_dir: Path | None = None, env: dict[str, str] | None = None
    ) -> LiveServer:
        port = free_port()
        run_dir = run_dir or base / f"run-{len(started)}"
        full = [*DEFAULT_ARGS, "--log-level", "warning", *args]
        full += ["--port", str(port), "--run-dir", str(run_dir)]
        if "--host" not in args:
            full += ["--host", "127.0.0.1"]
        log_path = base / f"server-{len(started)}-{port}.log"
        proc_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", *full],
            cwd=ROOT,
            env=proc_env,
            stdout=log_path.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so kill() takes the worker too
        )
        srv = LiveServer(
            url=f"http://127.0.0.1:{port}",
            ws_url=f"ws://127.0.0.1:{port}/ws",
            port=port,
            run_dir=run_dir,
            args=full,
            proc=proc,
            log_path=log_path,
        )
        started.append(srv)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}:\n{srv.log()}")
            try:
                if httpx.get(srv.url + "/api/health", timeout=2).status_code == 200:
                    return srv
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        srv.kill()
        raise RuntimeError(f"server did not come up in {START_TIMEOUT_S} s:\n{srv.log()}")

    return start


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    started: list[LiveServer] = []
    yield _starter(tmp_path, started)
    for srv in started:
        srv.stop()


@pytest.fixture(scope="module")
def live_server_module(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., LiveServer]]:
    started: list[LiveServer] = []
    yield _starter(tmp_path_factory.mktemp("live"), started)
    for srv in started:
        srv.stop()


WEB_TESTS = ROOT / "tests" / "web"


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects, so the mark counts
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under tests/web/ drives a real browser: marked `browser`, so that
    `pytest -m "not browser"` runs all the others (fast) and `-m browser` only these."""
    for item in items:
        if item.path.is_relative_to(WEB_TESTS):
            item.add_marker(pytest.mark.browser)
