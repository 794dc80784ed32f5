"""The ring lab is the engine's ring all-reduce, made readable: check it says what it did."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.collectives import ring_allreduce
from app.labs.ringlab import MAX_GPUS, MIN_GPUS, run_ring_lab


@pytest.mark.parametrize("g", [2, 3, 6, 16])
def test_passes_and_phases(g: int) -> None:
    lab = run_ring_lab(g, seed=3)
    assert len(lab.passes) == 2 * (g - 1)
    assert [p.index for p in lab.passes] == list(range(1, 2 * g - 1))
    assert [p.phase for p in lab.passes] == ["reduce_scatter"] * (g - 1) + ["all_gather"] * (g - 1)
    for p in lab.passes:
        # Each GPU sends exactly one chunk to its right-hand neighbour in every pass.
        assert sorted(s.src for s in p.sends) == list(range(g))
        assert all(s.dst == (s.src + 1) % g for s in p.sends)


@pytest.mark.parametrize("g", [2, 5, 6, 12])
def test_reduce_scatter_leaves_one_complete_sum_per_gpu(g: int) -> None:
    lab = run_ring_lab(g, seed=7)
    totals = np.array(lab.initial).sum(axis=0)
    assert lab.totals == totals.tolist()
    after_rs = np.array(lab.passes[g - 2].values)
    for gpu in range(g):
        complete = [c for c in range(g) if after_rs[gpu, c] == totals[c]]
        assert complete == [lab.owner_chunk[gpu]]
    # Every chunk has exactly one owner.
    assert sorted(lab.owner_chunk) == list(range(g))
    # Coverage counts agree: the owned cell holds all G GPUs' numbers, no other cell does.
    cov = np.array(lab.passes[g - 2].coverage)
    assert (cov == g).sum() == g
    assert all(cov[gpu, lab.owner_chunk[gpu]] == g for gpu in range(g))
    assert (np.array(lab.passes[-1].coverage) == g).all()
    assert np.array(lab.passes[0].coverage).max() == min(2, g)


@pytest.mark.parametrize("g", [2, 6, 16])
def test_all_gather_leaves_every_sum_everywhere(g: int) -> None:
    lab = run_ring_lab(g, seed=11)
    final = np.array(lab.passes[-1].values)
    totals = np.array(lab.initial).sum(axis=0)
    assert (final == totals[None, :]).all()


def test_values_and_link_bytes_match_the_engine_trace() -> None:
    lab = run_ring_lab(6, seed=1)
    result, trace = ring_allreduce(np.array(lab.initial, dtype=np.float32), record_values=True)
    assert lab.totals == [int(v) for v in result[0]]
    for mine, theirs in zip(lab.passes, trace.passes, strict=True):
        assert mine.values == theirs.values.astype(int).tolist()
        assert [(s.src, s.dst, s.chunk, s.bytes) for s in mine.sends] == [
            (s.src, s.dst, s.chunk, s.bytes) for s in theirs.sends
        ]
    assert {(x.src, x.dst): x.bytes for x in lab.per_link_bytes} == trace.bytes_by_link()
    # 2(G-1) chunks of one float32 each on every link; the naive way sends G-1 whole buffers.
    assert lab.ring_busiest_bytes == 2 * 5 * 4
    assert lab.naive_busiest_bytes == 5 * 6 * 4


def test_scaling_curve_ring_stays_flat_naive_grows() -> None:
    lab = run_ring_lab(4)
    pts = lab.scaling
    assert [p.gpus for p in pts] == list(range(MIN_GPUS, MAX_GPUS + 1))
    buf = lab.scaling_buffer_bytes
    assert all(p.ring_busiest_bytes < 2 * buf * 1.001 for p in pts)
    assert [p.naive_busiest_bytes for p in pts] == [(p.gpus - 1) * buf for p in pts]


def test_seed_is_deterministic_and_gpu_range_checked() -> None:
    assert run_ring_lab(5, seed=9).initial == run_ring_lab(5, seed=9).initial
    with pytest.raises(ValueError):
        run_ring_lab(1)
    with pytest.raises(ValueError):
        run_ring_lab(17)
