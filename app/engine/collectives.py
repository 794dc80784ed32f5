"""Collectives between simulated GPUs: a real ring all-reduce, pass by pass, with a trace.

The ring all-reduce is done the way NCCL does it: each GPU's buffer is cut into G chunks;
G-1 reduce-scatter passes leave GPU i owning the complete sum of chunk (i+1) mod G; G-1
all-gather passes then hand every finished chunk around the ring. In every pass each GPU
sends exactly one chunk to its right-hand neighbour, so every link carries the same load:
2(G-1)/G of the buffer per GPU, whatever G is.

The maths runs on a (G, G, chunk) view of the buffers, so one pass is one vectorised
add (reduce-scatter) or copy (all-gather) for all G sends at once: simulating 32 GPUs costs
about the same Python overhead as simulating 2.
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
    index: int  # 1-based pass number, 1 .. 2(G-1)
    phase: str  # "reduce_scatter" | "all_gather"
    sends: list[Send]
    # Optional copy of every GPU's buffer after this pass, (G, n), for teaching tools.
    values: np.ndarray | None = None


@dataclass
class RingTrace:
    gpus: int
    elements: int
    itemsize: int
    chunk_bounds: list[tuple[int, int]]  # [start, stop) of each chunk
    passes: list[PassTrace] = field(default_factory=list)

    @property
    def n_passes(self) -> int:
        return len(self.passes)

    def bytes_by_link(self) -> dict[tuple[int, int], int]:
        """Bytes carried by each directed link (src, dst) over the whole all-reduce."""
        out: dict[tuple[int, int], int] = {}
        for p in self.passes:
            for s in p.sends:
                out[(s.src, s.dst)] = out.get((s.src, s.dst), 0) + s.bytes
        return out

    def bytes_sent_by_gpu(self) -> list[int]:
        out = [0] * self.gpus
        for p in self.passes:
            for s in p.sends:
                out[s.src] += s.bytes
        return out

    def bytes_by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.passes:
            for s in p.sends:
                out[s.link] = out.get(s.link, 0) + s.bytes
        return out

    @property
    def bytes_total(self) -> int:
        return sum(s.bytes for p in self.passes for s in p.sends)


def chunk_bounds(n: int, g: int) -> list[tuple[int, int]]:
    """Split n elements into g nearly equal chunks (some empty when n < g)."""
    base, extra = divmod(n, g)
    bounds, start = [], 0
    for c in range(g):
        size = base + (1 if c < extra else 0)
        bounds.append((start, start + size))
        start += size
    return bounds


def ring_allreduce(
    buffers,
    *,
    ring: Sequence[int] | None = None,
    link_kind: Callable[[int, int], str] | None = None,
    op: str = "sum",
    record_values: bool = False,
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
    if op not in ("sum", "mean"):
        raise ValueError("op must be 'sum' or 'mean'")
    g, n = buffers.shape
    ids = list(ring) if ring is not None else list(range(g))
    if len(ids) != g:
        raise ValueError("ring must name one GPU per buffer row")
    bounds = chunk_bounds(n, g)
    sizes = [b - a for a, b in bounds]
    width = max(sizes) if sizes else 0
    itemsize = buffers.dtype.itemsize
    trace = RingTrace(gpus=g, elements=n, itemsize=itemsize, chunk_bounds=bounds)

    # Work in a padded (G, G, width) layout: buf[i, c] is GPU i's copy of chunk c.
    buf = xp.zeros((g, g, width), dtype=buffers.dtype)
    for c, (a, b) in enumerate(bounds):
        buf[:, c, : b - a] = buffers[:, a:b]

    rows = np.arange(g)
    right = (rows + 1) % g
    kinds = [link_kind(ids[i], ids[(i + 1) % g]) if link_kind else "link" for i in range(g)]

    def record(index: int, phase: str, chunks: np.ndarray) -> None:
        sends = [
            Send(
                src=ids[i],
                dst=ids[right[i]],
                chunk=int(chunks[i]),
                elements=sizes[chunks[i]],
                bytes=sizes[chunks[i]] * itemsize,
                link=kinds[i],
            )
            for i in range(g)
        ]
        values = _unpad(buf, bounds, n) if record_values else None
        trace.passes.append(PassTrace(index=index, phase=phase, sends=sends, values=values))

    # Reduce-scatter: in pass k GPU i sends chunk (i - k) mod g; its neighbour adds it in.
    for k in range(g - 1):
        chunks = (rows - k) % g
        buf[right, chunks] += buf[rows, chunks]
        record(k + 1, "reduce_scatter", chunks)
    # Now GPU i holds the full sum of chunk (i + 1) mod g.
    # All-gather: in pass k GPU i forwards chunk (i + 1 - k) mod g; its neighbour copies it.
    for k in range(g - 1):
        chunks = (rows + 1 - k) % g
        buf[right, chunks] = buf[rows, chunks]
        record(g + k, "all_gather", chunks)

    result = _unpad(buf, bounds, n)
    if op == "mean":
        result /= g
        if record_values and trace.passes:
            trace.passes[-1].values = result.copy()
    return result, trace


def _unpad(buf, bounds: list[tuple[int, int]], n: int):
    g = buf.shape[0]
    out = xp.empty((g, n), dtype=buf.dtype)
    for c, (a, b) in enumerate(bounds):
        out[:, a:b] = buf[:, c, : b - a]
    return out


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
