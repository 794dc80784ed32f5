"""The one way tests start a real server: a `trainingrun` command (serve, watch, or the
installed console script) in its own process on a free loopback port, ready once
`/api/health` answers.

    srv = ServerProcess(tmp_path / "run", "--gpus", "8").start(fresh=True)
    srv.url, srv.ws_url, srv.log()
    srv.stop()     # Ctrl+C: the server saves a final checkpoint and stops its worker
    srv.kill()     # a crash: SIGKILL to its whole process group, nothing saved
    srv.start()    # again, on the same port and run dir (a restart, a reconnect)

Every test folder's fixtures build on it (tests/conftest.py, tests/web/conftest.py,
tests/attach/conftest.py), and so do the tests that start one by hand.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 90.0


# Ports handed out below the range the system gives a socket bound to port 0 (32768-60999 on
# Linux): something that binds port 0 meanwhile (a test's own small HTTP server, a client's
# side of a connection) can never take a port before the server that was given it binds it.
_PORTS = random.Random()
PORT_RANGE = (20000, 32000)


def free_port() -> int:
    """A loopback port nobody listens on now, outside the system's port-0 range."""
    for _ in range(500):
        port = _PORTS.randrange(*PORT_RANGE)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken, or still closing
            return port
    raise RuntimeError(f"no free loopback port in {PORT_RANGE}")


async def next_message(ws: Any, kind: str, timeout: float = 90.0) -> dict[str, Any]:
    """The next message of `kind` on an open websocket (others are skipped)."""
    import asyncio

    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"no {kind} within {timeout} s"
        msg = json.loads(await asyncio.wait_for(ws.recv(), left))
        if msg["type"] == kind:
            return msg


def get_json(url: str, timeout: float = 10.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


class ServerProcess:
    """A real server on 127.0.0.1. `command` is what runs it: `serve` (the default) or
    `watch` under this interpreter, or a full argv (an installed `trainingrun`)."""

    def __init__(
        self,
        run_dir: Path,
        *args: str,
        command: str | Sequence[str] = "serve",
        port: int | None = None,
        env: dict[str, str] | None = None,
        log_name: str | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.args = list(args)
        self.argv = (
            [sys.executable, "-m", "app.cli", command] if isinstance(command, str) else [*command]
        )
        self.port = port or free_port()
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        name = log_name or f"{Path(self.argv[-1]).name}-{self.port}"
        self.log_path = self.run_dir.parent / f"{name}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self, *, fresh: bool = False, timeout: float = START_TIMEOUT_S) -> ServerProcess:
        """Start it and wait until it answers; a server that exits or never answers fails
        with the end of its log."""
        cmd = [*self.argv, *self.args, "--port", str(self.port), "--run-dir", str(self.run_dir)]
        if "--host" not in self.args:
            cmd += ["--host", "127.0.0.1"]
        if fresh:
            cmd.append("--fresh")
        self.run_dir.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **(self.env or {}), "PYTHONUNBUFFERED": "1"}
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: kill() takes the worker too
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"server exited with {self.proc.returncode}:\n{self.log()[-3000:]}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/api/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"server did not come up in {timeout:.0f} s:\n{self.log()[-3000:]}")

    def stop(self, timeout: float = 60.0) -> int | None:
        """Ctrl+C and wait: the server stops its worker after a final checkpoint. Its exit
        code (None if it never started); a server already gone is left as it is."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
        return proc.returncode

    def kill(self) -> None:
        """A crash: SIGKILL the server and its worker, no chance to save anything."""
        if self.proc is not None:
            _kill_group(self.proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(10)
