"""The runner keeps the run whatever the worker does: a diverging step pauses it openly, a
worker that keeps failing is restarted ever more slowly and viewers hear why, and a new run
never starts from another run's checkpoint."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from inproc import TINY, RecordingHub, options, poisoned_worker_main, until

from app.protocol import ResetControl, ResumeControl, server_message_adapter
from app.run import runner as runner_module
from app.run.history import History, new_run_id
from app.run.runner import Runner, respawn_delay


def test_a_diverging_step_pauses_the_run_and_tells_every_viewer(tmp_path: Path) -> None:
    history = History(tmp_path / "runs.sqlite")

    async def go() -> tuple[Runner, RecordingHub, dict[str, Any]]:
        hub = RecordingHub()
        runner = Runner(options(tmp_path / "run"), hub, history, worker_target=poisoned_worker_main)
        await runner.start()
        seen: dict[str, Any] = {}
        try:
            await until(lambda: hub.events("diverged"), 60, "a diverged event")
            seen["state"], seen["step"] = runner.state, runner.view.step
            seen["problem"] = runner.problem()
            seen["recorded"] = [e["kind"] for e in history.events(runner.view.run_id)]
            seen["steps_before"] = len(hub.steps())
            # Resuming tries the same step again, which diverges again.
            await runner.control(ResumeControl(action="resume"))
            await until(lambda: len(hub.events("diverged")) >= 2, 30, "a second diverged")
            seen["state_again"] = runner.state
            # A reset opens fresh weights: once resumed, the run steps on.
            await runner.control(ResetControl(action="reset"))
            await runner.control(ResumeControl(action="resume"))
            await until(lambda: hub.steps(), 30, "a step after the reset")
        finally:
            await runner.stop()
        return runner, hub, seen

    runner, hub, seen = asyncio.run(go())
    first, again = hub.events("diverged")[:2]
    assert seen["state"] == "paused" and seen["state_again"] == "paused"
    assert seen["steps_before"] == 0 and seen["step"] == 0  # the step was not applied
    assert seen["problem"] is None  # a paused run is not a broken server
    assert "diverged" in seen["recorded"]
    d = first["detail"]
    assert d["step"] == 1 and d["stopped_at"] == 0 and first["step"] == 0
    assert d["loss"] in ("nan", "inf", "-inf") and d["reason"]
    assert isinstance(d["grad_norm"], str | float)
    json.dumps(first, allow_nan=False)  # JSON-safe: no bare NaN
    server_message_adapter.validate_python(first)
    assert "not applied" in first["message"]
    assert first["message"].endswith("Paused: reset, or resume to try the step again")
    assert again["detail"]["step"] == 1
    assert runner.state == "running" and hub.steps()[-1]["loss"] > 0


def test_restarts_back_off(tmp_path: Path) -> None:
    assert [respawn_delay(a) for a in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert respawn_delay(10_000) == 60


def test_a_worker_that_keeps_failing_is_restarted_ever_more_slowly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner_module, "RESPAWN_FIRST_S", 0.3)
    monkeypatch.setattr(runner_module, "WORKED_AFTER_S", 2.0)
    run_dir, away = tmp_path / "run", tmp_path / "away"
    history = History(tmp_path / "runs.sqlite")

    async def go() -> tuple[RecordingHub, dict[str, Any]]:
        hub = RecordingHub()
        runner = Runner(options(run_dir), hub, history)
        await runner.start()
        seen: dict[str, Any] = {}
        try:
            await until(lambda: hub.steps(), 60, "a first step")
            # The folder becomes unusable (as a full or vanished disk would), then the
            # worker dies: every restart fails at start.
            run_dir.rename(away)
            run_dir.write_text("not a folder")
            os.kill(runner.worker_pid, signal.SIGKILL)
            await until(lambda: len(hub.events("worker_failed")) >= 4, 60, "four failures")
            seen["problem"] = runner.problem()
            seen["events"] = [e["kind"] for e in history.events(runner.view.run_id)]
            # The folder comes back: the next try starts the worker, and the run goes on.
            run_dir.unlink()
            away.rename(run_dir)
            await until(lambda: runner.problem() is None, 60, "the worker back")
            pid = runner.worker_pid
            n = len(hub.steps())
            await until(lambda: len(hub.steps()) > n + 3, 30, "steps after the restart")
            # Having worked a while, a new failure starts the pauses over.
            await asyncio.sleep(runner_module.WORKED_AFTER_S + 0.2)
            os.kill(pid, signal.SIGKILL)
            await until(lambda: len(hub.events("worker_failed")) >= 5, 30, "a fifth failure")
            await until(lambda: runner.problem() is None, 60, "the worker back again")
        finally:
            await runner.stop()
        return hub, seen

    t0 = time.monotonic()
    hub, seen = asyncio.run(go())
    timed = hub.timed_events("worker_failed")
    failed = [m["detail"] for _, m in timed]
    assert [f["attempt"] for f in failed] == [1, 2, 3, 4, 1]
    assert [f["retry_in_s"] for f in failed] == [0.3, 0.6, 1.2, 2.4, 0.3]
    times = [t for t, _ in timed[:4]]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    # Each try waits its pause before it starts (and fails): the gaps grow with the pauses.
    assert all(g >= f["retry_in_s"] for g, f in zip(gaps, failed, strict=False)), gaps
    assert gaps[2] > gaps[0] + 0.5, gaps
    assert failed[0]["reason"] == "the training worker was killed by SIGKILL"
    for f in failed[1:4]:  # the last line of the worker's traceback, without module paths
        assert f["reason"].startswith("RunDirError: run dir "), f["reason"]
        assert str(run_dir) in f["reason"] and "\n" not in f["reason"], f["reason"]
    assert "restart" in seen["problem"] and str(run_dir) in seen["problem"]
    assert seen["events"].count("worker_failed") >= 4  # recorded, not only sent
    assert time.monotonic() - t0 < 120


def test_a_new_run_never_starts_from_another_runs_checkpoint(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    config = TINY.with_(checkpoint_every=2)
    history = History(tmp_path / "runs.sqlite")

    async def old_run() -> int:
        hub = RecordingHub()
        runner = Runner(options(run_dir, config), hub, history)
        await runner.start()
        await until(lambda: len(hub.steps()) >= 5, 60, "steps of the old run")
        await runner.stop()  # a final checkpoint, beyond the periodic ones
        return runner.view.step

    async def new_run() -> Runner:
        # Paused: the step it opens at is where it resumed, with no step of its own after it
        # (a running one could make step 1 before it is stopped on a busy machine).
        paused = dataclasses.replace(options(run_dir, config), paused=True)
        runner = Runner(paused, RecordingHub(), history)
        await runner.start()
        await runner.stop()
        return runner

    old_step = asyncio.run(old_run())
    assert old_step >= 5 and list((run_dir / "checkpoints").iterdir())
    # A reset records the new run first, then asks the worker: a crash in between leaves the
    # new run current over the old run's checkpoints.
    new_id = new_run_id()
    history.start_run(new_id, config.to_dict())
    runner = asyncio.run(new_run())
    assert runner.view.run_id == new_id
    assert runner.view.step == 0 and runner.status().step == 0
    history.close()
