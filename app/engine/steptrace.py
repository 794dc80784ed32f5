"""The data-parallel step as lanes: what every GPU does, when, on the simulated hardware.

Every GPU holds the whole model and its own slice of the batch: the batch copied in, a
forward and a backward per microbatch, the gradient all-reduce in buckets beside the last
backward (gradsync.py), the update, and a checkpoint by the GPU that holds the one shard
while the others wait. Durations are the timing model's (timing.py); measured wall times
here ride along.

Faults change the lanes, not the maths: a slow GPU (a straggler) runs its compute k times
longer and the others wait for it at the all-reduce, whose buckets can start only when the
slowest GPU has their gradients; a stalled data loader keeps every GPU waiting before the
copy; a cut link sends its ring hop the longer way round (timing.REROUTE), and the trace's
ring shows the link it took. (A dead GPU rolls the run back: trainer.fail_gpu.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .collectives import RingTrace
from .gradsync import SyncRing, add_grad_sync
from .plan import Plan
from .timing import (
    REROUTE,
    STRAGGLER_FACTOR,
    HardwarePreset,
    checkpoint_seconds,
    checkpoint_writers,
    rails_of,
    step_cost,
)
from .trace import StepTrace, StepTraceBuilder


def plan_shard_holders(plan: Plan) -> list[list[int]]:
    """The GPUs holding each distinct shard of a plan: a stage's tensor shard is held by its
    data-parallel group; with experts, each expert shard by the GPUs with the same EP rank.
    The first GPU of each is the one that writes it to a checkpoint."""
    out = [list(group) for group in plan.dp_groups]
    if plan.ep > 1:
        out += [list(group) for group in plan.expert_dp_groups]
    return out


@dataclass
class Walls:
    """Measured seconds here, to ride along on the events."""

    data: float | None = None
    forward_backward: Sequence[tuple[float, float]] = ()  # per microbatch
    ring: float | None = None
    optimizer: float | None = None
    checkpoint: float | None = None


@dataclass
class Slowdowns:
    """Faults that stretch a step: GPUs whose compute takes `factor` x as long, seconds the
    data loader keeps everyone waiting, and ring positions whose outgoing link is cut (the
    hop takes a longer path, timing.REROUTE)."""

    gpus: Mapping[int, float] = field(default_factory=dict)
    data_stall_s: float = 0.0
    cut: Sequence[int] = ()


FAULT_KINDS = ("dead", "straggler", "data_stall", "link")


@dataclass
class Fault:
    """A fault injected for `steps` steps from step `start`: a dead GPU (`target`, rolled
    back from the last checkpoint), a straggler GPU (`target`, its compute `factor` x as
    long), a stalled data loader (`target` milliseconds of simulated waiting) or a cut link
    (the ring hop out of GPU `target`)."""

    kind: str
    target: int
    start: int
    steps: int = 1
    factor: float = STRAGGLER_FACTOR

    def active(self, step: int) -> bool:
        return self.start <= step < self.start + self.steps


def slowdowns(faults: Sequence[Fault], step: int, ring: Sequence[int]) -> Slowdowns:
    """What the faults active at `step` do to a data-parallel step."""
    now = [f for f in faults if f.active(step)]
    position = {g: i for i, g in enumerate(ring)}
    return Slowdowns(
        gpus={f.target: f.factor for f in now if f.kind == "straggler"},
        data_stall_s=sum(f.target * 1e-3 for f in now if f.kind == "data_stall"),
        cut=sorted({position[f.target] for f in now if f.kind == "link"}),
    )


def data_parallel_trace(
    preset: HardwarePreset,
    *,
    ring: RingTrace,
    server_of: Sequence[int],
    tensors: Sequence[int],
    n_layer: int,
    n_params: int,
    tokens_per_gpu: int,
    batch_bytes_per_gpu: int,
    microbatches: int = 1,
    checkpoint_bytes: int = 0,
    walls: Walls | None = None,
    slow: Slowdowns | None = None,
) -> StepTrace:
    """The lanes of one data-parallel step. `tensors`: elements of each parameter tensor in
    the model's order (the backward finishes them in reverse)."""
    walls = walls or Walls()
    slow = slow or Slowdowns()
    G = len(server_of)
    writers, per_server = checkpoint_writers([list(range(G))], server_of)
    cost = step_cost(
        preset,
        n_params=n_params,
        tokens_per_gpu=tokens_per_gpu,
        batch_bytes_per_gpu=batch_bytes_per_gpu,
        n_layer=n_layer,
        microbatches=microbatches,
    )
    b = StepTraceBuilder(G)
    if slow.data_stall_s > 0:
        b.span("wait", slow.data_stall_s)
    b.span("data", cost.data, wall_s=walls.data)
    t_compute = b.t
    # Lanes in groups that run alike: the healthy GPUs, then each slow one on its own.
    factors = {g: f for g, f in slow.gpus.items() if 0 <= g < G and f != 1.0}
    groups: list[tuple[list[int] | None, float]] = []
    healthy = [g for g in range(G) if g not in factors]
    if not factors:
        groups.append((None, 1.0))
    else:
        if healthy:
            groups.append((healthy, 1.0))
        groups += [([g], f) for g, f in sorted(factors.items())]
    Mb = max(1, microbatches)
    mb_walls = list(walls.forward_backward) or [(None, None)] * Mb
    ends: list[tuple[list[int] | None, float, float]] = []  # (lanes, last backward t0, t1)
    for lanes, f in groups:
        t = t_compute
        last = (t, t)
        for m in range(Mb):
            fw, bw = mb_walls[m] if m < len(mb_walls) else (None, None)
            mb = None if Mb == 1 else m
            b.add_span("forward", t, cost.forward_mb * f, lanes=lanes, wall_s=fw, mb=mb)
            t += cost.forward_mb * f
            b.add_span("backward", t, cost.backward_mb * f, lanes=lanes, wall_s=bw, mb=mb)
            last = (t, t + cost.backward_mb * f)
            t += cost.backward_mb * f
        ends.append((lanes, *last))
    # The buckets need every GPU's gradients: the slowest GPU's backward sets the window,
    # and the others wait for it.
    window = max((w[1:] for w in ends), key=lambda w: w[1])
    for lanes, _, t1 in ends:
        if t1 < window[1]:
            b.add_span("wait", t1, window[1] - t1, lanes=lanes)
    links = [REROUTE.get(k, k) if i in slow.cut else k for i, k in enumerate(ring.links)]
    sync = SyncRing(
        gpus=list(ring.ring),
        links=links,
        elements=ring.elements,
        rails=rails_of(ring.ring, server_of),
        tensors=list(reversed(tensors)),
        wall_s=walls.ring,
    )
    t = add_grad_sync(b, preset, [[sync]] if G > 1 else [], window=window)
    b.add_span("optimizer", t, cost.optimizer, wall_s=walls.optimizer)
    t += cost.optimizer
    if checkpoint_bytes or walls.checkpoint is not None:
        took = checkpoint_seconds(preset, checkpoint_bytes, per_server)
        b.add_span("checkpoint", t, took, lanes=writers, wall_s=walls.checkpoint)
        others = [g for g in range(G) if g not in writers]
        if others:
            b.add_span("wait", t, took, lanes=others)
        t += took
    b.t = t
    return b.done()
