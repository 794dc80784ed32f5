"""The timing model: stated presets, 6 x params x tokens compute, and the ring's real links."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.cluster import build_topology
from app.engine.collectives import ring_allreduce
from app.engine.config import RunConfig
from app.engine.timing import PRESETS, get_preset, preset_info, ring_time, step_cost


def test_presets_name_their_sources():
    for p in PRESETS.values():
        assert p.sources and p.flops > 0 and 0 < p.mfu < 1
    assert get_preset("h100").gpus_per_server == 8
    assert preset_info("h100")["network_gbps"] == 50.0
    with pytest.raises(ValueError, match="unknown hardware preset"):
        get_preset("tpu")


def test_compute_is_six_n_t_at_stated_utilisation():
    p = get_preset("h100")
    c = step_cost(
        p, n_params=10**9, tokens_per_gpu=4096, batch_bytes_per_gpu=0, itemsize=2, trace=None
    )
    total = c.forward + c.backward
    assert total == pytest.approx(6 * 1e9 * 4096 / (p.flops * p.mfu))
    assert c.backward == pytest.approx(2 * c.forward)


def test_allreduce_time_follows_the_slowest_link_each_pass():
    topo = build_topology(RunConfig())
    g = topo.n_gpus
    x = np.zeros((g, 10_000_000 // 4), dtype=np.float32)
    _, trace = ring_allreduce(x, ring=topo.ring, link_kind=topo.link_kind)
    p = get_preset("h100")
    t = ring_time(p, trace)
    chunk = trace.passes[0].sends[0].bytes
    # Network hops are the slow ones: each pass waits for a spine hop.
    per_pass = chunk / p.network_bytes_per_s + p.latency_s["spine"]
    assert t == pytest.approx(2 * (g - 1) * per_pass, rel=1e-3)
    # A faster network makes the same ring quicker.
    assert ring_time(get_preset("a100"), trace) > t
