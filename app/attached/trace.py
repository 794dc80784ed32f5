"""An attached job's measured step as the scene's own messages: its ranks as a cluster, each
rank's lane of measured times, and the gradient all-reduce it really made as the ring."""

from __future__ import annotations

from typing import Any

from app.engine.cluster import build_topology
from app.engine.config import RunConfig
from app.protocol import (
    LinkLoadMsg,
    RankStep,
    RingMsg,
    TraceMsg,
    TraceRingMsg,
    TraceSpanMsg,
)


def _chunks(total: int, parts: int) -> list[int]:
    """`total` bytes cut into `parts` chunks as even as they go (a ring all-reduce's chunks)."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def topology_for(world_size: int, nodes: int) -> dict[str, Any]:
    """The job's ranks as the scene's cluster: `nodes` servers of world_size / nodes ranks
    each (torchrun starts the same number on every node), under one leaf switch."""
    if nodes < 1 or world_size % nodes:
        nodes = 1
    config = RunConfig(gpus=world_size, servers=nodes, leaves=1, spines=1, batch_size=world_size)
    return build_topology(config).to_dict()


def step_trace(reports: dict[int, RankStep], world: int, links: list[str]) -> TraceMsg:
    """The step as lanes, one per rank, from what each rank measured.

    Each lane runs its own data, forward and backward compute (the backward call less the
    all-reduce the rank waited for after it). The gradient all-reduce cannot finish before
    the last rank has joined it, so ranks that got there first wait; the ring then takes the
    shortest wait any rank measured after its backward (the collective itself), followed by
    each rank's optimizer. All-reduce time a rank spent while still computing its backward
    (earlier DDP buckets) runs beside its compute."""
    spans: list[TraceSpanMsg] = []
    ends: dict[int, float] = {}
    exposed: list[float] = []
    for rank, r in reports.items():
        wait = min(r.allreduce_exposed_s, r.backward_s)
        compute = r.backward_s - wait
        t = 0.0
        for kind, dur in (("data", r.data_s), ("forward", r.forward_s), ("backward", compute)):
            if dur > 0:
                spans.append(TraceSpanMsg(kind=kind, t0=t, dur=dur, lanes=[rank], wall_s=dur))
            t += dur
        hidden = max(0.0, r.allreduce_s - wait)
        if hidden > 0:
            at = max(r.data_s + r.forward_s, t - hidden)
            spans.append(
                TraceSpanMsg(
                    kind="allreduce_hidden", t0=at, dur=t - at, lanes=[rank], wall_s=hidden
                )
            )
        ends[rank] = t
        if r.allreduce_bytes > 0:
            exposed.append(wait)
    joined = max(ends.values(), default=0.0)
    rings: list[TraceRingMsg] = []
    ring_s = 0.0
    nbytes = max((r.allreduce_bytes for r in reports.values()), default=0)
    if world > 1 and nbytes > 0:
        ring_s = min(exposed) if exposed else 0.0
        passes = 2 * (world - 1)
        rings.append(
            TraceRingMsg(
                kind="allreduce",
                t0=joined,
                pass_s=[(ring_s / passes, passes)],
                ring=list(range(world)),
                links=links,
                chunk_bytes=_chunks(nbytes, world),
                wall_s=ring_s,
            )
        )
    step_end = 0.0
    lane_ends: dict[int, float] = {}
    for rank, r in reports.items():
        if ends[rank] < joined:
            spans.append(
                TraceSpanMsg(kind="wait", t0=ends[rank], dur=joined - ends[rank], lanes=[rank])
            )
        t = joined + ring_s
        if r.optimizer_s > 0:
            spans.append(
                TraceSpanMsg(
                    kind="optimizer", t0=t, dur=r.optimizer_s, lanes=[rank], wall_s=r.optimizer_s
                )
            )
        lane_ends[rank] = t + r.optimizer_s
        step_end = max(step_end, lane_ends[rank])
    for rank in range(world):
        end = lane_ends.get(rank, 0.0)
        if end < step_end:  # a rank done early, or one whose report never came
            spans.append(TraceSpanMsg(kind="wait", t0=end, dur=step_end - end, lanes=[rank]))
    return TraceMsg(gpus=world, step_s=step_end, spans=spans, rings=rings)


def ring_figures(nbytes: int, elements: int, world: int, links: list[str]) -> RingMsg:
    """What a ring all-reduce of the job's gradient bytes sends: 2(G-1) passes, each moving
    one chunk out of every rank."""
    passes = 2 * (world - 1)
    chunk = -(-nbytes // world) if world else 0
    per_gpu = passes * chunk
    by_kind: dict[str, int] = {}
    for kind in links:
        by_kind[kind] = by_kind.get(kind, 0) + 1
    return RingMsg(
        passes=passes,
        gpus=world,
        elements=elements,
        chunk_bytes=chunk,
        bytes_total=per_gpu * world,
        bytes_per_gpu=per_gpu,
        busiest_link_bytes=per_gpu,
        links=[LinkLoadMsg(kind=k, hops=n, bytes=n * per_gpu) for k, n in by_kind.items()],
    )
