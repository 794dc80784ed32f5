"""The timing model: stated presets, 6 x params x tokens compute, and the ring's real links."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.cluster import build_topology
from app.engine.collectives import ring_allreduce
from app.engine.config import RunConfig
from app.engine.hardware import A100_SXM_80GB, B200_HGX, H100_SXM
from app.engine.timing import PRESETS, get_preset, preset_info, ring_time, step_cost


def test_presets_name_their_sources():
    for p in PRESETS.values():
        assert p.sources and p.flops > 0 and 0 < p.mfu < 1
    assert get_preset("h100").gpus_per_server == 8
    assert preset_info("h100")["network_gbps"] == 50.0
    with pytest.raises(ValueError, match="unknown hardware preset"):
        get_preset("tpu")


def test_presets_take_every_per_gpu_figure_from_a_datasheet():
    assert get_preset("h100").datasheet is H100_SXM
    assert get_preset("a100").datasheet is A100_SXM_80GB
    assert get_preset("b200").datasheet is B200_HGX
    for p in PRESETS.values():
        d = p.datasheet
        assert (p.gpu, p.flops, p.memory_bytes) == (d.label, d.bf16_flops, d.memory_bytes)
        assert p.hbm_bytes_per_s == d.hbm_bytes_per_s
        assert p.nvlink_bytes_per_s == d.nvlink_bytes_per_s and p.power_w == d.power_w
        assert p.sources[0] == d.source and len(p.sources) > 1  # the cluster's own sources too


def test_simulated_b200_has_the_hgx_180_gb():
    # NVIDIA HGX B200: 1.44 TB of HBM3e for 8 GPUs, 180 GB per GPU as the system exposes it.
    p = get_preset("b200")
    assert p.memory_bytes == 180 * 10**9
    assert p.flops == 2.25e15  # 18 PFLOPS dense BF16 / 8
    info = preset_info("b200")
    assert info["memory_bytes"] == 180 * 10**9 and "180 GB" in info["gpu"]


def test_preset_info_keeps_its_wire_shape():
    info = preset_info("h100")
    assert set(info) == {
        "name", "label", "gpu", "gpus_per_server", "flops", "mfu", "memory_bytes",
        "hbm_bytes_per_s", "nvlink_bytes_per_s", "network_bytes_per_s", "pcie_bytes_per_s",
        "storage_bytes_per_s", "latency_s", "power_w", "sources", "assumptions",
        "nvlink_gbps", "network_gbps", "grad_wire_bytes", "kernel_floor_s", "bucket_bytes",
        "first_bucket_bytes", "interruptions_per_gpu_hour",
    }  # fmt: skip
    assert info["gpu"] == "NVIDIA H100 SXM 80 GB"
    assert info["nvlink_gbps"] == 450.0  # NVLink 4: 900 GB/s both directions, 450 one way
    assert info["flops"] == 989e12 and info["power_w"] == 700.0
    assert info["hbm_bytes_per_s"] == 3.35e12
    assert preset_info("a100")["hbm_bytes_per_s"] == 2.039e12  # A100 80GB SXM: 2,039 GB/s


def test_compute_is_six_n_t_at_stated_utilisation():
    p = get_preset("h100")
    c = step_cost(p, n_params=10**9, tokens_per_gpu=4096, batch_bytes_per_gpu=0, n_layer=16)
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
