"""What the server keeps in memory stays bounded however long the run, and a bad run folder
is one line, not a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.run import view as run_view
from app.run.history import History
from app.run.pipe import RunInfo, StepFigures, StepReady
from app.run.rundir import check_run_dir
from app.run.view import HISTORY_POINTS, POINTS_KEPT, LossPoints, RunView

FIGURES = dict(epoch=0, grad_norm=1.0, lr=0.01, tokens_total=0, sim_step_s=0.1, wall_step_s=0.01)


def info(run_id: str = "run-a") -> RunInfo:
    return RunInfo(
        run_id=run_id,
        config={},
        topology={},
        preset={},
        n_params=0,
        vocab_size=0,
        step=0,
        restarts=0,
        startup_events=[],
        checkpoints=[],
    )


def step_msg(step: int, loss: float) -> StepReady:
    figures = StepFigures(step=step, loss=loss, restarts=0, **FIGURES)  # type: ignore[arg-type]
    return StepReady(run_id="run-a", body="{}", figures=figures, trace=b"")


def test_a_long_run_keeps_a_bounded_history_spanning_all_of_it(tmp_path: Path) -> None:
    history = History(tmp_path / "runs.sqlite")
    view = RunView(history)
    view.adopt(info(), reset=True)
    n, rollback_at, redo = 200_000, 150_000, 5_000
    step = 0
    for seq in range(1, n + 1):
        # A rollback: 5000 steps are trained again, so the steps go down once.
        step = step - redo + 1 if seq == rollback_at else step + 1
        view.take_step(seq, step_msg(step, 10.0 - seq / n), "{}")
        assert len(view.points) <= POINTS_KEPT
    points = view.points.to_list()
    assert points[0] == (1, 1, 10.0 - 1 / n)
    assert points[-1][0] == n and points[-1][1] == step
    seqs = [p[0] for p in points]
    assert seqs == sorted(set(seqs))
    # Evenly spread: no stretch of the run is missing.
    assert max(b - a for a, b in zip(seqs, seqs[1:], strict=False)) <= 2 * n / POINTS_KEPT
    shown = view._history()
    assert len(shown) == HISTORY_POINTS
    assert shown[0].seq == 1 and shown[-1].seq == n and shown[-1].step == step
    steps = [p.step for p in shown]
    assert any(b < a for a, b in zip(steps, steps[1:], strict=False))  # the rollback shows
    history.close()


def test_loss_points_thin_evenly_and_keep_the_latest() -> None:
    pts = LossPoints(cap=10)
    for i in range(1, 1001):
        pts.append((i, i, 1.0))
        assert len(pts) <= 10
        assert pts.last() == (i, i, 1.0) and next(iter(pts))[0] == 1
    seqs = [p[0] for p in pts]
    gaps = {b - a for a, b in zip(seqs[:-1], seqs[1:-1], strict=False)}
    assert len(gaps) == 1  # one stride between the kept points


def test_a_long_stored_run_is_read_back_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_view, "POINTS_KEPT", 50)
    history = History(tmp_path / "runs.sqlite")
    history.start_run("run-a", {})
    for seq in range(1, 1001):
        figures = dict(FIGURES, step=seq, loss=1.0)
        history.add_step(seq, "run-a", figures, [])
    assert len(list(history.each_loss_point("run-a", batch=64))) == 1000
    view = RunView(history)
    view.adopt(info(), reset=False)
    assert len(view.points) <= 50
    assert view.points.to_list()[0][0] == 1 and view.points.last()[0] == 1000
    history.close()


def test_the_other_growing_things_are_bounded(tmp_path: Path) -> None:
    history = History(tmp_path / "runs.sqlite")
    view = RunView(history)
    view.adopt(info(), reset=True)
    for seq in range(1, 2001):
        msg = step_msg(seq, 1.0)
        ev = [run_view.EventMsg(kind="epoch_started", step=seq, message="e", detail={})]
        view.take_step(seq, StepReady(msg.run_id, msg.body, msg.figures, msg.trace, ev), "{}")
    assert len(view.events) == run_view.RECENT_EVENTS
    history.close()


# --- the run folder ---------------------------------------------------------------------


def test_a_usable_run_dir_has_no_problem(tmp_path: Path) -> None:
    assert check_run_dir(tmp_path) is None
    assert check_run_dir(tmp_path / "new" / "deeper") is None
    assert not (tmp_path / "new").exists()  # checking creates nothing
    assert list(tmp_path.iterdir()) == []


def test_a_run_dir_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "run"
    f.write_text("x")
    assert check_run_dir(f) == f"run dir {f} is a file, not a folder"


def test_a_run_dir_under_a_file_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    problem = check_run_dir(f / "a" / "run")
    assert problem == f"cannot create run dir {f / 'a' / 'run'}: {f} is a file, not a folder"


@pytest.mark.skipif(os.geteuid() == 0, reason="permissions do not stop root")
def test_a_read_only_run_dir_is_one_line(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        problem = check_run_dir(ro)
        assert problem is not None and problem.startswith(f"run dir {ro} is not writable")
        problem = check_run_dir(ro / "run")
        assert problem is not None and "is not writable" in problem and "\n" not in problem
    finally:
        ro.chmod(0o700)
