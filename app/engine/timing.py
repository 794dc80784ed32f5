"""What a step would cost on real hardware: named presets and a stated timing model.

Every rule below is either taken from a named public source or marked as an assumption; the
rules are written once here and read by the live trace (trainer.py, parallel.py) and by the
model lens (lens.py), so the tiny live model and a real-size model are priced alike.

The simulated cluster is a mixed-precision training cluster (Micikevicius et al. 2018, "Mixed
Precision Training"): weights, activations and gradients travel in BF16, 2 bytes a number,
while the optimizer keeps FP32 state. The tiny model here computes in float32 (or float64
for gradient checks); that changes its arithmetic, not the bytes the simulated cluster moves.

Rules, in the order of a step:

1. Data: the batch is copied host -> GPU over PCIe: bytes / PCIe bandwidth + a transfer
   latency (assumption, ~2 us per copy).
2. Compute: about 6 x parameters x tokens FLOPs (2 forward, 4 backward; Kaplan et al. 2020)
   at the dense BF16 peak times the preset's utilisation (assumption, see `mfu`), with a
   floor: every kernel takes at least KERNEL_FLOOR_S (assumption: a few microseconds, the
   order of a CUDA launch, NVIDIA "Getting Started with CUDA Graphs", 2019). The work is
   taken as spread evenly over an op's kernels, so an op lasts max(FLOPs / rate, kernels x
   floor). Kernel counts per layer are an assumption (KERNELS_PER_LAYER).
3. Transfers: bytes / link bandwidth + per-hop latency (assumption, by link kind).
4. All-reduce, as NCCL runs it (NCCL documentation, "Collective Operations" and NCCL_ALGO;
   S. Jeaugey, "Massively Scale Your Deep Learning Training with NCCL 2.4", NVIDIA 2019):
   - ring: 2(G-1) passes; every GPU sends S/G bytes in each, so every link carries
     2(G-1)/G x S; a pass lasts as long as its slowest hop. Across servers NCCL opens one
     ring channel per NIC rail (NCCL_CROSS_NIC: a rail-optimised fabric keeps NIC i talking
     to NIC i), so a ring with k GPUs in each server crosses between servers on k NICs at
     once, each with 1/k of the chunk;
   - tree: NCCL's double binary tree across servers, a chain inside each: about the ring's
     bandwidth, but log2(servers) network hops of latency instead of 2(G-1);
   - hierarchical: reduce-scatter inside each server over NVLink, an all-reduce across
     servers per rail on S / gpus_per_server, all-gather inside: 2(n-1)/n x S per NVLink
     and 2(N-1)/N x S/n per NIC;
   NCCL picks, per call, the algorithm its tuning model predicts fastest; so does
   `nccl_allreduce`. The live step draws and prices the ring it really ran.
5. Overlap: gradients are all-reduced in buckets as PyTorch DistributedDataParallel does
   (torch/csrc/distributed/c10d/reducer.hpp: kDefaultFirstBucketBytes = 1 MiB,
   kDefaultBucketBytesCap = 25 MiB, the `bucket_cap_mb=25` default), in the order the
   backward pass finishes them (the last layer's first). A bucket's all-reduce starts when
   its last gradient is ready and the previous bucket's is done; only what is left when the
   backward pass ends lengthens the step (exposed), the rest runs beside it (hidden). A
   gradient is taken to be ready when the backward has done the share of its work that the
   parameters before it in backward order make up (assumption). With several microbatches
   only the last one's backward overlaps, as DDP's no_sync accumulation does.
6. Update: AdamW is memory-bound: it reads weights, gradients, m and v and writes weights,
   m and v, 7 x 4 bytes a parameter of FP32 state, at HBM bandwidth (assumption: the FP32
   master copy of mixed precision), with a floor of a few fused kernels.
7. Checkpoint: written by one GPU per distinct shard (data-parallel copies hold the same
   bytes and need not write), all writers at once; the writers in one server share its
   storage bandwidth (assumption, per server).

Per-GPU figures come from the GPU's datasheet entry in `hardware.py`; a preset adds only the
cluster around it (GPUs per server, network, PCIe, storage), each named in `sources`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .collectives import RingTrace
from .hardware import (
    A100_SXM_80GB,
    B200_HGX,
    H100_SXM,
    H800_SXM,
    INTERRUPTIONS_PER_GPU_HOUR,
    GpuDatasheet,
)

# ---- stated rules ---------------------------------------------------------------------------

# Mixed precision (Micikevicius et al. 2018): BF16 on the wire, FP32 optimizer state.
GRAD_WIRE_BYTES = 2  # bytes of one gradient on the wire (BF16)
ACTIVATION_WIRE_BYTES = 2  # bytes of one activation on the wire (BF16)
OPTIMIZER_STATE_BYTES = 4  # FP32 master weights and Adam moments
# 2 (BF16 weights) + 2 (BF16 gradients) + 4 (FP32 master) + 4 + 4 (Adam m, v) bytes a
# parameter: the memory a mixed-precision AdamW run holds per parameter (ZeRO paper,
# Rajbhandari et al. 2020, section 3.1: "16 Psi bytes").
TRAINING_BYTES_PER_PARAM = 16

# Assumption: the shortest a kernel takes, launch included (a few microseconds; NVIDIA,
# "Getting Started with CUDA Graphs", 2019, measures launch overheads of this order).
KERNEL_FLOOR_S = 4e-6
# Assumption: kernels of one transformer layer: forward layer norm, QKV, attention, output
# projection, residual, layer norm, MLP up, activation, MLP down, residual (10); backward
# about twice as many (input and weight gradients of every matmul).
KERNELS_PER_LAYER = {"forward": 10, "backward": 20}
# Embedding, final norm, head and loss (forward), and their gradients (backward).
KERNELS_OUTSIDE_LAYERS = {"forward": 4, "backward": 8}
OPTIMIZER_KERNELS = 3  # assumption: a fused AdamW: gradient norm, clip, update

# Faults at scale. Assumption: a straggler (a GPU throttled by heat or power, or one with a
# failing part) runs its compute this many times as long; the Llama 3 paper (section 3.3.4)
# names such slow GPUs among the hardest problems of a 16K-GPU run, without a figure.
STRAGGLER_FACTOR = 2.0
# Assumption: the path a hop takes when its own link is cut. Inside a server NCCL falls back
# from NVLink to the network (out through the NIC, back through the top-of-rack leaf); a
# hop between servers under one leaf goes up through a spine instead. A cut spine uplink's
# traffic moves to the other spines (equal-cost multipath): the same kind of path, which
# this model does not slow down.
REROUTE = {"nvlink": "leaf", "leaf": "spine"}

# PyTorch DDP's buckets (torch/csrc/distributed/c10d/reducer.hpp).
FIRST_BUCKET_BYTES = 1024 * 1024
BUCKET_BYTES = 25 * 1024 * 1024


@dataclass(frozen=True)
class HardwarePreset:
    name: str
    label: str
    datasheet: GpuDatasheet  # every per-GPU figure: FLOP/s, memory, HBM, NVLink, power
    gpus_per_server: int
    mfu: float  # assumed share of the dense peak the compute kernels reach
    network_bytes_per_s: float  # per GPU NIC, one direction
    pcie_bytes_per_s: float
    storage_bytes_per_s: float  # checkpoint writes, per server (assumption)
    latency_s: dict[str, float]  # per hop or copy, by link kind (assumption)
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
        if kind == "pcie":
            return self.pcie_bytes_per_s
        return self.nvlink_bytes_per_s if kind == "nvlink" else self.network_bytes_per_s


_ASSUMPTIONS = [
    "Compute runs at the stated share of the dense BF16 peak (an assumption; large runs "
    "report 38-43% MFU end to end, Llama 3 405B, Meta 2024).",
    f"Every kernel takes at least {KERNEL_FLOOR_S * 1e6:g} us (assumption: the order of a "
    "CUDA launch).",
    "Per-hop latency is an assumption: ~2 us over NVLink, ~5 us via a leaf switch, "
    "~7 us via a spine, ~2 us per PCIe copy.",
    "Mixed precision: gradients and activations travel as BF16 (2 bytes), the optimizer "
    "keeps FP32 state; the tiny live model itself computes in float32.",
    "Gradients are all-reduced in PyTorch DDP's buckets (1 MiB first, then 25 MiB) as the "
    "backward pass finishes them; only the part left after the backward adds to the step.",
    "All-reduce as NCCL runs it: one ring channel per NIC rail across servers; the lens "
    "takes the fastest of ring, tree and hierarchical, as NCCL's tuner does.",
    "Checkpoints are written by one GPU per distinct shard; writers in a server share its "
    "storage bandwidth (an assumption per server).",
]

_LATENCY = {"nvlink": 2e-6, "leaf": 5e-6, "spine": 7e-6, "pcie": 2e-6}

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
        latency_s=dict(_LATENCY),
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
        latency_s=dict(_LATENCY),
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
        latency_s=dict(_LATENCY),
        system_sources=[
            "NVIDIA DGX B200 specifications: 8 GPUs per system, 8x ConnectX-7 at 400 Gb/s "
            "(one per GPU)",
        ],
        assumptions=_ASSUMPTIONS,
    ),
    "h800": HardwarePreset(
        name="h800",
        label="H800-class cluster (8x H800 SXM per server, 400 Gb/s per GPU)",
        datasheet=H800_SXM,
        gpus_per_server=8,
        mfu=0.40,
        # DeepSeek-V3 Technical Report, section 3.1: "InfiniBand ... 50 GB/s" per GPU.
        network_bytes_per_s=50e9,
        pcie_bytes_per_s=64e9,
        storage_bytes_per_s=10e9,
        latency_s=dict(_LATENCY),
        system_sources=[
            "DeepSeek-V3 Technical Report (2024), section 3.1: 8 H800 GPUs per node over "
            "NVLink and NVSwitch, nodes joined by 400 Gb/s InfiniBand (50 GB/s) per GPU",
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
    figures next to the cluster's and the timing rules' own constants, as the HUD reads them."""
    p = get_preset(name)
    return {
        "name": p.name,
        "label": p.label,
        "gpu": p.gpu,
        "gpus_per_server": p.gpus_per_server,
        "flops": p.flops,
        "mfu": p.mfu,
        "interruptions_per_gpu_hour": INTERRUPTIONS_PER_GPU_HOUR,
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
        "grad_wire_bytes": GRAD_WIRE_BYTES,
        "kernel_floor_s": KERNEL_FLOOR_S,
        "bucket_bytes": BUCKET_BYTES,
        "first_bucket_bytes": FIRST_BUCKET_BYTES,
    }


# ---- compute, data, update ------------------------------------------------------------------


def layer_kernels(kind: str, n_layer: float, *, outside: bool = True) -> float:
    """Kernels of a forward or backward pass over `n_layer` layers (and the embedding, head
    and loss when `outside`)."""
    return KERNELS_PER_LAYER[kind] * n_layer + (KERNELS_OUTSIDE_LAYERS[kind] if outside else 0)


def compute_seconds(preset: HardwarePreset, flops: float, kernels: float = 0.0) -> float:
    """FLOPs at the preset's dense peak times the assumed utilisation, but never less than
    `kernels` x the kernel floor."""
    return max(float(flops) / (preset.flops * preset.mfu), float(kernels) * KERNEL_FLOOR_S)


def data_seconds(preset: HardwarePreset, nbytes: float) -> float:
    """The batch copied host -> GPU over PCIe, one copy."""
    return hop_seconds(preset, nbytes, "pcie")


def optimizer_seconds(
    preset: HardwarePreset, n_params: float, itemsize: int = OPTIMIZER_STATE_BYTES
) -> float:
    """AdamW reads weights, grads, m, v and writes weights, m, v: memory-bound at HBM speed,
    with the floor of a fused optimizer's few kernels."""
    sweep = 7 * float(n_params) * itemsize / preset.hbm_bytes_per_s
    return max(sweep, OPTIMIZER_KERNELS * KERNEL_FLOOR_S)


def checkpoint_seconds(
    preset: HardwarePreset, nbytes: float, writers_per_server: Sequence[int]
) -> float:
    """One checkpoint of `nbytes`, split evenly over its writers (one GPU per distinct shard),
    all writing at once; the writers of one server share its storage bandwidth."""
    writers = sum(writers_per_server)
    if nbytes <= 0 or writers <= 0:
        return 0.0
    share = float(nbytes) / writers
    return max(writers_per_server) * share / preset.storage_bytes_per_s


def checkpoint_writers(
    shard_holders: Sequence[Sequence[int]], server_of: Sequence[int]
) -> tuple[list[int], list[int]]:
    """The writing GPUs, one per distinct shard (the first GPU holding it), and how many of
    them each server has: ([gpu, ...], [writers in server 0, 1, ...])."""
    writers = sorted({min(holders) for holders in shard_holders if holders})
    per_server = [0] * (max(server_of) + 1)
    for g in writers:
        per_server[server_of[g]] += 1
    return writers, per_server


# ---- links and rings ------------------------------------------------------------------------


def hop_seconds(preset: HardwarePreset, nbytes: float, kind: str, rails: int = 1) -> float:
    """One message over one link: bytes / link bandwidth + per-hop latency (none if empty).
    A hop between servers may be carried by `rails` NICs at once, each with 1/rails of it."""
    if nbytes <= 0:
        return 0.0
    bandwidth, latency = _link_cost(preset, kind, rails)
    return float(nbytes) / bandwidth + latency


def _link_cost(preset: HardwarePreset, kind: str, rails: int = 1) -> tuple[float, float]:
    """(bytes per second, seconds of latency) of one hop over a link of this kind."""
    kind = "nvlink" if kind == "link" else kind
    bandwidth = preset.link_bandwidth(kind)
    if kind in ("leaf", "spine"):
        bandwidth *= max(1, rails)
    return bandwidth, preset.latency_s.get(kind, 0.0)


def rails_of(gpus: Sequence[int], server_of: Sequence[int]) -> int:
    """NIC rails a ring of these GPUs spreads over between servers: its members per server
    (each member's own NIC carries one ring channel)."""
    counts: dict[int, int] = {}
    for g in gpus:
        counts[server_of[g]] = counts.get(server_of[g], 0) + 1
    return min(counts.values()) if counts else 1


def ring_pass_times(preset: HardwarePreset, trace: RingTrace, rails: int = 1) -> np.ndarray:
    """Seconds for each pass: its slowest hop, bytes / link bandwidth + per-hop latency.

    Every GPU sends at once and the next pass needs what this one delivered, so a pass
    lasts as long as its slowest hop: in a real ring the slowest link sets the pace."""
    if not trace.passes:
        return np.zeros(0)
    kinds = ["nvlink" if k == "link" else k for k in trace.links]
    net = np.asarray([k in ("leaf", "spine") for k in kinds])
    bandwidth = np.asarray([preset.link_bandwidth(k) for k in kinds])
    bandwidth = np.where(net, bandwidth * max(1, rails), bandwidth)
    latency = np.asarray([preset.latency_s.get(k, 0.0) for k in kinds])
    nbytes = np.stack([p.nbytes for p in trace.passes])  # (passes, G)
    per_hop = np.where(nbytes > 0, nbytes / bandwidth + latency, 0.0)
    return per_hop.max(axis=1)


def ring_time(preset: HardwarePreset, trace: RingTrace, rails: int = 1) -> float:
    """The whole ring all-reduce: the sum of its passes."""
    return float(ring_pass_times(preset, trace, rails).sum())


def ring_seconds_by_pass(
    preset: HardwarePreset, links: list[str], chunk_bytes: list[int], rails: int = 1
) -> list[float]:
    """Seconds of each pass of a ring all-reduce over len(links) GPUs whose chunks have
    `chunk_bytes` bytes: in pass k position i sends the chunk the ring algorithm gives it
    (trace.ring_chunk), and a pass lasts as long as its slowest hop."""
    from .trace import ring_chunk

    g = len(links)
    if g < 2:
        return []
    # Every step prices its rings' passes: each link's cost is looked up once, and each hop
    # is the same sum as hop_seconds.
    costs = [_link_cost(preset, kind, rails) for kind in links]
    out = []
    for index in range(1, 2 * (g - 1) + 1):
        hops = []
        for i in range(g):
            nbytes = chunk_bytes[ring_chunk(i, index, g)[1]]
            bandwidth, latency = costs[i]
            hops.append(float(nbytes) / bandwidth + latency if nbytes > 0 else 0.0)
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


# ---- all-reduce as NCCL runs it: closed forms over a group of n GPUs in each of N servers ------

NETWORK_HOP = "spine"  # a group spread over many servers crosses spine switches (assumption)


def ring_link_bytes(nbytes: float, g: int) -> float:
    """Bytes each link of a ring all-reduce of `nbytes` over g GPUs carries: 2(g-1)/g x S."""
    return 2.0 * (g - 1) / g * float(nbytes) if g > 1 else 0.0


def hierarchical_link_bytes(nbytes: float, per_server: int, servers: int) -> dict[str, float]:
    """Bytes per GPU of the hierarchical all-reduce: reduce-scatter then all-gather inside a
    server over NVLink, 2(n-1)/n x S; an all-reduce across servers on each rail of the
    S/n shard each GPU holds, 2(N-1)/N x S/n per NIC."""
    n, s = per_server, float(nbytes)
    return {
        "nvlink": 2.0 * (n - 1) / n * s if n > 1 else 0.0,
        "nic": 2.0 * (servers - 1) / servers * s / n if servers > 1 else 0.0,
    }


def allreduce_algorithms(
    preset: HardwarePreset, nbytes: float, per_server: int, servers: int
) -> dict[str, float]:
    """Seconds of an all-reduce of `nbytes` over `per_server` GPUs in each of `servers`
    servers, by algorithm (see the module docstring, rule 4)."""
    n, N, S = per_server, servers, float(nbytes)
    g = n * N
    if g < 2 or S <= 0:
        return {"ring": 0.0}
    lat = preset.latency_s
    nv_bw, net_bw = preset.nvlink_bytes_per_s, preset.network_bytes_per_s
    chunk = S / g
    # Ring: every pass waits for its slowest hop; between servers k = n rails at once.
    hops = []
    if n > 1:
        hops.append(chunk / nv_bw + lat["nvlink"])
    if N > 1:
        hops.append(chunk / (n * net_bw) + lat[NETWORK_HOP])
    out = {"ring": 2 * (g - 1) * max(hops)}
    if N > 1:
        bus = min(nv_bw, n * net_bw) if n > 1 else net_bw
        depth = math.ceil(math.log2(N))
        out["tree"] = 2 * S / bus + 2 * ((n - 1) * lat["nvlink"] + depth * lat[NETWORK_HOP])
        b = hierarchical_link_bytes(S, n, N)
        inside = b["nvlink"] / nv_bw + 2 * (n - 1) * lat["nvlink"]
        across = b["nic"] / net_bw + 2 * (N - 1) * lat[NETWORK_HOP]
        out["hierarchical"] = inside + across
    return out


def nccl_allreduce(
    preset: HardwarePreset, nbytes: float, per_server: int, servers: int
) -> tuple[str, float]:
    """(algorithm, seconds): the fastest of the algorithms for this size, as NCCL's tuner
    chooses per call."""
    options = allreduce_algorithms(preset, nbytes, per_server, servers)
    name = min(options, key=lambda k: options[k])
    return name, options[name]


def all_to_all_seconds(
    preset: HardwarePreset, pair_bytes: float, per_server: int, servers: int
) -> float:
    """A pairwise all-to-all over n GPUs in each of N servers, `pair_bytes` for every pair:
    g-1 rounds, each as slow as its slowest pair (one crossing servers, when N > 1)."""
    g = per_server * servers
    if g < 2 or pair_bytes <= 0:
        return 0.0
    kind = NETWORK_HOP if servers > 1 else "nvlink"
    return (g - 1) * hop_seconds(preset, pair_bytes, kind)


# ---- gradient buckets and their overlap with the backward pass -------------------------------


def bucket_tensors(
    sizes: Sequence[int], first: int = FIRST_BUCKET_BYTES, cap: int = BUCKET_BYTES
) -> list[list[int]]:
    """DDP's bucket assignment: tensors (given in the order their gradients become ready,
    with their bytes) go into the open bucket until it holds at least its limit (`first`
    for the first bucket, `cap` after it). Returns each bucket's tensor indices."""
    buckets: list[list[int]] = []
    current: list[int] = []
    held = 0
    for i, size in enumerate(sizes):
        current.append(i)
        held += int(size)
        if held >= (first if not buckets else cap):
            buckets.append(current)
            current, held = [], 0
    if current:
        buckets.append(current)
    return buckets


def uniform_buckets(nbytes: float, first: int = FIRST_BUCKET_BYTES, cap: int = BUCKET_BYTES):
    """Bucket sizes for `nbytes` of gradients produced evenly (no tensor list at hand)."""
    out: list[float] = []
    left = float(nbytes)
    while left > 0:
        take = min(left, first if not out else cap)
        out.append(take)
        left -= take
    return out


@dataclass
class Overlap:
    """The gradient buckets' all-reduces on the communication stream, beside the backward."""

    starts: list[float]  # each bucket's all-reduce start, seconds
    durations: list[float]
    compute_end: float  # when the backward pass ends
    hidden: float  # all-reduce seconds run while the backward was still going
    exposed: float  # seconds the step waits for the all-reduce after the backward

    @property
    def end(self) -> float:
        return self.starts[-1] + self.durations[-1] if self.starts else self.compute_end


def overlap_buckets(
    ready: Sequence[float], durations: Sequence[float], compute_end: float
) -> Overlap:
    """Run each bucket's all-reduce when it is ready and the previous one is done (one
    communication stream, as NCCL serialises a process group's collectives)."""
    starts: list[float] = []
    t = -math.inf
    for r, d in zip(ready, durations, strict=True):
        start = max(float(r), t)
        starts.append(start)
        t = start + float(d)
    end = t if starts else compute_end
    exposed = max(0.0, end - compute_end)
    hidden = float(sum(durations)) - exposed
    return Overlap(starts, [float(d) for d in durations], compute_end, max(0.0, hidden), exposed)


def ready_times(sizes: Sequence[float], start: float, end: float) -> list[float]:
    """When each of these gradients (bytes, in backward order) is complete, for a backward
    from `start` to `end`: when it has done the share of its work that they and those before
    them make up (assumption). The last is ready exactly at `end`."""
    total = float(sum(sizes)) or 1.0
    out, done = [], 0.0
    for s in sizes:
        done += float(s)
        out.append(end if done >= total else start + (end - start) * done / total)
    return out


# ---- the step's phases, for the data-parallel trace -----------------------------------------


@dataclass
class StepCost:
    """Simulated seconds for each phase of one step on one GPU (all GPUs run in lockstep).
    forward and backward are for the whole step (all microbatches)."""

    data: float
    forward: float
    backward: float
    allreduce: float
    optimizer: float
    checkpoint: float
    forward_mb: float = 0.0  # one microbatch's forward
    backward_mb: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def step_cost(
    preset: HardwarePreset,
    *,
    n_params: int,
    tokens_per_gpu: int,
    batch_bytes_per_gpu: int,
    n_layer: int = 0,
    microbatches: int = 1,
    trace: RingTrace | None = None,
    rails: int = 1,
    checkpoint_bytes: int = 0,
    writers_per_server: Sequence[int] = (1,),
) -> StepCost:
    """A data-parallel step's phases: compute with its kernel floor (n_layer layers, per
    microbatch), the ring if given, the update and a checkpoint by its writers."""
    mbs = max(1, microbatches)
    tokens_mb = tokens_per_gpu / mbs
    forward_mb = compute_seconds(
        preset, 2.0 * n_params * tokens_mb, layer_kernels("forward", n_layer)
    )
    backward_mb = compute_seconds(
        preset, 4.0 * n_params * tokens_mb, layer_kernels("backward", n_layer)
    )
    allreduce = ring_time(preset, trace, rails) if trace is not None else 0.0
    return StepCost(
        data=data_seconds(preset, batch_bytes_per_gpu),
        forward=forward_mb * mbs,
        backward=backward_mb * mbs,
        allreduce=allreduce,
        optimizer=optimizer_seconds(preset, n_params),
        checkpoint=checkpoint_seconds(preset, checkpoint_bytes, writers_per_server),
        forward_mb=forward_mb,
        backward_mb=backward_mb,
    )
