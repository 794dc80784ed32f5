"""The server with a checkpoint that checks out but always diverges (finite weights of 3e37
behind a valid manifest): it marks it bad, falls back to an older one and trains on, telling
viewers; when every checkpoint diverges, health is not ok and says to reset the run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from inproc import TINY, RecordingHub, options, until

from app.engine.checkpoint import CheckpointStore
from app.protocol import PauseControl, ResetControl, ResumeControl, server_message_adapter
from app.run.history import History
from app.run.runner import Runner

pytestmark = pytest.mark.timeout(180)

CONFIG = TINY.with_(checkpoint_every=2, keep_checkpoints=3)


def poison(run_dir: Path, steps: list[int]) -> None:
    store = CheckpointStore(run_dir / "checkpoints")
    for step in steps:
        loaded = store.load(store.path_for(step))
        arrays = {
            k: np.full_like(v, 3e37) if k.startswith("p.") else v for k, v in loaded.arrays.items()
        }
        store.save(step, arrays, loaded.meta, config_hash=loaded.manifest["config_hash"])
        assert store.problem(store.path_for(step)) is None


async def train_then_stop(history: History, run_dir: Path, steps: int) -> None:
    """A first server life: train past `steps`, stop cleanly (a final checkpoint)."""
    hub = RecordingHub()
    runner = Runner(options(run_dir, CONFIG), hub, history)
    await runner.start()
    try:
        await until(lambda: runner.view.step >= steps, 60, f"step {steps}")
        await runner.control(PauseControl(action="pause"))
    finally:
        await runner.stop()


def newest_steps(run_dir: Path) -> list[int]:
    return CheckpointStore(run_dir / "checkpoints").steps()


def test_the_server_marks_a_diverging_checkpoint_bad_and_trains_on_from_an_older_one(
    tmp_path: Path,
) -> None:
    history = History(tmp_path / "runs.sqlite")
    run_dir = tmp_path / "run"

    async def go() -> tuple[RecordingHub, dict[str, Any]]:
        await train_then_stop(history, run_dir, 4)
        steps = newest_steps(run_dir)
        poison(run_dir, steps[-1:])
        hub = RecordingHub()
        runner = Runner(options(run_dir, CONFIG), hub, history)
        await runner.start()
        seen: dict[str, Any] = {"newest": steps[-1], "older": steps[-2]}
        try:
            await until(
                lambda: [s for s in hub.steps() if s["step"] > seen["newest"] + 1], 60, "steps on"
            )
            seen["problem"], seen["state"] = runner.problem(), runner.state
        finally:
            await runner.stop()
        return hub, seen

    hub, seen = asyncio.run(go())
    marked = [e for e in hub.events("checkpoint_skipped") if e["detail"].get("marked_bad")]
    assert len(marked) == 1 and marked[0]["detail"]["path"].endswith(f"{seen['newest']:08d}")
    restored = [e for e in hub.events("restored") if e["detail"]["reason"] == "diverged"]
    assert len(restored) == 1 and restored[0]["detail"]["restored_step"] == seen["older"]
    assert restored[0]["message"].startswith(f"Fell back to the checkpoint at step {seen['older']}")
    for e in (*marked, *restored):
        server_message_adapter.validate_python(e)
    assert not hub.events("diverged")  # the viewer saw a fallback, not a stopped run
    assert seen["problem"] is None and seen["state"] == "running"


def test_when_every_checkpoint_diverges_health_says_so_until_a_reset(tmp_path: Path) -> None:
    history = History(tmp_path / "runs.sqlite")
    run_dir = tmp_path / "run"

    async def go() -> tuple[RecordingHub, dict[str, Any]]:
        await train_then_stop(history, run_dir, 4)
        poison(run_dir, newest_steps(run_dir))
        hub = RecordingHub()
        runner = Runner(options(run_dir, CONFIG), hub, history)
        await runner.start()
        seen: dict[str, Any] = {}
        try:
            await until(lambda: hub.events("diverged"), 60, "a diverged event")
            seen["problem"], seen["state"] = runner.problem(), runner.state
            await runner.control(ResumeControl(action="resume"))  # tries again: still stuck
            await until(lambda: len(hub.events("diverged")) >= 2, 30, "a second diverged")
            seen["problem_again"] = runner.problem()
            await runner.control(ResetControl(action="reset"))
            seen["after_reset"] = runner.problem()
        finally:
            await runner.stop()
        return hub, seen

    hub, seen = asyncio.run(go())
    first = hub.events("diverged")[0]
    assert first["detail"]["exhausted"] is True
    assert "no checkpoint is left that trains on" in first["message"]
    assert first["message"].endswith("Paused")  # not "resume to try again": it cannot help
    server_message_adapter.validate_python(first)
    assert seen["state"] == "paused"
    assert seen["problem"] == "no checkpoint is left that trains on; reset the run"
    assert seen["problem_again"] == seen["problem"]
    assert seen["after_reset"] is None
