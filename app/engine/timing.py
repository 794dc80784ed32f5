"""What a step would cost on real hardware: named presets and a simple, stated timing model.

Compute: training costs about 6 x parameters x tokens FLOPs (2 forward, 4 backward), run at
the preset's dense BF16 peak times an assumed utilisation (MFU). All-reduce: the ring's real
trace, pass by pass; in a pass every GPU sends one chunk at once, so the pass takes as long as
its slowest hop (bytes / link bandwidth + per-hop latency). Optimiser: a memory-bound sweep
over weights, gradients and Adam state at HBM bandwidth. Checkpoint: bytes written at the
assumed storage bandwidth. Data: the batch copied host -> GPU over PCIe.

Per-GPU figures come from the GPU's datasheet entry in `hardware.py`; a preset adds only the
cluster around it (GPUs per server, network, PCIe, storage), each named in `sources`.
Utilisation, latencies and storage bandwidth are assumptions, labelled as such.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .collectives import RingTrace
from .hardware import A100_SXM_80GB, B200_HGX, H100_SXM, GpuDatasheet


@dataclass(frozen=True)
class HardwarePreset:
    name: str
    label: str
    datasheet: GpuDatasheet  # every per-GPU figure: FLOP/s, memory, HBM, NVLink, power
    gpus_per_server: int
    mfu: float  # assumed model FLOPs utilisation
    network_bytes_per_s: float  # per GPU NIC, one direction
    pcie_bytes_per_s: float
    storage_bytes_per_s: float  # checkpoint writes, per server (assumption)
    latency_s: dict[str, float]  # per hop, by link kind (assumption)
    system_sources: list[str] = field(default_factory=list)  # for the cluster-level figures
    assumptions: list[str] = field(default_factory=list)

    @property
    def gpu(self) -> str:
        return self.datasheet.label

    @property
    def flops(self) -> float:
        """Dense BF16 peak FLOP/s per GPU."""
        return self.datasheet.bf16_flops

    @property
    def memory_bytes(self) -> int:
        return self.datasheet.memory_bytes

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.datasheet.hbm_bytes_per_s

    @property
    def nvlink_bytes_per_s(self) -> float:
        return self.datasheet.nvlink_bytes_per_s

    @property
    def power_w(self) -> float:
        return self.datasheet.power_w

    @property
    def sources(self) -> list[str]:
        return [self.datasheet.source, *self.system_sources]

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
        datasheet=H100_SXM,
        gpus_per_server=8,
        mfu=0.40,
        network_bytes_per_s=50e9,  # ConnectX-7 NDR InfiniBand, 400 Gb/s per GPU
        pcie_bytes_per_s=64e9,  # PCIe Gen5 x16
        storage_bytes_per_s=10e9,
        latency_s={"nvlink": 2e-6, "leaf": 5e-6, "spine": 7e-6},
        system_sources=[
            "NVIDIA ConnectX-7 / Quantum-2 NDR InfiniBand: 400 Gb/s per port",
            "NVIDIA DGX H100 user guide: 8 GPUs per system, one 400 Gb/s NIC per GPU",
        ],
        assumptions=_ASSUMPTIONS,
    ),
    "a100": HardwarePreset(
        name="a100",
        label="A100-class cluster (8x A100 SXM 80 GB per server, 200 Gb/s per GPU)",
        datasheet=A100_SXM_80GB,
        gpus_per_server=8,
        mfu=0.40,
        network_bytes_per_s=25e9,  # HDR InfiniBand, 200 Gb/s per GPU
        pcie_bytes_per_s=32e9,  # PCIe Gen4 x16
        storage_bytes_per_s=5e9,
        latency_s={"nvlink": 2e-6, "leaf": 5e-6, "spine": 7e-6},
        system_sources=[
            "NVIDIA DGX A100 user guide: 8 GPUs, HDR 200 Gb/s InfiniBand per GPU",
        ],
        assumptions=_ASSUMPTIONS,
    ),
    "b200": HardwarePreset(
        name="b200",
        label="B200-class cluster (8x B200 per server, 400 Gb/s per GPU)",
        datasheet=B200_HGX,
        gpus_per_server=8,
        mfu=0.40,
        network_bytes_per_s=50e9,  # 400 Gb/s per GPU
        pcie_bytes_per_s=64e9,
        storage_bytes_per_s=20e9,
        latency_s={"nvlink": 2e-6, "leaf": 5e-6, "spine": 7e-6},
        system_sources=[
            "NVIDIA DGX B200 specifications: 8 GPUs per system, 8x ConnectX-7 at 400 Gb/s "
            "(one per GPU)",
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
    """The preset as plain data for the wire and the docs: one flat record, the datasheet's
    figures next to the cluster's, as the HUD reads them."""
    p = get_preset(name)
    return {
        "name": p.name,
        "label": p.label,
        "gpu": p.gpu,
        "gpus_per_server": p.gpus_per_server,
        "flops": p.flops,
        "mfu": p.mfu,
        "memory_bytes": p.memory_bytes,
        "hbm_bytes_per_s": p.hbm_bytes_per_s,
        "nvlink_bytes_per_s": p.nvlink_bytes_per_s,
        "network_bytes_per_s": p.network_bytes_per_s,
        "pcie_bytes_per_s": p.pcie_bytes_per_s,
        "storage_bytes_per_s": p.storage_bytes_per_s,
        "latency_s": dict(p.latency_s),
        "power_w": p.power_w,
        "sources": p.sources,
        "assumptions": list(p.assumptions),
        "nvlink_gbps": p.nvlink_bytes_per_s / 1e9,
        "network_gbps": p.network_bytes_per_s / 1e9,
    }


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


def ring_pass_times(preset: HardwarePreset, trace: RingTrace) -> np.ndarray:
    """Seconds for each pass: its slowest hop, bytes / link bandwidth + per-hop latency.

    Every GPU sends at once and the next pass needs what this one delivered, so a pass
    lasts as long as its slowest hop: in a real ring the slowest link sets the pace."""
    if not trace.passes:
        return np.zeros(0)
    kinds = ["nvlink" if k == "link" else k for k in trace.links]
    bandwidth = np.asarray([preset.link_bandwidth(k) for k in kinds])
    latency = np.asarray([preset.latency_s.get(k, 0.0) for k in kinds])
    per_hop = np.stack([p.nbytes for p in trace.passes]) / bandwidth + latency  # (passes, G)
    return per_hop.max(axis=1)


def ring_time(preset: HardwarePreset, trace: RingTrace) -> float:
    """The whole ring all-reduce: the sum of its passes."""
    return float(ring_pass_times(preset, trace).sum())


def compute_seconds(preset: HardwarePreset, flops: float) -> float:
    """FLOPs at the preset's dense peak times the assumed utilisation."""
    return float(flops) / (preset.flops * preset.mfu)


def hop_seconds(preset: HardwarePreset, nbytes: float, kind: str) -> float:
    """One message over one link: bytes / link bandwidth + per-hop latency (none if empty)."""
    if nbytes <= 0:
        return 0.0
    kind = "nvlink" if kind == "link" else kind
    return float(nbytes) / preset.link_bandwidth(kind) + preset.latency_s.get(kind, 0.0)


def ring_seconds_by_pass(
    preset: HardwarePreset, links: list[str], chunk_bytes: list[int]
) -> list[float]:
    """Seconds of each pass of a ring all-reduce over len(links) GPUs whose chunks have
    `chunk_bytes` bytes: in pass k position i sends the chunk the ring algorithm gives it
    (trace.ring_chunk), and a pass lasts as long as its slowest hop."""
    from .trace import ring_chunk

    g = len(links)
    if g < 2:
        return []
    out = []
    for index in range(1, 2 * (g - 1) + 1):
        hops = [
            hop_seconds(preset, chunk_bytes[ring_chunk(i, index, g)[1]], links[i]) for i in range(g)
        ]
        out.append(max(hops))
    return out


def all_to_all_round_seconds(
    preset: HardwarePreset, pair_bytes: list[list[int]], links: list[list[str]]
) -> list[float]:
    """Seconds of each of the g-1 rounds of a pairwise all-to-all: in round k position i
    sends to i+k; a round lasts as long as its slowest pair."""
    g = len(pair_bytes)
    return [
        max(
            hop_seconds(preset, pair_bytes[i][(i + k) % g], links[i][(i + k) % g]) for i in range(g)
        )
        for k in range(1, g)
    ]


def optimizer_seconds(preset: HardwarePreset, n_params: int, itemsize: int) -> float:
    """AdamW reads weights, grads, m, v and writes weights, m, v: memory-bound at HBM speed."""
    return 7 * n_params * itemsize / preset.hbm_bytes_per_s
