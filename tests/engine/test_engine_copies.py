"""The step engines' one interface for what each data-parallel copy holds: `copies` and
`full_params(copy)`, the same for the replicated engine and a planned (sharded) one; and a step
that skips the all-reduce updates each copy with its own gradients (no shortcut that assumes
the rows agree)."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.config import RunConfig
from app.engine.trainer import Trainer

SMALL = {"n_layer": 2, "batch_size": 8, "corpus_stories": 200, "checkpoint_every": 0}


def _step_without_all_reduce(t: Trainer) -> None:
    batch, _take = t.loader.next()
    _, work = t.engine.forward_backward(batch.idx, batch.targets)
    t.engine.update(work, t.lr_at(t.step + 1))
    t.step += 1


def test_a_step_without_the_all_reduce_updates_each_copy_on_its_own(tmp_path) -> None:
    cfg = RunConfig(gpus=2, servers=1, **SMALL)
    fast = Trainer(cfg, tmp_path / "fast", fresh=True)  # the engine's default
    slow = Trainer(cfg, tmp_path / "slow", fresh=True)
    slow.engine.shared_update = False  # every row's update computed on its own
    try:
        for t in (fast, slow):
            _step_without_all_reduce(t)
        assert fast.engine.copies == slow.engine.copies == 2
        a = [fast.engine.full_params(c) for c in range(2)]
        b = [slow.engine.full_params(c) for c in range(2)]
        for name in a[0]:
            for c in range(2):
                assert np.array_equal(a[c][name], b[c][name]), (name, c)
        # The two copies read different text: they are now different models.
        assert any(not np.array_equal(a[0][n], a[1][n]) for n in a[0])
    finally:
        fast.close(final_checkpoint=False)
        slow.close(final_checkpoint=False)


def test_a_planned_run_gives_each_copy_whole(tmp_path) -> None:
    """4 GPUs, experts split 2 ways: two copies, each of two GPUs holding half the experts."""
    cfg = RunConfig(gpus=4, servers=1, experts=4, ep=2, **SMALL)
    t = Trainer(cfg, tmp_path / "run", fresh=True)
    try:
        t.train_step()
        assert t.engine.copies == 2
        first, second = t.engine.full_params(0), t.engine.full_params(1)
        assert set(first) == set(second) == set(t.full_params())
        for name, p in first.items():
            assert p.shape == t.full_params()[name].shape
            assert np.array_equal(p, second[name]), name  # averaged: the copies agree
        with pytest.raises(ValueError, match="copy 2 of 2"):
            t.engine.full_params(2)
    finally:
        t.close(final_checkpoint=False)
