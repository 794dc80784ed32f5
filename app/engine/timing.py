"""What a step would cost on real hardware: named presets and a simple, stated timing model.

Compute: training costs about 6 x parameters x tokens FLOPs (2 forward, 4 backward), run at
the preset's dense BF16 peak times an assumed utilisation (MFU). All-reduce: the ring's real
trace, pass by pass; in a pass every GPU sends one chunk at once, so the pass takes as long as
its slowest hop (bytes / link bandwidth + per-hop latency). Optimiser: a memory-bound sweep
over weights, gradients and Adam state at HBM bandwidth. Checkpoint: bytes written at the
assumed storage bandwidth. Data: the batch copied host -> GPU over PCIe.

Figures are from public datasheets (named per preset in `sources`); utilisation, latencies
and storage bandwidth are assumptions, labelled as such.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .collectives import RingTrace


@dataclass(frozen=True)
class HardwarePreset:
    name: str
    label: str
    gpu: str
    gpus_per_server: int
    flops: float  # dense BF16 peak FLOP/s per GPU
    mfu: float  # assumed model FLOPs utilisation
    memory_bytes: int  # HBM per GPU
    hbm_bytes_per_s: float
    nvlink_bytes_per_s: float  # per GPU, one direction
    network_bytes_per_s: float  # per GPU NIC, one direction
    pcie_bytes_per_s: float
    storage_bytes_per_s: float  # checkpoint writes, per server (assumption)
    latency_s: dict[str, float]  # per hop, by link kind (assumption)
    power_w: float  # GPU board power
    sources: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    def link_bandwidth(self, kind: str) -> float:
        return self.nvlink_bytes_per_s if kind == "nvlink" else self.network_bytes_per_s


_ASSUMPTIONS = [
    "Utilisation (MFU) is an assumption: large runs report roughly 35-45%.",
    "Per-hop latency is an assumption: ~2 us over NVLink, ~5 us via a leaf switch, "
    "~7 us via a spine.",
    "Checkpoint storage bandwidth is an assumption per server.",
]

PRESETS: dict[str, HardwarePreset] = {
    "h100": HardwarePreset(
        name="h100",
        label="H100-class cluster (8x H100 SXM per server, 400 Gb/s per GPU)",
        gpu="NVIDIA H100 SXM 80 GB",
        gpus_per_server=8,
        flops=989e12,  # H100 SXM dense BF16 Tensor Core
        mfu=0.40,
        memory_bytes=80 * 10**9,
        hbm_bytes_per_s=3.35e12,
        nvlink_bytes_per_s=450e9,  # NVLink 4: 900 GB/s bidirectional per GPU
        network_bytes_per_s=50e9,  # ConnectX-7 NDR InfiniBand, 400 Gb/s per GPU
        pcie_bytes_per_s=64e9,  # PCIe Gen5 x16
        storage_bytes_per_s=10e9,
        latency_s={"nvlink": 2e-6, "leaf": 5e-6, "spine": 7e-6},
        power_w=700.0,
        sources=[
            "NVIDIA H100 Tensor Core GPU datasheet (SXM: 989 TFLOPS BF16 dense, 80 GB HBM3 "
            "at 3.35 TB/s, NVLink 900 GB/s, up to 700 W)",
            "NVIDIA ConnectX-7 / Quantum-2 NDR InfiniBand: 400 Gb/s per port",
            "NVIDIA DGX H100 user guide: 8 GPUs per system, one 400 Gb/s NIC per GPU",
        ],
        assumptions=_ASSUMPTIONS,
    ),
    "a100": HardwarePreset(
        name="a100",
        label="A100-class cluster (8x A100 SXM 80 GB per server, 200 Gb/s per GPU)",
        gpu="NVIDIA A100 SXM 80 GB",
        gpus_per_server=8,
        flops=312e12,  # A100 dense BF16 Tensor Core
        mfu=0.40,
        memory_bytes=80 * 10**9,
        hbm_bytes_per_s=2.04e12,
        nvlink_bytes_per_s=300e9,  # NVLink 3: 600 GB/s bidirectional per GPU
        network_bytes_per_s=25e9,  # HDR InfiniBand, 200 Gb/s per GPU
        pcie_bytes_per_s=32e9,  # PCIe Gen4 x16
        storage_bytes_per_s=5e9,
        latency_s={"nvlink": 2e-6, "leaf": 5e-6, "spine": 7e-6},
        power_w=400.0,
        sources=[
            "NVIDIA A100 Tensor Core GPU datasheet (SXM 80 GB: 312 TFLOPS BF16 dense, "
            "2,039 GB/s HBM2e, NVLink 600 GB/s, 400 W)",
            "NVIDIA DGX A100 user guide: 8 GPUs, HDR 200 Gb/s InfiniBand per GPU",
        ],
        assumptions=_ASSUMPTIONS,
    ),
    "b200": HardwarePreset(
        name="b200",
        label="B200-class cluster (8x B200 per server, 400 Gb/s per GPU)",
        gpu="NVIDIA B200 192 GB",
        gpus_per_server=8,
        flops=2.25e15,  # HGX B200: 18 PFLOPS dense FP16/BF16 per 8 GPUs
        mfu=0.40,
        memory_bytes=192 * 10**9,
        hbm_bytes_per_s=8e12,
        nvlink_bytes_per_s=900e9,  # NVLink 5: 1.8 TB/s bidirectional per GPU
        network_bytes_per_s=50e9,  # 400 Gb/s per GPU
        pcie_bytes_per_s=64e9,
        storage_bytes_per_s=20e9,
        latency_s={"nvlink": 2e-6, "leaf": 5e-6, "spine": 7e-6},
        power_w=1000.0,
        sources=[
            "NVIDIA HGX B200 specifications (8 GPUs: 18 PFLOPS FP16/BF16 dense, 1.44 TB HBM3e "
            "at 64 TB/s, NVLink 1.8 TB/s per GPU, ~1,000 W per GPU)",
        ],
        assumptions=_ASSUMPTIONS,
    ),
}

DEFAULT_PRESET = "h100"


def get_preset(name: str) -> HardwarePreset:
    try:
        return PRESETS[name]
    except KeyError:
        known = ", ".join(sorted(PRESETS))
        raise ValueError(f"unknown hardware preset {name!r} (known: {known})") from None


def preset_info(name: str) -> dict[str, Any]:
    """The preset as plain data for the wire and the docs."""
    p = get_preset(name)
    d = asdict(p)
    d["nvlink_gbps"] = p.nvlink_bytes_per_s / 1e9
    d["network_gbps"] = p.network_bytes_per_s / 1e9
    return d


@dataclass
class StepCost:
    """Simulated seconds for each phase of one step on one GPU (all GPUs run in lockstep)."""

    data: float
    forward: float
    backward: float
    allreduce: float
    optimizer: float
    checkpoint: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def step_cost(
    preset: HardwarePreset,
    *,
    n_params: int,
    tokens_per_gpu: int,
    batch_bytes_per_gpu: int,
    itemsize: int,
    trace: RingTrace | None,
    checkpoint_bytes: int = 0,
    servers: int = 1,
) -> StepCost:
    rate = preset.flops * preset.mfu
    forward = 2.0 * n_params * tokens_per_gpu / rate
    backward = 4.0 * n_params * tokens_per_gpu / rate
    allreduce = ring_time(preset, trace) if trace is not None else 0.0
    # AdamW reads weights, grads, m, v and writes weights, m, v.
    optimizer = 7 * n_params * itemsize / preset.hbm_bytes_per_s
    data = batch_bytes_per_gpu / preset.pcie_bytes_per_s
    checkpoint = checkpoint_bytes / (preset.storage_bytes_per_s * max(1, servers))
    return StepCost(data, forward, backward, allreduce, optimizer, checkpoint)


def ring_time(preset: HardwarePreset, trace: RingTrace) -> float:
    """Sum over passes of the slowest hop: bytes / link bandwidth + per-hop latency."""
    if not trace.passes:
        return 0.0
    kinds = ["nvlink" if k == "link" else k for k in trace.links]
    bandwidth = np.asarray([preset.link_bandwidth(k) for k in kinds])
    latency = np.asarray([preset.latency_s.get(k, 0.0) for k in kinds])
    per_hop = np.stack([p.nbytes for p in trace.passes]) / bandwidth + latency  # (passes, G)
    return float(per_hop.max(axis=1).sum())
