"""The link to the worker never freezes the run: bad messages, a history that cannot write,
and a broken reader thread are each survived or told, never silent."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from inproc import RecordingHub, options, scripted_worker_main, until

from app.protocol import PauseControl
from app.run.controls import ControlError
from app.run.history import History
from app.run.pipe import WorkerSpec
from app.run.runner import Runner
from app.run.worker_link import WorkerLink, exit_reason, last_line


class FlakyHistory(History):
    """A history whose writes fail while `failing` is set, as on a full disk."""

    def __init__(self, path: Path, error: type[BaseException] = sqlite3.OperationalError) -> None:
        super().__init__(path)
        self.failing = False
        self.error = error

    def add_step(self, *args: Any, **kw: Any) -> None:
        if self.failing:
            raise self.error("database or disk is full")
        super().add_step(*args, **kw)

    def add_event(self, *args: Any, **kw: Any) -> None:
        if self.failing:
            raise self.error("database or disk is full")
        super().add_event(*args, **kw)


def test_the_reader_survives_bad_messages_and_a_failing_callback(tmp_path: Path) -> None:
    got: list[int] = []

    def on_step(msg: Any) -> None:
        got.append(msg.figures.step)
        if msg.figures.step == 1:
            raise RuntimeError("the step could not be taken")

    async def go() -> WorkerLink:
        link = WorkerLink(on_step=on_step, on_gone=lambda: None, target=scripted_worker_main)
        spec = WorkerSpec(config={}, run_dir=str(tmp_path), fresh=False, run_id="run-a")
        await link.start(spec)
        await until(lambda: len(got) == 3, 20, "three steps")
        assert link.reader_alive and link.alive
        await link.close()
        return link

    asyncio.run(go())
    # Step 1's callback failed, then garbage bytes and a stray object: 2 and 3 still came.
    assert got == [1, 2, 3]


def test_a_step_the_history_cannot_store_is_still_shown_and_told_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="trainingrun.runner")
    history = FlakyHistory(tmp_path / "runs.sqlite")

    async def go() -> tuple[Runner, RecordingHub, list[str]]:
        hub = RecordingHub()
        runner = Runner(options(tmp_path / "run"), hub, history)
        await runner.start()
        try:
            await until(lambda: len(hub.steps()) >= 3, 60, "first steps")
            assert runner.problem() is None
            history.failing = True
            seen = len(hub.steps())
            await until(lambda: len(hub.steps()) >= seen + 6, 30, "steps while failing")
            problems = [runner.problem() or ""]
            history.failing = False
            failed_until = len(hub.steps())
            await until(lambda: len(hub.steps()) >= failed_until + 3, 30, "steps after")
            problems.append(str(runner.problem()))
        finally:
            await runner.stop()
        return runner, hub, problems

    runner, hub, problems = asyncio.run(go())
    [told] = hub.events("record_failed")
    assert "database or disk is full" in told["detail"]["reason"]
    assert told["message"].endswith("The run goes on")
    assert "not being recorded" in problems[0] and problems[1] == "None"
    assert len([r for r in caplog.records if "could not record step" in r.getMessage()]) == 1
    # Steps kept coming, one seq each; those after the disk came back are on record again.
    seqs = [s["seq"] for s in hub.steps()]
    assert seqs == sorted(set(seqs))
    recorded = {row["seq"] for row in history.steps(runner.view.run_id)}
    assert seqs[-1] in recorded and not set(seqs) <= recorded
    history.close()


def test_a_step_with_a_loss_that_is_not_a_number_is_refused_in_one_line(tmp_path: Path) -> None:
    history = History(tmp_path / "runs.sqlite")
    figures = {"step": 5, "epoch": 0, "loss": math.nan, "grad_norm": math.inf, "lr": 0.1}
    figures |= {"tokens_total": 10, "sim_step_s": 0.1, "wall_step_s": 0.1}
    with pytest.raises(ValueError, match=r"step 5 .*not finite \(loss nan, grad_norm inf\)"):
        history.add_step(1, "run-a", figures, [])
    assert history.steps("run-a") == []
    history.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_dead_reader_thread_shows_in_health_and_fails_fast(tmp_path: Path) -> None:
    # SystemExit is not an Exception: nothing in the reader may swallow it, so the thread ends.
    history = FlakyHistory(tmp_path / "runs.sqlite", error=SystemExit)

    async def go() -> tuple[str | None, ControlError, float]:
        hub = RecordingHub()
        runner = Runner(options(tmp_path / "run"), hub, history)
        await runner.start()
        await until(lambda: hub.steps(), 60, "a step")
        history.failing = True
        problem = await until(runner.problem, 20, "a problem")
        with pytest.raises(ControlError) as refused:
            await asyncio.wait_for(runner.control(PauseControl(action="pause")), 10)
        t0 = time.monotonic()
        await runner.stop()
        return problem, refused.value, time.monotonic() - t0

    problem, refused, stop_s = asyncio.run(go())
    assert problem == "the thread that reads from the training worker has stopped"
    assert refused.code == "unavailable" and refused.status == 503
    assert stop_s < 20  # the worker is still told to close; nothing waits for an answer
    history.close()


def test_why_a_worker_stopped_is_one_line() -> None:
    tb = (
        'Traceback (most recent call last):\n  File "app/worker.py", line 1, in <module>\n'
        "app.engine.trainer.RunDirError: run dir /tmp/a.b/run is not a folder\n"
    )
    assert last_line(tb) == "RunDirError: run dir /tmp/a.b/run is not a folder"
    assert last_line("OSError: " + "x" * 1000).endswith("...")
    assert len(last_line("OSError: " + "x" * 1000)) == 300
    assert exit_reason(-9) == "the training worker was killed by SIGKILL"
    assert exit_reason(1) == "the training worker exited with code 1"


def test_a_killed_worker_is_named_before_its_reader_has_seen_it_go() -> None:
    """Health may ask between the worker's death and its reader noticing: the reason comes
    from the process's exit then, not a vague 'not running'."""
    import multiprocessing as mp
    import signal as sig

    proc = mp.get_context("spawn").Process(target=time.sleep, args=(60,))
    proc.start()
    os.kill(proc.pid, sig.SIGKILL)
    proc.join(10)
    link = WorkerLink(on_step=print, on_gone=print, on_diverged=print)
    link._proc = proc  # the reader never ran: last_failure is still empty
    assert link.last_failure == "" and not link.alive
    assert link.down_reason() == "the training worker was killed by SIGKILL"


def test_a_killed_worker_is_named_while_its_reader_hands_the_news_over() -> None:
    """The reader has seen the pipe close and the exit, and has ended, but the event loop has
    not taken the news in yet, and the process may not look dead to a second waiter: health
    still names the death, not the reader."""
    import multiprocessing as mp

    proc = mp.get_context("spawn").Process(target=time.sleep, args=(60,))
    proc.start()
    try:
        link = WorkerLink(on_step=print, on_gone=print, on_diverged=print)
        conn = object()
        link._proc, link._conn = proc, conn  # type: ignore[assignment]
        assert link.alive and not link.reader_alive and link.last_failure == ""
        assert link.down_reason() == "the thread that reads from the training worker has stopped"
        link._ended = (conn, "the training worker was killed by SIGKILL")  # type: ignore[assignment]
        assert link.down_reason() == "the training worker was killed by SIGKILL"
        link._conn = object()  # type: ignore[assignment]  # a worker since replaced
        assert link.down_reason() == "the thread that reads from the training worker has stopped"
    finally:
        proc.kill()
        proc.join(10)
