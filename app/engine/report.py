"""Plain records the engine hands out: one StepReport per training step, plus events, and
`Diverged`, the one way a step ends without a report.

These are the engine's side of the contract. `app/protocol.py` mirrors them as pydantic
models for the wire; keep the field names identical so the browser, the server and the
engine speak about the same things.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from .trace import StepTrace

# Kinds of link a ring hop can cross.
LINK_KINDS = ("nvlink", "leaf", "spine")

# Kinds of event the engine reports.
EVENT_KINDS = (
    "checkpoint_saved",
    "checkpoint_skipped",  # a corrupt, partial or malformed checkpoint was found and not loaded
    "checkpoint_failed",  # a save failed (disk full, unwritable); the last good one is kept
    "gpu_failed",
    "restored",  # rolled back to a checkpoint
    "gpu_replaced",
    "epoch_started",
    "shard_rebuilt",  # a damaged built-in data lake shard was written again from the generator
    "diverged",  # a step's loss or gradient was not finite; see `Diverged.event()`
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
    #   checkpoint_failed:  {"step", "reason", "kept_step": newest good checkpoint or None}
    #   gpu_failed:         {"gpu"}
    #   restored:           {"failed_step", "restored_step", "steps_lost", "reason"}
    #   gpu_replaced:       {"gpu"}
    #   epoch_started:      {"epoch"}
    #   shard_rebuilt:      {"path", "reason"}
    #   diverged:           {"step", "loss", "grad_norm", "reason", "stopped_at", "exhausted"};
    #                       loss and grad_norm are numbers when finite, else "nan", "inf" or
    #                       "-inf"; exhausted: no checkpoint is left that trains on


@dataclass
class LinkLoad:
    kind: str  # one of LINK_KINDS
    hops: int  # ring hops of this kind (per pass)
    bytes: int  # bytes carried over links of this kind in this step's all-reduce


@dataclass
class RingSummary:
    passes: int  # 2 * (G - 1)
    gpus: int
    elements: int  # gradient elements reduced
    chunk_bytes: int  # bytes of the largest chunk
    bytes_total: int  # bytes sent over all links, all passes
    bytes_per_gpu: int  # bytes sent by each GPU
    busiest_link_bytes: int  # most bytes carried by any single directed link
    links: list[LinkLoad]  # totals by link kind (the hops themselves are in the trace)


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
class ProbeRoute:
    """Where one layer's router sent the prompt's last token ("a" of "Once upon a")."""

    layer: int  # 0-based
    experts: list[int]  # the top_k experts chosen, 0-based, highest gate first
    gates: list[float]  # their gates (renormalised over the chosen ones: they sum to 1)


@dataclass
class Probe:
    prompt: str  # "Once upon a"
    top: list[ProbeToken]  # top 5, highest first
    weights: list[float]  # 16 sampled weights
    weights_name: str  # which tensor they are from, e.g. "layers.0.mlp.w1"
    route: list[ProbeRoute] | None = None  # a model with experts: each layer's choice


@dataclass
class BatchText:
    """One of the texts the step trained on, as words: which data-parallel replica read it."""

    replica: int  # 0-based
    text: str


@dataclass
class PlanStats:
    """What the step's parallel plan cost, measured on this step (small, for the wire)."""

    # Idle stage time over all stages' time in the pipeline's span (0 without a pipeline).
    bubble_fraction: float = 0.0
    peak_activation_bytes: int = 0  # the most any GPU held at once during the step
    stage_activation_bytes: list[int] = field(default_factory=list)  # per stage: its peak
    # Bytes sent between GPUs in the step by trace event kind ("allreduce", "p2p", ...).
    traffic_bytes: dict[str, int] = field(default_factory=dict)


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
    trace: StepTrace  # every GPU's lane of timed events (simulated seconds)
    sim_step_s: float  # simulated seconds for the whole step: the trace's length
    wall_step_s: float  # measured seconds for the whole step here
    ring: RingSummary
    loader: LoaderStats
    memory: list[GpuMemory]
    probe: Probe | None = None
    events: list[Event] = field(default_factory=list)
    plan_stats: PlanStats = field(default_factory=PlanStats)
    texts: list[BatchText] = field(default_factory=list)  # the batch's first few, as words

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def restored_event(
    step: int,
    *,
    failed_step: int | None,
    steps_lost: int,
    reason: str,
    message: str | None = None,
) -> Event:
    """The one way a `restored` event is made: after a failure, a crash or a clean resume.

    reason: "failure" (a GPU failed and the run rolled back), "crash" (the process stopped
    without a final checkpoint), "resume" (a clean restart; nothing is lost) or "diverged"
    (the checkpoint the run was on diverged on its first step; an older one was loaded)."""
    if message is None:
        if reason == "resume":
            message = f"Resumed from the checkpoint at step {step}"
        elif reason == "crash":
            message = (
                f"Resumed from the checkpoint at step {step} after an unclean stop: "
                f"{steps_lost} steps to redo"
            )
        elif reason == "diverged":
            message = (
                f"Fell back to the checkpoint at step {step}, as the newer one diverged: "
                f"{steps_lost} steps to redo"
            )
        else:
            message = f"Rolled back to the checkpoint at step {step}: {steps_lost} steps to redo"
    return Event(
        kind="restored",
        step=step,
        message=message,
        detail={
            "failed_step": failed_step,
            "restored_step": step,
            "steps_lost": steps_lost,
            "reason": reason,
        },
    )


def json_number(x: float) -> float | str:
    """A float as JSON can carry it: itself when finite, else "nan", "inf" or "-inf"."""
    x = float(x)
    return x if math.isfinite(x) else str(x)


class Diverged(Exception):
    """A step's loss, a GPU's loss, the gradient norm or the learning rate was not finite.

    Raised by `Trainer.train_step()` before the update: weights, optimizer state, step count
    and loader position are as they were after the last good step, so the caller may stop
    (the usual choice), close the trainer, or reopen the run from its last good checkpoint.
    """

    def __init__(
        self,
        *,
        step: int,
        loss: float,
        grad_norm: float,
        reason: str,
        events: list[Event] | None = None,
        exhausted: bool = False,
    ):
        self.step = step  # the step that diverged (one past the last good one)
        # Every checkpoint the run fell back to diverged on its first step too: none is left
        # that trains on, and only a reset gets the run going again.
        self.exhausted = exhausted
        self.loss = float(loss)  # mean over the GPUs; may be nan or inf
        self.grad_norm = float(grad_norm)  # may be nan or inf
        self.reason = reason  # e.g. "the loss is nan"
        # Events the step raised before it diverged (a scheduled GPU failure's rollback).
        self.events = list(events or [])
        self.message = (
            f"Step {step} diverged: {reason}; the update was not applied "
            f"and the run stopped at step {step - 1}"
        )
        if exhausted:
            self.message += "; no checkpoint is left that trains on: reset the run"
        super().__init__(self.message)

    def event(self) -> Event:
        """The divergence as an event for viewers, with JSON-safe numbers."""
        return Event(
            "diverged",
            self.step - 1,
            self.message,
            {
                "step": self.step,
                "loss": json_number(self.loss),
                "grad_norm": json_number(self.grad_norm),
                "reason": self.reason,
                "stopped_at": self.step - 1,
                "exhausted": self.exhausted,
            },
        )
