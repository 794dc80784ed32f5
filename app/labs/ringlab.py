"""The ring all-reduce lab: a small, readable all-reduce, pass by pass, from the engine itself.

Each of G GPUs holds G small whole numbers, one per chunk, so a person can add them up in
their head. The passes, the values after each pass and the bytes on each link all come from
`app.engine.collectives.ring_allreduce(record_values=True)`: the lab shows the engine's own
ring, it does not re-implement it. Numbers are float32 (4 bytes), as gradients often are.

The scaling comparison sets the ring against the naive way (everyone sends to GPU 0, which
sends the total back) for a stated gradient size, using the engine's busiest-link formulas.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from app.engine.collectives import (
    naive_allreduce_busiest_link_bytes,
    ring_allreduce,
    ring_busiest_link_bytes,
)

MIN_GPUS = 2
MAX_GPUS = 16
# The scaling chart's gradient buffer: 1 GB, about a 500M-parameter model's bf16 gradients.
SCALING_BUFFER_BYTES = 1_000_000_000
SCALING_ITEMSIZE = 2


@dataclass
class LabSend:
    src: int
    dst: int
    chunk: int
    bytes: int


@dataclass
class LabPass:
    index: int  # 1 .. 2(G-1)
    phase: str  # "reduce_scatter" | "all_gather"
    sends: list[LabSend]
    values: list[list[int]]  # values[gpu][chunk] after this pass
    # coverage[gpu][chunk]: how many GPUs' numbers are summed into that cell (G = complete)
    coverage: list[list[int]]


@dataclass
class LinkLoad:
    src: int
    dst: int
    bytes: int


@dataclass
class ScalingPoint:
    gpus: int
    ring_busiest_bytes: int
    naive_busiest_bytes: int


@dataclass
class RingLab:
    gpus: int
    seed: int
    chunks: int
    itemsize: int
    chunk_bytes: int
    initial: list[list[int]]  # initial[gpu][chunk]
    totals: list[int]  # totals[chunk]: what every GPU must end up holding
    passes: list[LabPass]
    # After reduce-scatter, GPU i owns the complete sum of chunk owner_chunk[i].
    owner_chunk: list[int]
    per_link_bytes: list[LinkLoad]
    ring_busiest_bytes: int
    naive_busiest_bytes: int  # the same numbers, all sent to GPU 0 and back
    scaling_buffer_bytes: int
    scaling: list[ScalingPoint]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def scaling_curve(
    buffer_bytes: int = SCALING_BUFFER_BYTES, itemsize: int = SCALING_ITEMSIZE
) -> list[ScalingPoint]:
    n = buffer_bytes // itemsize
    return [
        ScalingPoint(
            gpus=g,
            ring_busiest_bytes=ring_busiest_link_bytes(g, n, itemsize),
            naive_busiest_bytes=naive_allreduce_busiest_link_bytes(g, n, itemsize),
        )
        for g in range(MIN_GPUS, MAX_GPUS + 1)
    ]


def run_ring_lab(gpus: int = 6, seed: int = 1) -> RingLab:
    if not MIN_GPUS <= gpus <= MAX_GPUS:
        raise ValueError(f"gpus must be between {MIN_GPUS} and {MAX_GPUS}")
    rng = np.random.default_rng(seed)
    # One element per chunk, 1..9: sums stay small enough to read at a glance.
    initial = rng.integers(1, 10, size=(gpus, gpus)).astype(np.float32)
    result, trace = ring_allreduce(initial, record_values=True)
    itemsize = trace.itemsize
    # Which GPUs' numbers sit in each cell: run the same engine ring on GPU i holding 2**i
    # everywhere; each cell's sum is then a bit mask of its contributors (exact in float64).
    marks = np.repeat((2.0 ** np.arange(gpus))[:, None], gpus, axis=1)
    _, mask_trace = ring_allreduce(marks, record_values=True)
    coverage = [
        [[int(v).bit_count() for v in row] for row in mp.values] for mp in mask_trace.passes
    ]
    passes = [
        LabPass(
            index=p.index,
            phase=p.phase,
            sends=[LabSend(s.src, s.dst, s.chunk, s.bytes) for s in p.sends],
            values=_ints(p.values),
            coverage=cov,
        )
        for p, cov in zip(trace.passes, coverage, strict=True)
    ]
    rs_last = [p for p in trace.passes if p.phase == "reduce_scatter"][-1]
    totals = initial.sum(axis=0)
    # Every number is at least 1, so a partial sum is always below the total: the one chunk
    # whose value equals its total is the chunk that GPU owns. Read from the values, not a rule.
    owner = [[c for c in range(gpus) if rs_last.values[g, c] == totals[c]][0] for g in range(gpus)]
    links = [LinkLoad(src, dst, b) for (src, dst), b in sorted(trace.bytes_by_link().items())]
    n = trace.elements
    return RingLab(
        gpus=gpus,
        seed=seed,
        chunks=len(trace.chunk_bounds),
        itemsize=itemsize,
        chunk_bytes=itemsize * max(b - a for a, b in trace.chunk_bounds),
        initial=_ints(initial),
        totals=[int(round(v)) for v in result[0]],
        passes=passes,
        owner_chunk=owner,
        per_link_bytes=links,
        ring_busiest_bytes=max(link.bytes for link in links),
        naive_busiest_bytes=naive_allreduce_busiest_link_bytes(gpus, n, itemsize),
        scaling_buffer_bytes=SCALING_BUFFER_BYTES,
        scaling=scaling_curve(),
    )


def _ints(values: Any) -> list[list[int]]:
    return [[int(round(v)) for v in row] for row in np.asarray(values)]
