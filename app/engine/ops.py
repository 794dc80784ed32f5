"""The transformer's kernels, forward and backward, written once for every way a step runs.

The replicated model (model.py: every GPU holds a whole copy, all copies in one batched call)
and the sharded stages (stage.py: each GPU holds its shard of a layer, Megatron style) are the
same maths cut differently, so they share these kernels: embedding, layer norm, softmax,
causal attention, the MLP and its GELU, the output softmax and cross-entropy, and the
mixture-of-experts router. Every array has a leading row axis R, one row per simulated GPU
(or per expert instance), and every kernel works on all rows at once with batched matmuls.

Speed matters because the run is live, so the kernels take the buffers they write (`out=`
and friends), work in place, and take sums as matmuls with a vector of ones or of 1/n (BLAS
does them far faster than numpy's reductions over short rows). Where the buffers come from is
the caller's choice, through a `Space`: the replicated model hands out a workspace that is
allocated once and reused every step; a stage hands out fresh arrays, because it keeps each
microbatch's activations until that microbatch's backward pass.

A `Space` also says how sums along rows are taken. One matrix-vector product over every row
of every GPU stacked is the fastest, but BLAS may round a row differently depending on where
it sits in a big matrix, and GPUs of a tensor-parallel group that hold the same numbers must
compute the same bits (the tests check that their copies are bit-identical). So a stage's
space takes one product per GPU (`per_row=True`); the replicated model's copies only ever
meet through the all-reduce, and take the stacked product.

Gradients are written into the arrays given (`add=False`) or added to them (`add=True`: a
stage accumulates its microbatches in place).

Shapes in comments, in the field's names: R rows, B sequences per row, T tokens, N = B * T
positions, C = n_embd, n_head heads (of the row's shard), D = C / n_head, F = 4 * C (or the
row's shard of it), V = vocab_size, X experts, K = top_k.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .backend import xp

Array = Any  # an array of the backend namespace
Reduce = Callable[[Array], None] | None  # sums a row-parallel product over its TP group

GELU_K = math.sqrt(2.0 / math.pi)
GELU_C = 0.044715
GELU_CAP = 80.0  # the largest exponent the GELU's sigmoid takes (see gelu)
LN_EPS = 1e-5


class Space:
    """Scratch buffers and constant vectors for the kernels, and how they sum along rows.

    This one allocates a fresh buffer on every request; model.py's workspace hands back the
    same one each time. A kernel's scratch lives until the kernel returns: a kernel that
    calls another uses other names for what it still holds.
    """

    def __init__(self, dtype: Any, *, per_row: bool) -> None:
        self.dtype = dtype
        self.per_row = per_row
        self._const: dict[tuple[str, int], Array] = {}

    def scratch(self, name: str, shape: tuple[int, ...]) -> Array:
        return xp.empty(shape, dtype=self.dtype)

    def _vector(self, kind: str, n: int) -> Array:
        v = self._const.get((kind, n))
        if v is None:
            if kind == "mask":  # additive causal mask: position t sees positions <= t only
                v = xp.asarray(np.triu(np.full((n, n), -np.inf), k=1), dtype=self.dtype)
            else:
                fill = {"ones": 1.0, "mean": 1.0 / n, "cap": GELU_CAP}[kind]
                v = xp.full((n,), fill, dtype=self.dtype)
            self._const[(kind, n)] = v
        return v

    def ones(self, n: int) -> Array:
        return self._vector("ones", n)

    def cap(self, n: int) -> Array:
        """A vector of GELU_CAP: numpy's minimum against a row is ~3x faster than against a
        scalar, for the same numbers."""
        return self._vector("cap", n)

    def mean(self, n: int) -> Array:
        """A vector of 1/n: a row's dot with it is the row's mean."""
        return self._vector("mean", n)

    def causal_mask(self, T: int) -> Array:
        return self._vector("mask", T)

    def rowdot(self, z: Array, w: Array, out: Array) -> None:
        """out[..., 0] = z[..., :] @ w for every row of z (contiguous), out shaped z[..., :1]."""
        n = z.shape[-1]
        if not self.per_row:
            xp.matmul(xp.reshape(z, (-1, n)), w, out=xp.reshape(out, (-1,)))
            return
        for r in range(z.shape[0]):  # each GPU's rows as one product of the same shape
            xp.matmul(xp.reshape(z[r], (-1, n)), w, out=xp.reshape(out[r], (-1,)))


def _t(a: Array) -> Array:
    return xp.swapaxes(a, -1, -2)


def colsum(z: Array, out: Array, sp: Space, add: bool = False) -> None:
    """out (R, K) = (or +=) the sum of z (R, N, K) over N: ones (N,) @ z, one product per row."""
    ones = sp.ones(z.shape[1])
    if add:
        out += xp.matmul(ones, z)
    else:
        xp.matmul(ones, z, out=out)


def matmul_into(a: Array, b: Array, out: Array, add: bool = False) -> None:
    if add:
        out += xp.matmul(a, b)
    else:
        xp.matmul(a, b, out=out)


def linear_backward(
    dy: Array,
    x: Array,
    w: Array,
    dw: Array,
    db: Array | None,
    dx: Array | None,
    sp: Space,
    add: bool = False,
) -> None:
    """Of y = x @ w (+ b): dw, db from dy, and dx = dy @ w^T (skipped when dx is None)."""
    matmul_into(_t(x), dy, dw, add)  # (R, Cin, Cout)
    if db is not None:
        colsum(dy, db, sp, add)
    if dx is not None:
        xp.matmul(dy, _t(w), out=dx)


# ------------------------------------------------------------------------- embeddings
def embed(wte: Array, wpe: Array, idx: Array, out: Array) -> None:
    """out (R, N, C) = each row's token embeddings of idx (R, B, T) plus position embeddings."""
    R, V, C = wte.shape
    _, B, T = idx.shape
    # Offsets turn (row, token id) into a row of the (R * V, C) stacked table.
    rows = xp.reshape(idx, (R, B * T)) + xp.reshape(xp.arange(R) * V, (R, 1))  # (R, N)
    xp.take(xp.reshape(wte, (R * V, C)), rows, axis=0, out=out)
    xp.reshape(out, (R, B, T, C))[...] += wpe[:, None, :T, :]


def embed_backward(dx: Array, idx: Array, dwte: Array, dwpe: Array, *, add: bool = False) -> None:
    """Position rows get the sum over the batch; token rows the scatter of dx (R, N, C)."""
    R, B, T = idx.shape
    C = dx.shape[-1]
    per_pos = xp.sum(xp.reshape(dx, (R, B, T, C)), axis=1)  # (R, T, C)
    if add:
        dwpe[:, :T, :] += per_pos
    else:
        dwpe[:, T:, :] = 0
        dwpe[:, :T, :] = per_pos
        dwte[...] = 0
    # Indexed by (row, token) rather than through a reshape, so the scatter also lands when
    # dwte is a strided view (the replicated engine's flat all-reduce buffer).
    rep = xp.repeat(xp.arange(R), B * T)
    xp.add_at(dwte, (rep, xp.reshape(idx, (R * B * T,))), xp.reshape(dx, (R * B * T, C)))


# ------------------------------------------------------------------------- layer norm
def layer_norm(
    x: Array, g: Array, b: Array, *, out: Array, xhat: Array, rstd: Array, sp: Space
) -> None:
    """out = g * xhat + b with xhat = (x - mean) / sqrt(var + eps) over C; keeps xhat, rstd."""
    C = x.shape[-1]  # x, out, xhat: (R, N, C); g, b: (R, C); rstd: (R, N, 1)
    mu = sp.scratch("ln.mu", rstd.shape)
    sp.rowdot(x, sp.mean(C), mu)
    xp.subtract(x, mu, out=xhat)
    sq = sp.scratch("ln.sq", x.shape)
    xp.multiply(xhat, xhat, out=sq)
    sp.rowdot(sq, sp.mean(C), rstd)
    rstd += LN_EPS
    xp.sqrt(rstd, out=rstd)
    xp.divide(1.0, rstd, out=rstd)
    xhat *= rstd
    xp.multiply(xhat, g[:, None, :], out=out)
    out += b[:, None, :]


def layer_norm_backward(
    dh: Array,
    g: Array,
    xhat: Array,
    rstd: Array,
    dg: Array,
    db: Array,
    dx: Array,
    sp: Space,
    add: bool = False,
) -> None:
    """Gain and bias gradients into dg, db; the input gradient is ADDED into dx (the residual
    stream's gradient). dh (R, N, C) is consumed."""
    C = dh.shape[-1]
    colsum(dh, db, sp, add)
    t = sp.scratch("ln.t", dh.shape)
    xp.multiply(dh, xhat, out=t)
    colsum(t, dg, sp, add)
    dh *= g[:, None, :]  # dh now holds d(loss)/d(xhat)
    # dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    m1 = sp.scratch("ln.m1", rstd.shape)
    m2 = sp.scratch("ln.m2", rstd.shape)
    sp.rowdot(dh, sp.mean(C), m1)
    xp.multiply(dh, xhat, out=t)
    sp.rowdot(t, sp.mean(C), m2)
    xp.multiply(xhat, m2, out=t)
    dh -= t
    dh -= m1
    dh *= rstd
    dx += dh


def norm(
    x: Array,
    P: dict[str, Array],
    name: str,
    sp: Space,
    *,
    out: Array | None = None,
    xhat: Array | None = None,
    rstd: Array | None = None,
) -> tuple[Array, Array, Array]:
    """The layer norm called `name` (gain P[name + ".g"], bias P[name + ".b"]) of x (R, N, C).
    Writes into out, xhat and rstd, each allocated when not given; returns the three."""
    out = xp.empty_like(x) if out is None else out
    xhat = xp.empty_like(x) if xhat is None else xhat
    rstd = xp.empty((*x.shape[:-1], 1), dtype=x.dtype) if rstd is None else rstd
    layer_norm(x, P[name + ".g"], P[name + ".b"], out=out, xhat=xhat, rstd=rstd, sp=sp)
    return out, xhat, rstd


def norm_backward(
    dh: Array,
    P: dict[str, Array],
    G: dict[str, Array],
    name: str,
    xhat: Array,
    rstd: Array,
    dx: Array,
    sp: Space,
    add: bool = False,
) -> None:
    """layer_norm_backward for the layer norm called `name`, its gradients into G."""
    g, dg, db = P[name + ".g"], G[name + ".g"], G[name + ".b"]
    layer_norm_backward(dh, g, xhat, rstd, dg, db, dx, sp, add)


# ---------------------------------------------------------------------------- softmax
def softmax_(z: Array, sp: Space) -> None:
    """Softmax over the last axis, in place, shifted by each row's maximum."""
    row = sp.scratch("softmax.row", (*z.shape[:-1], 1))
    xp.max(z, axis=-1, keepdims=True, out=row)
    z -= row
    xp.exp(z, out=z)
    sp.rowdot(z, sp.ones(z.shape[-1]), row)
    xp.divide(1.0, row, out=row)
    z *= row


def softmax_backward_(dp: Array, p: Array, sp: Space) -> None:
    """dp becomes the gradient of the scores: p * (dp - sum(p * dp)). p is consumed."""
    row = sp.scratch("softmax.row", (*p.shape[:-1], 1))
    dp *= p
    sp.rowdot(dp, sp.ones(p.shape[-1]), row)
    p *= row
    dp -= p


def attention_softmax_(att: Array, sp: Space) -> bool:
    """Causal attention softmax of att (R, B, n_head, T, T) in place, shifted by each head's
    block maximum.

    Any shift gives the same softmax; a row maximum is the usual choice, but numpy is slow at
    maxima over rows of only T entries, while one maximum per (T, T) block is cheap and still
    rules out overflow. A row whose own maximum sits more than ~80 below its block's could
    underflow; then this returns False (att is spoilt) and the caller redoes it exactly.
    """
    R, B, H, T, _ = att.shape
    blk = sp.scratch("att.blk", (R, B, H, 1, 1))
    xp.max(xp.reshape(att, (-1, T * T)), axis=-1, keepdims=True, out=xp.reshape(blk, (-1, 1)))
    att -= blk
    xp.exp(att, out=att)
    row = sp.scratch("att.row", (R, B, H, T, 1))
    sp.rowdot(att, sp.ones(T), row)
    if not bool(xp.min(row) > 1e-30):
        return False
    xp.divide(1.0, row, out=row)
    att *= row
    return True


# -------------------------------------------------------------------------- attention
def split_heads(qkv: Array, B: int, T: int, H: int) -> tuple[Array, Array, Array]:
    """Views q, k, v (R, B, n_head, T, D) into a fused projection buffer (R, N, 3 C')."""
    R = qkv.shape[0]
    D = qkv.shape[-1] // (3 * H)
    v6 = xp.reshape(qkv, (R, B, T, 3, H, D))
    q, k, v = (xp.permute_dims(v6[:, :, :, j], (0, 1, 3, 2, 4)) for j in range(3))
    return q, k, v


def heads_view(y: Array, B: int, T: int, H: int) -> Array:
    """View (R, B, n_head, T, D) into a (R, N, C') buffer whose rows hold the heads side by
    side (C' = n_head * D)."""
    R = y.shape[0]
    D = y.shape[-1] // H
    return xp.permute_dims(xp.reshape(y, (R, B, T, H, D)), (0, 1, 3, 2, 4))


def _scores(q: Array, k: Array, att: Array, sp: Space) -> None:
    T, D = q.shape[-2], q.shape[-1]
    xp.matmul(q, _t(k), out=att)  # (R, B, n_head, T, T)
    att *= 1.0 / math.sqrt(D)
    att += sp.causal_mask(T)


def attention(
    h: Array,
    wqkv: Array,
    bqkv: Array,
    wo: Array,
    bo: Array,
    *,
    qkv: Array,
    att: Array,
    y: Array,
    out: Array,
    sp: Space,
    reduce: Reduce = None,
) -> None:
    """Causal self-attention of h (R, N, C) into out (R, N, C): a fused qkv projection (a
    row's heads' columns), softmax(q k^T / sqrt(D) + mask) v, then wo (the same heads' rows).

    Keeps qkv (R, N, 3 C'), att (R, B, n_head, T, T) and y (R, N, C') for the backward pass
    (C' = n_head * D, the row's share of C). `reduce` sums the row-parallel product over the
    tensor-parallel group before the bias is added; None when the layer is whole.
    """
    B, H, T = att.shape[1], att.shape[2], att.shape[3]
    xp.matmul(h, wqkv, out=qkv)
    qkv += bqkv[:, None, :]
    q, k, v = split_heads(qkv, B, T, H)
    _scores(q, k, att, sp)
    if not attention_softmax_(att, sp):
        # Rows far below their block's maximum underflowed: redo them exactly.
        _scores(q, k, att, sp)
        softmax_(att, sp)
    xp.matmul(att, v, out=heads_view(y, B, T, H))
    xp.matmul(y, wo, out=out)
    if reduce is not None:
        reduce(out)
    out += bo[:, None, :]


def attention_backward(
    dout: Array,
    h: Array,
    wqkv: Array,
    wo: Array,
    qkv: Array,
    att: Array,
    y: Array,
    grads: tuple[Array, Array, Array, Array],
    *,
    dh: Array,
    sp: Space,
    add: bool = False,
    reduce: Reduce = None,
) -> None:
    """Gradients of attention() from dout (R, N, C): grads = (dwqkv, dbqkv, dwo, dbo), and
    the input gradient into dh (R, N, C), summed over the TP group by `reduce`. att is
    consumed."""
    dwqkv, dbqkv, dwo, dbo = grads
    B, H, T = att.shape[1], att.shape[2], att.shape[3]
    D = qkv.shape[-1] // (3 * H)
    dy = sp.scratch("attn.dy", y.shape)
    linear_backward(dout, y, wo, dwo, dbo, dy, sp, add)
    dyh = heads_view(dy, B, T, H)  # (R, B, n_head, T, D)
    q, k, v = split_heads(qkv, B, T, H)
    dqkv = sp.scratch("attn.dqkv", qkv.shape)
    dq, dk, dv = split_heads(dqkv, B, T, H)
    datt = sp.scratch("attn.datt", att.shape)
    xp.matmul(_t(att), dyh, out=dv)
    xp.matmul(dyh, _t(v), out=datt)
    softmax_backward_(datt, att, sp)
    datt *= 1.0 / math.sqrt(D)
    xp.matmul(datt, k, out=dq)
    xp.matmul(_t(datt), q, out=dk)
    linear_backward(dqkv, h, wqkv, dwqkv, dbqkv, dh, sp, add)
    if reduce is not None:
        reduce(dh)


# ------------------------------------------------------------------------ MLP and GELU
def gelu(a: Array, s: Array, out: Array, sp: Space) -> None:
    """out = 0.5 a (1 + tanh(u)) with u = k (a + c a^3), i.e. a * sigmoid(2u).

    The sigmoid form needs one exp instead of a tanh (numpy's exp is much the faster), and
    keeps s = sigmoid(2u) for the backward pass. The exponent is capped so very negative
    inputs give s ~ 1e-35 instead of overflowing.
    """
    xp.multiply(a, a, out=s)
    s *= GELU_C
    s += 1.0
    s *= a
    s *= -2.0 * GELU_K  # -2u
    xp.minimum(s, sp.cap(s.shape[-1]), out=s)
    xp.exp(s, out=s)
    s += 1.0
    xp.divide(1.0, s, out=s)
    xp.multiply(a, s, out=out)


def gelu_backward_(dg: Array, a: Array, s: Array, tmp: Array) -> None:
    """dg *= gelu'(a) = s + a s (1 - s) 2k (1 + 3 c a^2), with s = sigmoid(2u).

    a is consumed (used as scratch): the backward pass is its last reader.
    """
    xp.multiply(a, a, out=tmp)
    tmp *= 6.0 * GELU_C * GELU_K
    tmp += 2.0 * GELU_K
    tmp *= a  # a 2k (1 + 3 c a^2)
    xp.subtract(1.0, s, out=a)
    a *= s  # s (1 - s)
    tmp *= a
    tmp += s
    dg *= tmp


def mlp(
    h: Array,
    w1: Array,
    b1: Array | None,
    w2: Array,
    b2: Array | None,
    *,
    a: Array,
    s: Array,
    g: Array,
    out: Array,
    sp: Space,
    reduce: Reduce = None,
) -> None:
    """out (R, N, C) = gelu(h @ w1 + b1) @ w2 + b2 for h (R, N, C); keeps a (the
    pre-activation), s (the GELU's sigmoid) and g (its output), each (R, N, F). An expert is
    the same without biases (None). `reduce` sums the row-parallel w2 product over the TP
    group before b2 is added."""
    xp.matmul(h, w1, out=a)
    if b1 is not None:
        a += b1[:, None, :]
    gelu(a, s, g, sp)
    xp.matmul(g, w2, out=out)
    if reduce is not None:
        reduce(out)
    if b2 is not None:
        out += b2[:, None, :]


def mlp_backward(
    dout: Array,
    h: Array,
    a: Array,
    s: Array,
    g: Array,
    w1: Array,
    w2: Array,
    grads: tuple[Array, Array | None, Array, Array | None],
    *,
    dh: Array,
    sp: Space,
    add: bool = False,
    reduce: Reduce = None,
) -> None:
    """Gradients of mlp() from dout (R, N, C): grads = (dw1, db1, dw2, db2) (biases None for
    an expert), and the input gradient into dh, summed over the TP group by `reduce`.
    a is consumed."""
    dw1, db1, dw2, db2 = grads
    da = sp.scratch("mlp.da", a.shape)  # (R, N, F)
    linear_backward(dout, g, w2, dw2, db2, da, sp, add)
    gelu_backward_(da, a, s, sp.scratch("mlp.tmp", a.shape))  # now d(loss)/d(a)
    linear_backward(da, h, w1, dw1, db1, dh, sp, add)
    if reduce is not None:
        reduce(dh)


# ------------------------------------------------------------- output and cross-entropy
def output_probs(hf: Array, head: Array, probs: Array, sp: Space) -> None:
    """probs (R, N, V) = softmax(hf @ head): the next-token distribution at every position."""
    xp.matmul(hf, head, out=probs)
    softmax_(probs, sp)


def _target_rows(probs: Array, targets: Array) -> tuple[Array, Array, Array]:
    R, N, V = probs.shape
    flat = xp.reshape(probs, (R * N, V))
    return flat, xp.arange(R * N), xp.reshape(targets, (R * N,))


def cross_entropy(probs: Array, targets: Array) -> Array:
    """Each row's mean cross-entropy (R,) of its targets (R, B, T) under probs (R, N, V)."""
    flat, rows, tgt = _target_rows(probs, targets)
    picked = flat[rows, tgt]  # (R * N,)
    return -xp.mean(xp.reshape(xp.log(picked), (probs.shape[0], -1)), axis=1)


def cross_entropy_backward_(probs: Array, targets: Array, weight: float) -> None:
    """probs becomes d(loss)/d(logits) = (softmax - onehot) * weight, weight being each
    token's share of the loss."""
    flat, rows, tgt = _target_rows(probs, targets)
    flat[rows, tgt] -= 1.0
    probs *= weight


# -------------------------------------------------------------------- mixture of experts
def route(h: Array, w_router: Array, top_k: int, B: int, coef: float, sp: Space) -> dict[str, Any]:
    """The router of a mixture-of-experts layer, for h (R, N, C) of B sequences per row.

    Its softmax gives each token probabilities over the X experts; the top_k largest are
    chosen (ties to the lower expert) and their gates renormalised over the chosen ones (the
    Mixtral convention). Returns what the backward pass needs: probs (R, N, X), sel and gate
    (R, N, K), S (R, N, 1, the chosen probabilities' sum), f (R, B, X, each expert's share
    of a sequence's choices) and aux (R,): the Switch load-balancing loss
    coef * X * sum_i f_i P_i per sequence (P_i the mean probability), averaged over the
    row's sequences.
    """
    R, N, _ = h.shape
    X = w_router.shape[-1]
    T = N // B
    probs = xp.matmul(h, w_router)  # (R, N, X) logits, then probabilities
    softmax_(probs, sp)
    sel = xp.argsort(-probs, axis=-1, kind="stable")[..., :top_k]  # (R, N, K)
    pk = xp.take_along_axis(probs, sel, axis=-1)
    S = xp.sum(pk, axis=-1, keepdims=True)
    gate = pk / S
    seq = xp.repeat(xp.arange(R * B), T * top_k)
    f = xp.bincount(seq * X + xp.reshape(sel, (-1,)), minlength=R * B * X)
    f = xp.asarray(xp.reshape(f, (R, B, X)), dtype=h.dtype) / (T * top_k)
    Pm = xp.mean(xp.reshape(probs, (R, B, T, X)), axis=2)  # (R, B, X)
    aux = coef * X * xp.mean(xp.sum(f * Pm, axis=-1), axis=-1)
    return {"probs": probs, "sel": sel, "S": S, "gate": gate, "f": f, "aux": aux}


def route_backward(
    dgate: Array,
    saved: dict[str, Any],
    h: Array,
    w_router: Array,
    dw_router: Array,
    dh: Array,
    *,
    aux_weight: float,
    sp: Space,
    add: bool = False,
) -> None:
    """Back through the renormalised gates, the load-balancing loss and the router's softmax:
    the router's gradient into dw_router, its input gradient ADDED into dh (R, N, C).
    aux_weight: d(loss)/d(P_i) per f_i at each position, coef * X * (sequence weight) / T.
    saved["probs"] is consumed."""
    probs, sel, S, gate = saved["probs"], saved["sel"], saved["S"], saved["gate"]
    R, N, X = probs.shape
    B = saved["f"].shape[1]
    dpk = (dgate - xp.sum(dgate * gate, axis=-1, keepdims=True)) / S  # (R, N, K)
    dp = xp.zeros_like(probs)  # (R, N, X)
    xp.put_along_axis(dp, sel, dpk, axis=-1)
    xp.reshape(dp, (R, B, N // B, X))[...] += (aux_weight * saved["f"])[:, :, None, :]
    softmax_backward_(dp, probs, sp)  # now d(loss)/d(router logits)
    matmul_into(_t(h), dp, dw_router, add)
    dh += xp.matmul(dp, _t(w_router))


def combine(gate: Array, outs: Array) -> Array:
    """Each token's output (R, N, C): its chosen experts' outputs outs (R, N, K, C) weighted by
    their gates (R, N, K)."""
    return xp.ascontiguousarray(xp.matmul(gate[:, :, None, :], outs)[:, :, 0, :])


def combine_backward(dm: Array, gate: Array, outs: Array) -> tuple[Array, Array]:
    """Of combine(): the gates' gradient (R, N, K) and the expert outputs' (R, N, K, C)."""
    dgate = xp.ascontiguousarray(xp.matmul(outs, dm[:, :, :, None])[..., 0])
    return dgate, gate[:, :, :, None] * dm[:, :, None, :]
