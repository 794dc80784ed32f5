"""Which piece of which parameter a GPU holds under a plan, and how the pieces fit together.

Layers go to pipeline stages in contiguous blocks (stage 0 also holds the embeddings, the
last stage the final norm and head). Within a stage, the tensor-parallel split follows
Megatron-LM (see stage.py): column-parallel weights (the fused qkv projection, split by heads
so each rank holds the q, k and v columns of its heads; the MLP's w1 and b1) are cut along
their output axis, row-parallel ones (attention's wo, the MLP's w2) along their input axis;
expert weights are cut the same way and, over the expert-parallel group, by expert.
Everything else is replicated.

A stage keeps each parameter as one (R, *shard) array, one row per GPU in the stage's row
order (tensor rank, then data-parallel rank: row t * dp + d); the row of GPU (d, s, t) holds
the shard of tensor rank t and expert rank d % ep. `gather` puts the full parameter back
together from one copy of each distinct shard: checkpoints store full parameters, so a run
can be resumed under another plan.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .backend import to_numpy
from .plan import Plan

Array = Any

# name suffix -> (axis cut by tensor rank, is it the fused q|k|v axis)
_TP: dict[str, tuple[int, bool]] = {
    "attn.wqkv": (1, True),
    "attn.bqkv": (0, True),
    "attn.wo": (0, False),
    "mlp.w1": (1, False),
    "mlp.b1": (0, False),
    "mlp.w2": (0, False),
    "moe.w1": (2, False),
    "moe.w2": (1, False),
}
_EP = ("moe.w1", "moe.w2")  # cut by expert (axis 0) over the EP group


def _suffix(name: str) -> str:
    return ".".join(name.split(".")[-2:])


def tp_split(name: str) -> tuple[int, bool] | None:
    return _TP.get(_suffix(name))


def ep_split(name: str) -> bool:
    return _suffix(name) in _EP


def stage_of(name: str, n_layer: int, pp: int) -> int:
    """The pipeline stage that holds parameter `name`."""
    if name.startswith("layers."):
        return int(name.split(".")[1]) // (n_layer // pp)
    if name in ("wte", "wpe"):
        return 0
    return pp - 1


def stage_layers(s: int, n_layer: int, pp: int) -> range:
    per = n_layer // pp
    return range(s * per, (s + 1) * per)


def _cut(a: Array, axis: int, fused: bool, parts: int, i: int) -> Array:
    if fused:
        shape = a.shape
        a3 = a.reshape(*shape[:axis], 3, shape[axis] // 3, *shape[axis + 1 :])
        w = a3.shape[axis + 1] // parts
        piece = np.take(a3, np.arange(i * w, (i + 1) * w), axis=axis + 1)
        return piece.reshape(*shape[:axis], 3 * w, *shape[axis + 1 :])
    w = a.shape[axis] // parts
    return np.take(a, np.arange(i * w, (i + 1) * w), axis=axis)


def _join(pieces: list[Array], axis: int, fused: bool) -> Array:
    if fused:
        shape = pieces[0].shape
        split = [p.reshape(*shape[:axis], 3, shape[axis] // 3, *shape[axis + 1 :]) for p in pieces]
        whole = np.concatenate(split, axis=axis + 1)
        return whole.reshape(*shape[:axis], -1, *shape[axis + 1 :])
    return np.concatenate(pieces, axis=axis)


def shard(name: str, full: Array, plan: Plan, t: int, e: int) -> Array:
    """The piece of full parameter `name` held by tensor rank t, expert rank e."""
    a = to_numpy(full)
    if ep_split(name) and plan.ep > 1:
        a = _cut(a, 0, False, plan.ep, e)
    cut = tp_split(name)
    if cut is not None and plan.tp > 1:
        a = _cut(a, cut[0], cut[1], plan.tp, t)
    return a


def shard_shape(name: str, shape: tuple[int, ...], plan: Plan) -> tuple[int, ...]:
    return shard(name, np.empty(shape, dtype=np.int8), plan, 0, 0).shape


def stage_rows(name: str, full: Array, plan: Plan) -> list[Array]:
    """Each row's shard of `name` for a stage, in row order (t * dp + d)."""
    return [shard(name, full, plan, t, d % plan.ep) for t in range(plan.tp) for d in range(plan.dp)]


def gather(name: str, rows: Array, plan: Plan, copy: int = 0) -> np.ndarray:
    """The full parameter from a stage's (R, *shard) array, as data-parallel copy `copy`
    holds it: each copy is `ep` data-parallel ranks, one for each expert shard."""
    dp = plan.dp
    if not 0 <= copy < dp // plan.ep:
        raise ValueError(f"copy {copy} of {dp // plan.ep}")
    first = copy * plan.ep

    def row(t: int, e: int) -> np.ndarray:
        return to_numpy(rows[t * dp + first + e])

    cut = tp_split(name)
    by_t = []
    for t in range(plan.tp if cut is not None else 1):
        if ep_split(name) and plan.ep > 1:
            by_t.append(np.concatenate([row(t, e) for e in range(plan.ep)], axis=0))
        else:
            by_t.append(row(t, 0))
    if cut is None or plan.tp == 1:
        return by_t[0].copy()
    return _join(by_t, cut[0], cut[1])


def distinct_rows(name: str, plan: Plan) -> list[int]:
    """Rows of a stage holding one copy of each distinct shard of `name` (for norms)."""
    ts = range(plan.tp) if tp_split(name) is not None else range(1)
    es = range(plan.ep) if ep_split(name) else range(1)
    return [t * plan.dp + e for t in ts for e in es]
