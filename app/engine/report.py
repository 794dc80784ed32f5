"""Plain records the engine hands out: one StepReport per training step, plus events.

These are the engine's side of the contract. `app/protocol.py` mirrors them as pydantic
models for the wire; keep the field names identical so the browser, the server and the
engine speak about the same things.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Phases of one step, in the order they happen.
PHASES = ("data", "forward", "backward", "allreduce", "optimizer", "checkpoint")

# Kinds of link a ring hop can cross.
LINK_KINDS = ("nvlink", "leaf", "spine")

# Kinds of event the engine reports.
EVENT_KINDS = (
    "checkpoint_saved",
    "checkpoint_skipped",  # a corrupt or partial checkpoint was found and not loaded
    "gpu_failed",
    "restored",  # rolled back to a checkpoint
    "gpu_replaced",
    "epoch_started",
)


@dataclass
class Event:
    kind: str  # one of EVENT_KINDS
    step: int  # the step the run was at when it happened
    message: str  # one human sentence, e.g. "GPU 3 failed at step 75"
    detail: dict[str, Any] = field(default_factory=dict)
    # detail by kind:
    #   checkpoint_saved:   {"step", "path", "bytes", "reason": "periodic"|"on_demand"|"final"}
    #   checkpoint_skipped: {"path", "reason"}
    #   gpu_failed:         {"gpu"}
    #   restored:           {"failed_step", "restored_step", "steps_lost"}
    #   gpu_replaced:       {"gpu"}
    #   epoch_started:      {"epoch"}


@dataclass
class Phase:
    name: str  # one of PHASES
    sim_s: float  # simulated seconds on the hardware preset
    wall_s: float  # measured seconds here


@dataclass
class LinkLoad:
    kind: str  # one of LINK_KINDS
    hops: int  # ring hops of this kind (per pass)
    bytes: int  # bytes carried over links of this kind in this step's all-reduce


@dataclass
class RingHop:
    src: int  # global GPU index
    dst: int
    link: str  # one of LINK_KINDS: the widest tier this hop climbs to


@dataclass
class RingSummary:
    passes: int  # 2 * (G - 1)
    gpus: int
    elements: int  # gradient elements reduced
    chunk_bytes: int  # bytes of the largest chunk
    bytes_total: int  # bytes sent over all links, all passes
    bytes_per_gpu: int  # bytes sent by each GPU
    busiest_link_bytes: int  # most bytes carried by any single directed link
    hops: list[RingHop]  # the ring, in order: G hops (GPU -> next GPU)
    links: list[LinkLoad]  # totals by link kind


@dataclass
class LoaderStats:
    workers: int
    queue_depth: int  # batches ready in the prefetch queue when the step took its batch
    queue_capacity: int
    waited: bool  # did the GPUs have to wait for data this step
    wait_s: float  # measured seconds spent waiting
    epoch: int
    batch_in_epoch: int
    batches_per_epoch: int
    samples_per_epoch: int


@dataclass
class GpuMemory:
    gpu: int
    weights: int  # bytes
    grads: int
    optimizer: int
    activations: int
    total: int
    capacity: int  # bytes of memory the simulated GPU has


@dataclass
class ProbeToken:
    token: str
    p: float


@dataclass
class Probe:
    prompt: str  # "Once upon a"
    top: list[ProbeToken]  # top 5, highest first
    weights: list[float]  # 16 sampled weights
    weights_name: str  # which tensor they are from, e.g. "layers.0.mlp.w1"


@dataclass
class StepReport:
    step: int  # step just completed (1 after the first update)
    epoch: int
    loss: float  # mean over all GPUs' microbatches
    gpu_losses: list[float]
    grad_norm: float  # global norm of the averaged gradient
    lr: float
    tokens: int  # tokens processed in this step (all GPUs)
    tokens_total: int  # tokens processed since step 0 on this timeline
    phases: list[Phase]  # in PHASES order
    sim_step_s: float  # sum of simulated phase times
    wall_step_s: float  # measured seconds for the whole step here
    ring: RingSummary
    loader: LoaderStats
    memory: list[GpuMemory]
    probe: Probe | None = None
    events: list[Event] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
