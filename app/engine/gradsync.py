"""The gradient all-reduce of a step, in buckets, beside the backward pass: what the lanes show.

The numbers come from the real ring all-reduce the trainer ran over the whole gradient buffer
(collectives.py). The simulated cluster sends those gradients as PyTorch DDP does: cut into
buckets (timing.py rule 5), each bucket all-reduced by its own ring as soon as the backward
pass has finished its gradients. A sum is taken element by element, so cutting the buffer
into buckets changes when bytes travel, not what arrives.

On the lanes a bucket whose all-reduce starts while the backward pass is still running is an
`allreduce_hidden` ring (KINDS marks it `overlaps`: it runs on the GPU's communication stream
beside compute); if it is still running when the backward ends, the lane shows
`allreduce_wait` until it is done; buckets that start after the backward are `allreduce`
rings on the lane itself. So the lane's own events still add up to the step, and its
all-reduce group is the exposed part only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .collectives import chunk_bounds
from .timing import (
    GRAD_WIRE_BYTES,
    HardwarePreset,
    bucket_tensors,
    overlap_buckets,
    ready_times,
    ring_seconds_by_pass,
    uniform_buckets,
)
from .trace import StepTraceBuilder


@dataclass
class SyncRing:
    """One group's gradient ring: its GPUs in ring order, the link each hop crosses, the
    gradient elements it reduces and, where known, the tensors they come in (elements each,
    in the order the backward pass finishes them)."""

    gpus: list[int]
    links: list[str]
    elements: int
    rails: int = 1
    tensors: Sequence[int] | None = None
    wall_s: float | None = None


@dataclass
class BucketRun:
    ring: SyncRing
    elements: list[int]  # of each bucket
    starts: list[float]
    passes: list[list[float]]  # each bucket's pass seconds

    @property
    def durations(self) -> list[float]:
        return [sum(p) for p in self.passes]

    @property
    def end(self) -> float:
        return self.starts[-1] + self.durations[-1] if self.starts else 0.0


def bucket_elements(ring: SyncRing) -> list[int]:
    """Elements of each bucket, in the order they are sent."""
    if ring.elements <= 0:
        return []
    if ring.tensors is not None:
        sizes = [int(n) * GRAD_WIRE_BYTES for n in ring.tensors]
        return [sum(int(ring.tensors[i]) for i in b) for b in bucket_tensors(sizes)]
    nbytes = uniform_buckets(ring.elements * GRAD_WIRE_BYTES)
    out = [int(b // GRAD_WIRE_BYTES) for b in nbytes]
    out[-1] += ring.elements - sum(out)
    return out


def bucket_passes(preset: HardwarePreset, ring: SyncRing, elements: int) -> list[float]:
    """Pass seconds of one bucket's ring all-reduce (its chunks cut as the ring cuts any
    buffer, each number BF16 on the wire)."""
    g = len(ring.gpus)
    chunks = [(hi - lo) * GRAD_WIRE_BYTES for lo, hi in chunk_bounds(elements, g)]
    return ring_seconds_by_pass(preset, ring.links, chunks, ring.rails)


def schedule(
    preset: HardwarePreset,
    ring: SyncRing,
    *,
    window: tuple[float, float],
    not_before: float,
) -> BucketRun:
    """When each of the ring's buckets is all-reduced. The backward `window` produces the
    ring's gradients through its layers; a bucket is ready when its last element is
    (timing.ready_times), not before `not_before`, and waits for the one before it."""
    elements = bucket_elements(ring)
    t0, t1 = window
    ready = [max(not_before, t) for t in ready_times([float(n) for n in elements], t0, t1)]
    passes = [bucket_passes(preset, ring, n) for n in elements]
    plan = overlap_buckets(ready, [sum(p) for p in passes], t1)
    return BucketRun(ring, elements, plan.starts, passes)


def add_grad_sync(
    b: StepTraceBuilder,
    preset: HardwarePreset,
    phases: Sequence[Sequence[SyncRing]],
    *,
    window: tuple[float, float],
) -> float:
    """Lay out the gradient all-reduce of one set of lanes. `phases` run one after another on
    each GPU's communication stream (a stage's dense gradients, then its experts'); the rings
    of one phase cover different GPUs and run at once. Returns when the last one is done
    (the backward's end if there is nothing to send)."""
    t_end = window[1]
    if not phases:
        return t_end
    not_before = window[0]
    end = t_end
    for phase in phases:
        runs = [schedule(preset, r, window=window, not_before=not_before) for r in phase]
        phase_end = max((run.end for run in runs if run.starts), default=not_before)
        phase_end = max(phase_end, t_end) if any(run.starts for run in runs) else not_before
        for run in runs:
            _draw(b, run, t_end, max(t_end, not_before), phase_end)
        not_before = max(not_before, phase_end)
        end = max(end, phase_end)
    return end


def _draw(
    b: StepTraceBuilder, run: BucketRun, t_end: float, lane_from: float, phase_end: float
) -> None:
    """The ring's buckets; on its lanes, from `lane_from` (where their own events reach) to
    `phase_end`, what they wait for."""
    ring = run.ring
    total = sum(run.elements) or 1
    main = lane_from
    for n, start, passes in zip(run.elements, run.starts, run.passes, strict=True):
        wall = None if ring.wall_s is None else ring.wall_s * n / total
        dur = sum(passes)
        chunks = [(hi - lo) * GRAD_WIRE_BYTES for lo, hi in chunk_bounds(n, len(ring.gpus))]
        hidden = start < t_end
        b.add_ring(
            "allreduce_hidden" if hidden else "allreduce",
            start,
            passes,
            ring=ring.gpus,
            links=ring.links,
            chunk_bytes=chunks,
            wall_s=wall,
        )
        if start + dur > main:
            if hidden:
                b.add_span("allreduce_wait", main, start + dur - main, lanes=ring.gpus)
            elif start > main:
                b.add_span("wait", main, start - main, lanes=ring.gpus)
            main = start + dur
    if main < phase_end:
        b.add_span("wait", main, phase_end - main, lanes=ring.gpus)
