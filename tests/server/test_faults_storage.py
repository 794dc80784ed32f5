"""Storage under the run record failing is an event and a health problem, never a crash: the
record is held exclusively (no mmapped -shm file to SIGBUS on), writes storage refuses are
held and written once it works again, and a second server on the same run dir is refused."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from inproc import RecordingHub, options, until
from wsclient import Client

from app.protocol import PauseControl
from app.run import runner as runner_module
from app.run.history import History
from app.run.runner import Runner

ROOT = Path(__file__).resolve().parents[2]


class FailingStorage:
    """The record's connection, with writes failing as a broken disk fails them while
    `failing` is set (reads still work: the pages are cached or readable)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.failing = False
        self.refused = 0

    def execute(self, sql: str, *args: Any) -> Any:
        if self.failing and sql.split(None, 1)[0].upper() in ("BEGIN", "INSERT", "UPDATE"):
            self.refused += 1
            raise sqlite3.OperationalError("disk I/O error")
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)

    def __enter__(self) -> FailingStorage:
        self.db.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self.db.__exit__(*exc)


def test_a_record_that_cannot_be_written_costs_no_step_and_catches_up(tmp_path: Path) -> None:
    history = History(tmp_path / "runs.sqlite")
    storage = FailingStorage(history._db)
    history._db = storage  # type: ignore[assignment]

    async def go() -> tuple[Runner, RecordingHub, list[str | None]]:
        hub = RecordingHub()
        runner = Runner(options(tmp_path / "run"), hub, history)
        await runner.start()
        try:
            await until(lambda: len(hub.steps()) >= 3, 60, "first steps")
            problems = [runner.problem()]
            storage.failing = True
            seen = len(hub.steps())
            await until(lambda: len(hub.steps()) >= seen + 6, 30, "steps while failing")
            problems.append(runner.problem())
            storage.failing = False
            back = len(hub.steps())
            await until(lambda: len(hub.steps()) >= back + 3, 30, "steps after")
            problems.append(runner.problem())
        finally:
            await runner.stop()
        return runner, hub, problems

    runner, hub, problems = asyncio.run(go())
    # Every step shown is on record, the ones trained while the disk failed included.
    seqs = [s["seq"] for s in hub.steps()]
    recorded = [row["seq"] for row in history.steps(runner.view.run_id)]
    assert set(seqs) <= set(recorded)
    assert recorded == list(range(recorded[0], recorded[0] + len(recorded)))
    assert problems[0] is None and problems[2] is None, problems
    assert problems[1] is not None
    assert problems[1].startswith("the run record cannot be written: disk I/O error"), problems
    assert storage.refused >= 6
    [told] = hub.events("record_failed")  # once for the whole spell
    assert "disk I/O error" in told["detail"]["reason"]
    assert history.write_problem is None and history.dropped == 0
    history.close()


def test_a_paused_run_is_well_again_once_storage_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing new is written while the run is paused: the held writes are tried again on
    their own, and health is ok again without a step."""
    monkeypatch.setattr(runner_module, "RECORD_RETRY_S", 0.2)
    history = History(tmp_path / "runs.sqlite")
    storage = FailingStorage(history._db)
    history._db = storage  # type: ignore[assignment]

    async def go() -> tuple[list[str | None], int, int]:
        hub = RecordingHub()
        runner = Runner(options(tmp_path / "run"), hub, history)
        await runner.start()
        try:
            await until(lambda: len(hub.steps()) >= 2, 60, "first steps")
            storage.failing = True
            seen = len(hub.steps())
            await until(lambda: len(hub.steps()) >= seen + 2, 30, "steps while failing")
            await runner.control(PauseControl(action="pause"))
            problems = [runner.problem()]
            steps_paused = len(hub.steps())
            storage.failing = False
            await until(lambda: runner.problem() is None, 10, "health ok again while paused")
            problems.append(runner.problem())
            return problems, steps_paused, len(hub.steps())
        finally:
            await runner.stop()

    problems, paused_at, after = asyncio.run(go())
    assert problems[0] is not None and problems[0].startswith("the run record cannot be written")
    assert problems[1] is None and after == paused_at  # well again with no step taken
    assert history.write_problem is None
    history.close()


def test_no_shm_file_while_viewers_watch(live_server, tmp_path: Path) -> None:
    srv = live_server("--speed", "max", run_dir=tmp_path / "run")

    async def watch() -> None:
        c = await Client.connect(srv.ws_url)
        try:
            await c.until("snapshot")
            for _ in range(10):
                await c.until("step")
        finally:
            await c.close()

    asyncio.run(watch())
    # A read through the REST API as well: nothing a viewer does maps shared memory.
    assert httpx.get(srv.url + "/api/steps", params={"limit": 5}, timeout=5).json()["steps"]
    files = sorted(p.name for p in srv.run_dir.iterdir() if p.name.startswith("runs.sqlite"))
    assert "runs.sqlite" in files and "runs.sqlite-shm" not in files, files
    assert srv.stop() == 0


def test_a_second_server_on_the_same_run_dir_is_refused_in_one_line(
    live_server, tmp_path: Path
) -> None:
    first = live_server(run_dir=tmp_path / "run")
    t0 = time.monotonic()
    second = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--run-dir", str(first.run_dir),
         "--port", "0", "--host", "127.0.0.1", "--log-level", "warning"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    took = time.monotonic() - t0
    said = (second.stdout + second.stderr).strip()
    assert second.returncode == 2, said
    assert len(said.splitlines()) == 1 and "Traceback" not in said, said
    assert "is in use by another process" in said and "runs.sqlite" in said, said
    assert took < 30, took
    # The first server never noticed.
    assert httpx.get(first.url + "/api/health", timeout=5).json()["ok"]
