"""The tensor-parallel join: a real ring all-reduce run for many groups at once, and its
pass times by the same rule as the data-parallel ring's."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.collectives import ring_allreduce, ring_allreduce_groups_
from app.engine.timing import get_preset, ring_pass_times, ring_seconds_by_pass


@pytest.mark.parametrize(("g", "k", "n"), [(2, 3, 10), (4, 2, 9), (3, 5, 1), (8, 1, 64)])
def test_every_member_of_every_group_ends_with_the_same_sum(g: int, k: int, n: int) -> None:
    rng = np.random.default_rng(g * 100 + n)
    a = rng.standard_normal((g, k, n))
    want = a.sum(axis=0)
    work = a.copy()
    chunks = ring_allreduce_groups_(work)
    assert sum(chunks) == n and len(chunks) == g
    for i in range(g):
        np.testing.assert_allclose(work[i], want, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(work[i], work[0])  # the same bits everywhere
    # Group by group, the same numbers as the one-ring collective gives.
    for j in range(k):
        ref, _ = ring_allreduce(a[:, j, :])
        np.testing.assert_array_equal(work[:, j, :], ref)


def test_a_group_of_one_is_left_alone() -> None:
    a = np.arange(6.0).reshape(1, 2, 3)
    assert ring_allreduce_groups_(a) == [3]
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(1, 2, 3))


def test_pass_times_follow_the_data_parallel_rule() -> None:
    preset = get_preset("h100")
    links = ["nvlink", "leaf", "nvlink", "spine"]
    ring = [0, 1, 2, 3]
    kinds = dict(zip(zip(ring, ring[1:] + ring[:1], strict=True), links, strict=True))
    _, trace = ring_allreduce(
        np.zeros((4, 1001), dtype=np.float32), ring=ring, link_kind=lambda a, b: kinds[(a, b)]
    )
    chunk_bytes = [(hi - lo) * 4 for lo, hi in trace.chunk_bounds]
    ours = ring_seconds_by_pass(preset, links, chunk_bytes)
    assert ours == pytest.approx(list(ring_pass_times(preset, trace)), rel=1e-12)
    assert ring_seconds_by_pass(preset, ["nvlink"], [8]) == []
