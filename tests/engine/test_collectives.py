"""Ring all-reduce: correct sums for any ring size and length, and the ring's even link load."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine.cluster import build_topology
from app.engine.collectives import (
    chunk_bounds,
    naive_allreduce_busiest_link_bytes,
    ring_allreduce,
    ring_busiest_link_bytes,
)
from app.engine.config import RunConfig


@settings(max_examples=80, deadline=None)
@given(g=st.integers(1, 32), n=st.integers(0, 200), seed=st.integers(0, 2**16), mean=st.booleans())
def test_ring_allreduce_sums_for_any_size(g, n, seed, mean):
    x = np.random.default_rng(seed).standard_normal((g, n))
    out, trace = ring_allreduce(x, op="mean" if mean else "sum")
    expected = x.sum(axis=0) / (g if mean else 1)
    assert out.shape == (g, n)
    np.testing.assert_allclose(out, np.broadcast_to(expected, (g, n)), rtol=1e-12, atol=1e-12)
    # Every GPU sends exactly one chunk per pass: 2(G-1) chunks in all.
    assert trace.n_passes == 2 * (g - 1)
    sent = [0] * g
    for p in trace.passes:
        assert sorted(s.src for s in p.sends) == list(range(g))
        for s in p.sends:
            sent[s.src] += 1
            assert s.dst == (s.src + 1) % g
    assert sent == [2 * (g - 1)] * g
    # No directed link carries more than the ring's share: 2(G-1) chunks of ceil(n/G).
    share = ring_busiest_link_bytes(g, n, x.dtype.itemsize)
    assert all(b <= share for b in trace.bytes_by_link().values())
    assert trace.bytes_total == sum(s.bytes for p in trace.passes for s in p.sends)
    # The input is left alone.
    np.testing.assert_array_equal(x, np.random.default_rng(seed).standard_normal((g, n)))


def test_phases_and_ownership_after_reduce_scatter():
    g, n = 5, 23
    x = np.arange(g * n, dtype=np.float64).reshape(g, n)
    _, trace = ring_allreduce(x, record_values=True)
    phases = [p.phase for p in trace.passes]
    assert phases == ["reduce_scatter"] * (g - 1) + ["all_gather"] * (g - 1)
    after_rs = trace.passes[g - 2].values
    total = x.sum(axis=0)
    for i, (a, b) in enumerate(chunk_bounds(n, g)):
        owned = (i + 1) % g  # GPU i owns chunk i+1 after reduce-scatter
        a, b = chunk_bounds(n, g)[owned]
        np.testing.assert_array_equal(after_rs[i, a:b], total[a:b])
    np.testing.assert_array_equal(trace.passes[-1].values, np.broadcast_to(total, (g, n)))


def test_trace_names_the_links_of_the_real_topology():
    topo = build_topology(RunConfig())
    x = np.ones((topo.n_gpus, 1000), dtype=np.float32)
    _, trace = ring_allreduce(x, ring=topo.ring, link_kind=topo.link_kind)
    kinds = trace.bytes_by_kind()
    assert set(kinds) == {"nvlink", "leaf", "spine"}
    for p in trace.passes:
        for s in p.sends:
            assert s.link == topo.link_kind(s.src, s.dst)


def test_ring_beats_naive_on_the_busiest_link_as_g_grows():
    n, item = 1_000_000, 4
    for g in (2, 4, 8, 16, 32):
        ring = ring_busiest_link_bytes(g, n, item)
        naive = naive_allreduce_busiest_link_bytes(g, n, item)
        assert ring <= 2 * n * item  # bounded, whatever G is
        if g > 2:
            assert naive > ring
