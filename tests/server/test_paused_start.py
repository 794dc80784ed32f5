"""A server started with --paused waits at its step: nothing trains until a viewer steps the
run (one step each) or resumes it; the run's state says paused from the first snapshot."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from inproc import RecordingHub, options, until

from app.protocol import ResumeControl, StepControl
from app.run.history import History
from app.run.runner import Runner
from app.settings import Settings

pytestmark = pytest.mark.timeout(120)


def test_the_setting_reaches_the_runner(tmp_path: Path) -> None:
    assert Settings(run_dir=tmp_path).runner_options().paused is False
    assert Settings(run_dir=tmp_path, paused=True).runner_options().paused is True


def test_a_paused_start_steps_only_when_asked_then_runs_when_resumed(tmp_path: Path) -> None:
    async def go() -> None:
        hub = RecordingHub()
        opts = dataclasses.replace(options(tmp_path / "run", speed="max"), paused=True)
        runner = Runner(opts, hub, History(tmp_path / "runs.sqlite"))
        await runner.start()
        try:
            assert runner.state == "paused" and runner.status().state == "paused"
            assert runner.view.step == 0
            # A single step is allowed only while paused: this one being taken proves it.
            for want in (1, 2):
                await runner.control(StepControl(action="step"))
                await until(lambda w=want: runner.view.step == w, 30, f"step {want}")
                assert runner.state == "paused"
            assert [m["step"] for m in hub.steps()] == [1, 2]
            await runner.control(ResumeControl(action="resume"))
            await until(lambda: runner.view.step >= 5, 30, "steps after resuming")
        finally:
            await runner.stop()

    asyncio.run(go())
