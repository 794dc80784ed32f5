"""Collectives between simulated GPUs: a real ring all-reduce, pass by pass, with a trace.

The ring all-reduce is done the way NCCL does it: each GPU's buffer is cut into G chunks;
G-1 reduce-scatter passes leave GPU i owning the complete sum of chunk (i+1) mod G; G-1
all-gather passes then hand every finished chunk around the ring. In every pass each GPU
sends exactly one chunk to its right-hand neighbour, so every link carries the same load:
2(G-1)/G of the buffer per GPU, whatever G is.

The trace counts the bytes each chunk takes on the wire: the buffer's own itemsize, or
`wire_itemsize` where the simulated cluster sends the numbers in another format (BF16
gradients of a mixed-precision run while the arithmetic here is float32).

The maths runs in place on a (G, G, chunk) view of one padded buffer, so the only copies
are the chunks that really travel; the trace keeps compact per-pass arrays and builds
per-send records only when asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .backend import xp


@dataclass
class Send:
    src: int  # global GPU id
    dst: int
    chunk: int
    elements: int  # real (unpadded) elements in the chunk
    bytes: int
    link: str  # "nvlink" | "leaf" | "spine" (or "link" when no topology is given)


@dataclass
class PassTrace:
    """One pass: ring position i sent chunk `chunks[i]` (`nbytes[i]` bytes) to position i+1."""

    index: int  # 1-based pass number, 1 .. 2(G-1)
    phase: str  # "reduce_scatter" | "all_gather"
    chunks: np.ndarray  # (G,) chunk sent by each ring position
    nbytes: np.ndarray  # (G,) bytes sent by each ring position
    ring: list[int]  # GPU id at each ring position
    links: list[str]  # link kind of each ring position's outgoing hop
    sizes: list[int]  # real elements of each chunk
    # Optional copy of every GPU's buffer after this pass, (G, n), for teaching tools.
    values: np.ndarray | None = None

    @property
    def sends(self) -> list[Send]:
        g = len(self.ring)
        return [
            Send(
                src=self.ring[i],
                dst=self.ring[(i + 1) % g],
                chunk=int(self.chunks[i]),
                elements=self.sizes[int(self.chunks[i])],
                bytes=int(self.nbytes[i]),
                link=self.links[i],
            )
            for i in range(g)
        ]


@dataclass
class RingTrace:
    gpus: int
    elements: int
    itemsize: int
    chunk_bounds: list[tuple[int, int]]  # [start, stop) of each chunk
    ring: list[int] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # kind of each ring position's hop
    passes: list[PassTrace] = field(default_factory=list)

    @property
    def n_passes(self) -> int:
        return len(self.passes)

    def _per_position(self) -> np.ndarray:
        """Bytes sent by each ring position over the whole all-reduce."""
        if not self.passes:
            return np.zeros(self.gpus, dtype=np.int64)
        return np.sum([p.nbytes for p in self.passes], axis=0)

    def bytes_by_link(self) -> dict[tuple[int, int], int]:
        """Bytes carried by each directed link (src, dst) over the whole all-reduce."""
        g, per = self.gpus, self._per_position()
        return {(self.ring[i], self.ring[(i + 1) % g]): int(per[i]) for i in range(g) if g > 1}

    def bytes_sent_by_gpu(self) -> list[int]:
        out = [0] * self.gpus
        for i, b in enumerate(self._per_position()):
            out[self.ring[i]] = int(b)
        return out

    def bytes_by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        if self.gpus > 1:
            for kind, b in zip(self.links, self._per_position(), strict=True):
                out[kind] = out.get(kind, 0) + int(b)
        return out

    @property
    def bytes_total(self) -> int:
        return int(self._per_position().sum())


def chunk_bounds(n: int, g: int) -> list[tuple[int, int]]:
    """Cut n elements into g chunks of ceil(n/g); the last ones are shorter or empty."""
    w = -(-n // g) if n else 0
    return [(min(c * w, n), min((c + 1) * w, n)) for c in range(g)]


def padded_width(n: int, g: int) -> int:
    """Columns a (G, n) buffer needs so that it splits into G equal chunks."""
    return g * (-(-n // g)) if n else 0


def ring_allreduce(
    buffers,
    *,
    ring: Sequence[int] | None = None,
    link_kind: Callable[[int, int], str] | None = None,
    op: str = "sum",
    record_values: bool = False,
    wire_itemsize: int | None = None,
):
    """All-reduce G buffers of n elements, shape (G, n), around a ring.

    `ring` gives the GPU ids in ring order (row i of `buffers` belongs to GPU ring[i]);
    `link_kind(src, dst)` names the link a hop crosses. Returns (result, trace) where
    result has shape (G, n) and every row holds the sum (or mean) of all input rows.
    The input is not modified.
    """
    buffers = xp.asarray(buffers)
    if buffers.ndim != 2:
        raise ValueError("buffers must have shape (G, n)")
    g, n = buffers.shape
    work = xp.zeros((g, padded_width(n, g)), dtype=buffers.dtype)
    work[:, :n] = buffers
    trace = ring_allreduce_(
        work,
        n,
        ring=ring,
        link_kind=link_kind,
        op=op,
        record_values=record_values,
        wire_itemsize=wire_itemsize,
    )
    return work[:, :n], trace


def ring_allreduce_(
    work,
    n: int,
    *,
    ring: Sequence[int] | None = None,
    link_kind: Callable[[int, int], str] | None = None,
    op: str = "sum",
    record_values: bool = False,
    wire_itemsize: int | None = None,
) -> RingTrace:
    """In place: `work` is (G, padded_width(n, G)) with real data in its first n columns.
    `wire_itemsize`: bytes a number takes on the wire (default: the buffer's itemsize)."""
    if op not in ("sum", "mean"):
        raise ValueError("op must be 'sum' or 'mean'")
    g = work.shape[0]
    ids = list(ring) if ring is not None else list(range(g))
    if len(ids) != g:
        raise ValueError("ring must name one GPU per buffer row")
    if work.shape[1] != padded_width(n, g):
        raise ValueError("work must be padded to padded_width(n, G) columns")
    bounds = chunk_bounds(n, g)
    sizes = [b - a for a, b in bounds]
    itemsize = int(wire_itemsize) if wire_itemsize else work.dtype.itemsize
    kinds = [link_kind(ids[i], ids[(i + 1) % g]) if link_kind else "link" for i in range(g)]
    trace = RingTrace(
        gpus=g, elements=n, itemsize=itemsize, chunk_bounds=bounds, ring=ids, links=kinds
    )
    if g == 1:
        return trace
    w = work.shape[1] // g
    buf = xp.reshape(work, (g, g, w))  # buf[i, c] is GPU i's copy of chunk c (a view)
    chunk_bytes = np.asarray(sizes, dtype=np.int64) * itemsize
    rows = np.arange(g)
    right = (rows + 1) % g

    def record(index: int, phase: str, chunks: np.ndarray) -> None:
        values = xp.asarray(work[:, :n]).copy() if record_values else None
        trace.passes.append(
            PassTrace(index, phase, chunks, chunk_bytes[chunks], ids, kinds, sizes, values)
        )

    # Reduce-scatter: in pass k GPU i sends chunk (i - k) mod g; its neighbour adds it in.
    # Each GPU touches its own row only, so the G sends of a pass are G slice adds.
    for k in range(g - 1):
        chunks = (rows - k) % g
        for i in range(g):
            c = chunks[i]
            dst = buf[right[i], c]
            xp.add(dst, buf[i, c], out=dst)
        record(k + 1, "reduce_scatter", chunks)
    # Now GPU i holds the full sum of chunk (i + 1) mod g.
    if op == "mean":
        owned = (rows + 1) % g
        for i in range(g):
            buf[i, owned[i]] /= g
    # All-gather: in pass k GPU i forwards chunk (i + 1 - k) mod g; its neighbour copies it.
    for k in range(g - 1):
        chunks = (rows + 1 - k) % g
        for i in range(g):
            c = chunks[i]
            buf[right[i], c] = buf[i, c]
        record(g + k, "all_gather", chunks)
    return trace


def naive_allreduce_busiest_link_bytes(g: int, n: int, itemsize: int) -> int:
    """Everyone sends its whole buffer to GPU 0, which sends the total back to everyone.

    GPU 0's incoming link carries (G-1) full buffers: the busiest link, growing with G.
    """
    return (g - 1) * n * itemsize


def ring_busiest_link_bytes(g: int, n: int, itemsize: int) -> int:
    """Each directed ring link carries 2(G-1) chunks of about n/G elements."""
    if g <= 1:
        return 0
    largest = -(-n // g)
    return 2 * (g - 1) * largest * itemsize


def ring_allreduce_groups_(a) -> list[int]:
    """Sum in place across axis 0 of `a`, shaped (g, K, n): K independent groups of g members
    each, every group its own ring (member i sends to member i + 1).

    The same reduce-scatter and all-gather passes as `ring_allreduce_`, run for all K groups
    at once (tensor-parallel groups all join their partial results at the same moment).
    Every member ends with the same bits. Returns the elements of each of the g chunks.
    """
    g, _, n = a.shape
    bounds = chunk_bounds(n, g)
    if g == 1:
        return [n]
    for k in range(g - 1):
        for i in range(g):
            lo, hi = bounds[(i - k) % g]
            if hi > lo:
                dst = a[(i + 1) % g, :, lo:hi]
                xp.add(dst, a[i, :, lo:hi], out=dst)
    for k in range(g - 1):
        for i in range(g):
            lo, hi = bounds[(i + 1 - k) % g]
            if hi > lo:
                a[(i + 1) % g, :, lo:hi] = a[i, :, lo:hi]
    return [hi - lo for lo, hi in bounds]
