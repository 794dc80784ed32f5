"""A checkpoint that checks out but cannot train on: its weights are finite (3e37) behind a
valid manifest, so every check at load passes, and the first step from it diverges. It is
marked bad with its reason and the next older good one is loaded, within the same step;
when none is left, the run stops saying so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.engine.checkpoint import BAD
from app.engine.config import RunConfig
from app.engine.report import Diverged
from app.engine.trainer import Trainer

pytestmark = pytest.mark.timeout(120)

SMALL = dict(gpus=4, servers=2, batch_size=8, probe_every=0, corpus_stories=300)
CFG = RunConfig(**SMALL, checkpoint_every=2, keep_checkpoints=3)


def poison(t: Trainer, step: int) -> None:
    """Rewrite the checkpoint at `step` with huge finite weights and a manifest that matches."""
    loaded = t.ckpt.load(t.ckpt.path_for(step))
    arrays = {
        k: np.full_like(v, 3e37) if k.startswith("p.") else v for k, v in loaded.arrays.items()
    }
    t.ckpt.save(step, arrays, loaded.meta)
    assert t.ckpt.problem(t.ckpt.path_for(step)) is None  # it checks out


def run_to(steps: int, tmp_path, shared_lake, poisoned: tuple[int, ...] = ()) -> tuple[Path, str]:
    """A fresh run trained to `steps` (a checkpoint every 2), then the checkpoints at
    `poisoned` poisoned: its run dir, and the hash of its weights at `steps`."""
    run_dir = shared_lake(tmp_path / "run", CFG.corpus_stories)
    t = Trainer(CFG, run_dir)
    try:
        for _ in range(steps):
            t.train_step()
        for step in poisoned:
            poison(t, step)
        return run_dir, t.params_sha256()
    finally:
        t.close(final_checkpoint=False)


def test_a_checkpoint_that_diverges_on_resume_is_marked_bad_and_an_older_one_trains_on(
    tmp_path, shared_lake
):
    run_dir, at_6 = run_to(6, tmp_path, shared_lake, poisoned=(6,))  # checkpoints 2, 4, 6
    t = Trainer(CFG, run_dir)
    try:
        assert t.step == 6  # the poisoned one loads: nothing about it looks wrong
        report = t.train_step()
        assert report.step == 5  # step 5 again, from the checkpoint at step 4
        kinds = [e.kind for e in report.events]
        assert kinds == ["checkpoint_skipped", "restored"]
        marked, restored = report.events
        assert marked.detail["marked_bad"] is True
        assert marked.detail["path"].endswith("step-00000006")
        assert "diverged on its first step after loading" in marked.detail["reason"]
        assert restored.detail["reason"] == "diverged"
        assert restored.detail["restored_step"] == 4 and restored.detail["failed_step"] == 7
        assert restored.detail["steps_lost"] == 3
        assert "diverged" in (t.ckpt.path_for(6) / BAD).read_text()
        listing = {c["step"]: c["ok"] for c in t.checkpoints()}
        assert listing[6] is False and listing[4] is True
        t.train_step()  # step 6 again: a good checkpoint replaces the bad one
        assert t.params_sha256() == at_6  # the fallback trains exactly as the run did
        assert {c["step"]: c["ok"] for c in t.checkpoints()}[6] is True
    finally:
        t.close(final_checkpoint=False)
    # A restart does not load the bad one again either way: the new one at 6 is good.
    again = Trainer(CFG, run_dir)
    try:
        assert again.step == 6 and again.params_sha256() == at_6
    finally:
        again.close(final_checkpoint=False)


def test_the_mark_outlives_the_process_and_a_restart_skips_the_bad_checkpoint(
    tmp_path, shared_lake
):
    run_dir, _ = run_to(4, tmp_path, shared_lake, poisoned=(4,))
    t = Trainer(CFG, run_dir)
    try:
        assert t.train_step().step == 3
    finally:
        t.close(final_checkpoint=False)
    again = Trainer(CFG, run_dir)  # as after a kill: the bad one is skipped, with its reason
    try:
        assert again.step == 2
        skipped = [e for e in again.startup_events if e.kind == "checkpoint_skipped"]
        assert len(skipped) == 1 and "marked bad: it diverged" in skipped[0].detail["reason"]
    finally:
        again.close(final_checkpoint=False)


def test_when_every_checkpoint_diverges_the_run_stops_saying_none_is_left(tmp_path, shared_lake):
    run_dir, _ = run_to(4, tmp_path, shared_lake, poisoned=(2, 4))  # all there are
    t = Trainer(CFG, run_dir)
    try:
        with pytest.raises(Diverged) as info:
            t.train_step()
        d = info.value
        assert d.exhausted is True and d.event().detail["exhausted"] is True
        assert "no checkpoint is left that trains on" in d.message
        marked = [e.detail["path"] for e in d.events if e.detail.get("marked_bad")]
        assert [p[-13:] for p in marked] == ["step-00000004", "step-00000002"]
        assert [c["ok"] for c in t.checkpoints()] == [False, False]
        # A retry diverges again, and stops there: nothing is left to fall back to.
        with pytest.raises(Diverged) as again:
            t.train_step()
        assert again.value.exhausted is False and not again.value.events
    finally:
        t.close(final_checkpoint=False)


def test_a_run_that_trained_on_from_its_checkpoint_and_then_diverged_blames_no_checkpoint(
    tmp_path, shared_lake
):
    run_dir, _ = run_to(2, tmp_path, shared_lake)
    t = Trainer(CFG, run_dir)
    try:
        assert t.step == 2
        t.train_step()  # step 3 trains on from the checkpoint at step 2
        t.engine.params["layers.0.mlp.w1"][...] = np.nan
        with pytest.raises(Diverged) as info:
            t.train_step()
        assert info.value.exhausted is False and not info.value.events
        assert all(c["ok"] for c in t.checkpoints())
        assert not (t.ckpt.path_for(2) / BAD).exists()
    finally:
        t.close(final_checkpoint=False)
