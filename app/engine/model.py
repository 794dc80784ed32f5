"""A small decoder-only transformer with a hand-written backward pass.

Every parameter is stored with a leading replica axis: params[name].shape == (R, *shape), and
row r belongs to simulated GPU r. One call runs the forward and backward pass of all R replicas
at once with batched matmuls, each replica on its own weights and its own microbatch, so
grads[name][r] is exactly GPU r's local gradient. R=1 is the single-device case.

The architecture is GPT-2 shaped: token + position embeddings, n_layer pre-norm blocks
(layer norm -> causal multi-head attention with a fused qkv projection -> residual; layer norm
-> MLP with a 4x hidden layer and tanh-approximated GELU -> residual), a final layer norm and an
untied output head, trained with mean cross-entropy on the next token.

Speed matters because the run is live: activations live in a workspace that is allocated once
per (R, b, T, dtype) and reused, elementwise work is done in place with out= arguments, and the
softmaxes are computed in the buffers that hold their inputs.

Shapes in comments: R replicas, b sequences per replica, T tokens, C = n_embd, H heads,
D = C / H, N = b * T token positions per replica, F = 4 * C, V = vocab_size.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from .backend import dtype_of, xp

Array = Any  # an array of the backend namespace

GELU_K = math.sqrt(2.0 / math.pi)
GELU_C = 0.044715
LN_EPS = 1e-5
INIT_STD = 0.02


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int
    n_layer: int
    n_head: int
    n_embd: int
    block_size: int
    experts: int = 0  # experts per MoE layer (app/engine/stage.py); 0: a dense MLP
    top_k: int = 2

    def __post_init__(self) -> None:
        if min(self.vocab_size, self.n_layer, self.n_head, self.n_embd, self.block_size) < 1:
            raise ValueError("every ModelConfig field must be at least 1")
        if self.n_embd % self.n_head:
            raise ValueError("n_embd must be divisible by n_head")
        if self.experts < 0 or (self.experts and not 1 <= self.top_k <= self.experts):
            raise ValueError("experts must be 0 or more, and top_k between 1 and experts")


def param_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Parameter names and per-replica shapes, in THE fixed order (checkpoints, hashes, rings)."""
    C, V, F = cfg.n_embd, cfg.vocab_size, 4 * cfg.n_embd
    shapes: dict[str, tuple[int, ...]] = {"wte": (V, C), "wpe": (cfg.block_size, C)}
    for i in range(cfg.n_layer):
        p = f"layers.{i}."
        shapes[p + "ln1.g"] = (C,)
        shapes[p + "ln1.b"] = (C,)
        shapes[p + "attn.wqkv"] = (C, 3 * C)
        shapes[p + "attn.bqkv"] = (3 * C,)
        shapes[p + "attn.wo"] = (C, C)
        shapes[p + "attn.bo"] = (C,)
        shapes[p + "ln2.g"] = (C,)
        shapes[p + "ln2.b"] = (C,)
        if cfg.experts:
            X = cfg.experts
            shapes[p + "moe.router"] = (C, X)
            shapes[p + "moe.w1"] = (X, C, F)
            shapes[p + "moe.w2"] = (X, F, C)
        else:
            shapes[p + "mlp.w1"] = (C, F)
            shapes[p + "mlp.b1"] = (F,)
            shapes[p + "mlp.w2"] = (F, C)
            shapes[p + "mlp.b2"] = (C,)
    shapes["lnf.g"] = (C,)
    shapes["lnf.b"] = (C,)
    shapes["head"] = (C, V)
    return shapes


def n_params(cfg: ModelConfig) -> int:
    """Parameters per replica."""
    return sum(math.prod(s) for s in param_shapes(cfg).values())


def init_params(
    cfg: ModelConfig, seed: int, replicas: int = 1, dtype: str = "float32"
) -> dict[str, Array]:
    """GPT-2 style initialisation, deterministic from `seed`, identical in every replica row.

    Values are drawn in float64 in the fixed parameter order and then cast, so a float64 model
    and a float32 model from the same seed start from the same numbers (up to rounding).
    """
    if replicas < 1:
        raise ValueError("replicas must be at least 1")
    rng = np.random.default_rng(seed)
    dt = dtype_of(dtype)
    # Residual projections are scaled down so the residual stream's variance does not grow
    # with depth (GPT-2's 1/sqrt(2 * n_layer), two residual adds per block).
    resid_std = INIT_STD / math.sqrt(2 * cfg.n_layer)
    params: dict[str, Array] = {}
    for name, shape in param_shapes(cfg).items():
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "g":
            row = np.ones(shape)
        elif leaf in ("b", "bqkv", "bo", "b1", "b2"):
            row = np.zeros(shape)
        else:
            std = resid_std if leaf in ("wo", "w2") else INIT_STD
            row = rng.standard_normal(shape) * std
        stacked = xp.empty((replicas, *shape), dtype=dt)
        stacked[...] = xp.asarray(row, dtype=dt)
        params[name] = stacked
    return params


def _saved_shapes(cfg: ModelConfig, R: int, b: int, T: int) -> dict[str, tuple[int, ...]]:
    """Every activation the forward pass keeps for the backward pass, with its shape.

    The workspace allocates exactly these buffers, and activation_bytes() sums them, so the
    memory figure shown for each GPU is the memory this model really holds.
    """
    C, H, F, V, N = cfg.n_embd, cfg.n_head, 4 * cfg.n_embd, cfg.vocab_size, b * T
    s: dict[str, tuple[int, ...]] = {}
    for i in range(cfg.n_layer):
        p = f"{i}."
        s[p + "ln1_xhat"] = (R, N, C)
        s[p + "ln1_rstd"] = (R, N, 1)
        s[p + "h1"] = (R, N, C)  # layer-norm output, input of the qkv projection
        s[p + "qkv"] = (R, N, 3 * C)
        s[p + "att"] = (R, b, H, T, T)  # attention probabilities
        s[p + "y"] = (R, N, C)  # attention output, input of the wo projection
        s[p + "ln2_xhat"] = (R, N, C)
        s[p + "ln2_rstd"] = (R, N, 1)
        s[p + "h2"] = (R, N, C)
        s[p + "a"] = (R, N, F)  # MLP pre-activation
        s[p + "sig"] = (R, N, F)  # the GELU's sigmoid, reused by its derivative
        s[p + "g"] = (R, N, F)  # GELU output, input of w2
    s["lnf_xhat"] = (R, N, C)
    s["lnf_rstd"] = (R, N, 1)
    s["hf"] = (R, N, C)
    s["probs"] = (R, N, V)  # softmax of the logits (becomes dlogits in the backward pass)
    return s


def activation_bytes(cfg: ModelConfig, micro_batch: int, dtype: str = "float32") -> int:
    """Bytes of activations one replica keeps from forward to backward (micro_batch sequences
    of block_size tokens), read off the same list of buffers the forward pass fills."""
    itemsize = np.dtype(dtype).itemsize
    shapes = _saved_shapes(cfg, 1, micro_batch, cfg.block_size)
    return sum(math.prod(s) for s in shapes.values()) * itemsize


class _Workspace:
    """Buffers for one (R, b, T, dtype): saved activations plus scratch for the backward."""

    def __init__(self, cfg: ModelConfig, R: int, b: int, T: int, dt: Any) -> None:
        C, H, F, N = cfg.n_embd, cfg.n_head, 4 * cfg.n_embd, b * T
        self.saved = {k: xp.empty(s, dtype=dt) for k, s in _saved_shapes(cfg, R, b, T).items()}
        self.x = xp.empty((R, N, C), dtype=dt)  # the residual stream (then its gradient)
        self.tC = xp.empty((R, N, C), dtype=dt)  # scratch
        self.tC2 = xp.empty((R, N, C), dtype=dt)
        self.tF = xp.empty((R, N, F), dtype=dt)
        self.tF2 = xp.empty((R, N, F), dtype=dt)
        self.dqkv = xp.empty((R, N, 3 * C), dtype=dt)
        self.datt = xp.empty((R, b, H, T, T), dtype=dt)
        self.row = xp.empty((R, N, 1), dtype=dt)  # per-position statistics
        self.row2 = xp.empty((R, N, 1), dtype=dt)
        self.att_row = xp.empty((R, b, H, T, 1), dtype=dt)
        self.att_blk = xp.empty((R, b, H, 1, 1), dtype=dt)
        # Sums along an axis are done as matmuls with a vector of ones (or of 1/n for means):
        # BLAS does them an order of magnitude faster than numpy's reductions over short rows.
        self.ones_N = xp.ones((N,), dtype=dt)
        self.ones_T = xp.ones((T,), dtype=dt)
        self.ones_V = xp.ones((cfg.vocab_size,), dtype=dt)
        self.mean_C = xp.full((C,), 1.0 / C, dtype=dt)
        # Additive causal mask: position t may look at positions <= t only.
        mask = np.triu(np.full((T, T), -np.inf), k=1)
        self.mask = xp.asarray(mask, dtype=dt)
        # Offsets that turn (replica, token id) into a row of the (R * V, C) embedding table.
        self.rep_offset = (xp.arange(R) * cfg.vocab_size).reshape(R, 1)
        self.rep_rows = xp.arange(R * N)
        self.rep_of_row = xp.repeat(xp.arange(R), N)  # replica of each of the R * N positions


class Model:
    """Forward and backward for one ModelConfig, with workspaces reused across calls.

    A Model is not thread-safe (its workspaces are reused): give each thread its own. The
    module-level functions share one cached Model per config.
    """

    def __init__(self, cfg: ModelConfig, max_workspaces: int = 4) -> None:
        if cfg.experts:
            raise ValueError("this model is dense; a model with experts runs in stage.py")
        self.cfg = cfg
        self._spaces: OrderedDict[tuple[Any, ...], _Workspace] = OrderedDict()
        self._max = max_workspaces
        # Wall seconds of the forward pass in the last forward_backward call (the rest of
        # that call is the backward pass); None before the first call.
        self.last_forward_s: float | None = None

    def _workspace(self, R: int, b: int, T: int, dt: Any) -> _Workspace:
        key = (R, b, T, str(dt), repr(xp))  # a workspace belongs to one namespace and device
        ws = self._spaces.get(key)
        if ws is None:
            ws = _Workspace(self.cfg, R, b, T, dt)
            self._spaces[key] = ws
            while len(self._spaces) > self._max:
                self._spaces.popitem(last=False)
        else:
            self._spaces.move_to_end(key)
        return ws

    # ----------------------------------------------------------------- forward
    def forward(self, params: dict[str, Array], idx: Array) -> _Workspace:
        """Run the forward pass up to the output softmax; returns the filled workspace."""
        cfg = self.cfg
        R, b, T = idx.shape
        if T > cfg.block_size:
            raise ValueError(f"sequence of {T} tokens is longer than block_size {cfg.block_size}")
        C, H, V, N = cfg.n_embd, cfg.n_head, cfg.vocab_size, b * T
        D = C // H
        dt = params["wte"].dtype
        ws = self._workspace(R, b, T, dt)
        sv = ws.saved
        x = ws.x  # (R, N, C)

        # Embeddings: each replica gathers rows of its own table.
        rows = xp.reshape(idx, (R, N)) + ws.rep_offset  # (R, N)
        xp.take(xp.reshape(params["wte"], (R * V, C)), rows, axis=0, out=x)
        xp.reshape(x, (R, b, T, C))[...] += params["wpe"][:, None, :T, :]

        scale = 1.0 / math.sqrt(D)
        for i in range(cfg.n_layer):
            p, s = f"layers.{i}.", f"{i}."
            h1 = sv[s + "h1"]
            self._ln_forward(x, params[p + "ln1.g"], params[p + "ln1.b"], ws, s + "ln1", h1)

            qkv = sv[s + "qkv"]  # (R, N, 3C)
            xp.matmul(h1, params[p + "attn.wqkv"], out=qkv)
            qkv += params[p + "attn.bqkv"][:, None, :]
            q, k, v = _split_heads(qkv, R, b, T, H, D)  # each (R, b, H, T, D), views
            att = sv[s + "att"]  # (R, b, H, T, T)
            xp.matmul(q, xp.swapaxes(k, -1, -2), out=att)
            att *= scale
            att += ws.mask
            if not _softmax_attention_(att, ws):
                # Rows far below their block's maximum underflowed: redo them exactly.
                xp.matmul(q, xp.swapaxes(k, -1, -2), out=att)
                att *= scale
                att += ws.mask
                _softmax_lastaxis_(att, ws.att_row, ws.ones_T)
            y = sv[s + "y"]  # (R, N, C), heads side by side
            xp.matmul(att, v, out=_heads_view(y, R, b, T, H, D))
            xp.matmul(y, params[p + "attn.wo"], out=ws.tC)
            ws.tC += params[p + "attn.bo"][:, None, :]
            x += ws.tC

            h2 = sv[s + "h2"]
            self._ln_forward(x, params[p + "ln2.g"], params[p + "ln2.b"], ws, s + "ln2", h2)
            a, sig, g = sv[s + "a"], sv[s + "sig"], sv[s + "g"]  # (R, N, F)
            xp.matmul(h2, params[p + "mlp.w1"], out=a)
            a += params[p + "mlp.b1"][:, None, :]
            _gelu_forward(a, sig, g)
            xp.matmul(g, params[p + "mlp.w2"], out=ws.tC)
            ws.tC += params[p + "mlp.b2"][:, None, :]
            x += ws.tC

        hf = sv["hf"]
        self._ln_forward(x, params["lnf.g"], params["lnf.b"], ws, "lnf", hf)
        probs = sv["probs"]  # (R, N, V)
        xp.matmul(hf, params["head"], out=probs)
        _softmax_lastaxis_(probs, ws.row, ws.ones_V)
        return ws

    def _ln_forward(
        self, x: Array, g: Array, bias: Array, ws: _Workspace, key: str, out: Array
    ) -> None:
        xhat, rstd = ws.saved[key + "_xhat"], ws.saved[key + "_rstd"]
        _rowdot(x, ws.mean_C, ws.row)
        xp.subtract(x, ws.row, out=xhat)
        xp.multiply(xhat, xhat, out=ws.tC2)
        _rowdot(ws.tC2, ws.mean_C, rstd)
        rstd += LN_EPS
        xp.sqrt(rstd, out=rstd)
        xp.divide(1.0, rstd, out=rstd)
        xhat *= rstd
        xp.multiply(xhat, g[:, None, :], out=out)
        out += bias[:, None, :]

    # ---------------------------------------------------------------- backward
    def forward_backward(
        self,
        params: dict[str, Array],
        idx: Array,
        targets: Array,
        *,
        need_grads: bool = True,
        grads: dict[str, Array] | None = None,
    ) -> tuple[Array, dict[str, Array] | None]:
        """Loss of each replica's microbatch and, unless need_grads is False, its gradients.

        idx, targets: int arrays (R, b, T). Returns losses (R,) and grads shaped like params.
        Pass `grads` (a dict of arrays shaped like params) to have the gradients written into
        it instead of freshly allocated arrays.
        """
        cfg = self.cfg
        idx = xp.asarray(idx)
        targets = xp.asarray(targets)
        if idx.ndim != 3 or targets.shape != idx.shape:
            raise ValueError(f"idx and targets must both be (R, b, T); got {idx.shape}")
        R, b, T = idx.shape
        if params["wte"].shape[0] != R:
            raise ValueError(f"idx has {R} replicas but params have {params['wte'].shape[0]}")
        C, H, V, N = cfg.n_embd, cfg.n_head, cfg.vocab_size, b * T
        D = C // H
        t0 = time.perf_counter()
        ws = self.forward(params, idx)
        self.last_forward_s = time.perf_counter() - t0
        sv = ws.saved
        probs = xp.reshape(sv["probs"], (R * N, V))
        picked = probs[ws.rep_rows, xp.reshape(targets, (R * N,))]  # (R * N,)
        losses = -xp.mean(xp.reshape(xp.log(picked), (R, N)), axis=1)
        if not need_grads:
            return losses, None

        if grads is None:
            grads = {k: xp.empty_like(v) for k, v in params.items()}

        # d(mean cross-entropy)/d(logits) = (softmax - onehot) / N, built in the probs buffer.
        probs[ws.rep_rows, xp.reshape(targets, (R * N,))] -= 1.0
        dlogits = sv["probs"]  # (R, N, V)
        dlogits *= 1.0 / N
        hf = sv["hf"]
        xp.matmul(xp.swapaxes(hf, -1, -2), dlogits, out=grads["head"])
        dx = ws.x  # the residual stream's gradient from here on, (R, N, C)
        xp.matmul(dlogits, xp.swapaxes(params["head"], -1, -2), out=ws.tC)
        dx[...] = 0
        self._ln_backward(ws.tC, params, grads, "lnf", ws, "lnf", dx)

        scale = 1.0 / math.sqrt(D)
        for i in reversed(range(cfg.n_layer)):
            p, s = f"layers.{i}.", f"{i}."
            # MLP: x += w2(gelu(w1 h2 + b1)) + b2
            g, a, sig = sv[s + "g"], sv[s + "a"], sv[s + "sig"]
            xp.matmul(xp.swapaxes(g, -1, -2), dx, out=grads[p + "mlp.w2"])
            _colsum(dx, ws.ones_N, grads[p + "mlp.b2"])
            dg = ws.tF
            xp.matmul(dx, xp.swapaxes(params[p + "mlp.w2"], -1, -2), out=dg)
            _gelu_backward_(dg, a, sig, ws.tF2)  # dg now holds d(loss)/d(a)
            xp.matmul(xp.swapaxes(sv[s + "h2"], -1, -2), dg, out=grads[p + "mlp.w1"])
            _colsum(dg, ws.ones_N, grads[p + "mlp.b1"])
            xp.matmul(dg, xp.swapaxes(params[p + "mlp.w1"], -1, -2), out=ws.tC)
            self._ln_backward(ws.tC, params, grads, p + "ln2", ws, s + "ln2", dx)

            # Attention: x += wo(softmax(q k^T / sqrt(D) + mask) v) + bo
            y = sv[s + "y"]
            xp.matmul(xp.swapaxes(y, -1, -2), dx, out=grads[p + "attn.wo"])
            _colsum(dx, ws.ones_N, grads[p + "attn.bo"])
            dy = ws.tC
            xp.matmul(dx, xp.swapaxes(params[p + "attn.wo"], -1, -2), out=dy)
            dyh = _heads_view(dy, R, b, T, H, D)  # (R, b, H, T, D)
            q, k, v = _split_heads(sv[s + "qkv"], R, b, T, H, D)
            dq, dk, dv = _split_heads(ws.dqkv, R, b, T, H, D)
            att, datt = sv[s + "att"], ws.datt
            xp.matmul(xp.swapaxes(att, -1, -2), dyh, out=dv)
            xp.matmul(dyh, xp.swapaxes(v, -1, -2), out=datt)
            # Softmax backward: dS = P * (dP - sum(P * dP)); att is consumed here.
            datt *= att
            _rowdot(datt, ws.ones_T, ws.att_row)
            att *= ws.att_row
            datt -= att
            datt *= scale
            xp.matmul(datt, k, out=dq)
            xp.matmul(xp.swapaxes(datt, -1, -2), q, out=dk)
            dqkv = ws.dqkv  # (R, N, 3C)
            xp.matmul(xp.swapaxes(sv[s + "h1"], -1, -2), dqkv, out=grads[p + "attn.wqkv"])
            _colsum(dqkv, ws.ones_N, grads[p + "attn.bqkv"])
            xp.matmul(dqkv, xp.swapaxes(params[p + "attn.wqkv"], -1, -2), out=ws.tC)
            self._ln_backward(ws.tC, params, grads, p + "ln1", ws, s + "ln1", dx)

        # Embeddings: position rows get the sum over the microbatch; token rows are scattered.
        dwpe = grads["wpe"]
        if T < cfg.block_size:
            dwpe[:, T:, :] = 0
        xp.sum(xp.reshape(dx, (R, b, T, C)), axis=1, out=dwpe[:, :T, :])
        dwte = grads["wte"]
        dwte[...] = 0
        # Indexed by (replica, token) rather than through a reshape, so the scatter also lands
        # when dwte is a strided view (the trainer's flat all-reduce buffer).
        xp.add_at(dwte, (ws.rep_of_row, xp.reshape(idx, (R * N,))), xp.reshape(dx, (R * N, C)))
        return losses, grads

    def _ln_backward(
        self,
        dh: Array,
        params: dict[str, Array],
        grads: dict[str, Array],
        name: str,
        ws: _Workspace,
        key: str,
        dx: Array,
    ) -> None:
        """Layer-norm backward; adds the input gradient into dx. dh is used as scratch."""
        g, dg_out, db_out = params[name + ".g"], grads[name + ".g"], grads[name + ".b"]
        xhat, rstd = ws.saved[key + "_xhat"], ws.saved[key + "_rstd"]
        t = ws.tC2
        _colsum(dh, ws.ones_N, db_out)
        xp.multiply(dh, xhat, out=t)
        _colsum(t, ws.ones_N, dg_out)
        dh *= g[:, None, :]  # dh now holds d(loss)/d(xhat)
        # dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
        _rowdot(dh, ws.mean_C, ws.row)
        xp.multiply(dh, xhat, out=t)
        _rowdot(t, ws.mean_C, ws.row2)
        xp.multiply(xhat, ws.row2, out=t)
        dh -= t
        dh -= ws.row
        dh *= rstd
        dx += dh

    def logits(self, params: dict[str, Array], idx: Array) -> Array:
        """Logits (R, b, T, V) at every position of idx (R, b, T); a fresh array."""
        R, b, T = idx.shape
        ws = self.forward(params, xp.asarray(idx))
        out = xp.matmul(ws.saved["hf"], params["head"])  # (R, N, V)
        return xp.reshape(out, (R, b, T, self.cfg.vocab_size))

    def logits_last(self, params: dict[str, Array], idx: Array, replica: int = 0) -> Array:
        """Next-token logits (V,) after the 1-D token sequence idx, using one replica's weights."""
        idx = xp.asarray(idx)
        if idx.ndim != 1 or idx.shape[0] < 1:
            raise ValueError("idx must be a non-empty 1-D array of token ids")
        one = {k: v[replica : replica + 1] for k, v in params.items()}
        ws = self.forward(one, xp.reshape(idx, (1, 1, idx.shape[0])))
        # The workspace holds probabilities; recompute the last row's logits exactly.
        hf_last = ws.saved["hf"][0, -1, :]  # (C,)
        return xp.matmul(hf_last, one["head"][0])


def _split_heads(qkv: Array, R: int, b: int, T: int, H: int, D: int) -> tuple[Array, ...]:
    """Views q, k, v (R, b, H, T, D) into a (R, b*T, 3C) fused projection buffer."""
    v6 = xp.reshape(qkv, (R, b, T, 3, H, D))
    return tuple(xp.permute_dims(v6[:, :, :, j], (0, 1, 3, 2, 4)) for j in range(3))


def _heads_view(y: Array, R: int, b: int, T: int, H: int, D: int) -> Array:
    """View (R, b, H, T, D) into a (R, b*T, C) buffer whose rows hold the heads side by side."""
    return xp.permute_dims(xp.reshape(y, (R, b, T, H, D)), (0, 1, 3, 2, 4))


def _rowdot(z: Array, w: Array, out: Array) -> None:
    """out[..., 0] = z[..., :] @ w: sums (w of ones) or means (w of 1/n) along the last axis.

    z must be contiguous, so it can be seen as one (rows, n) matrix: one BLAS call in all.
    """
    n = z.shape[-1]
    xp.matmul(xp.reshape(z, (-1, n)), w, out=xp.reshape(out, (-1,)))


def _colsum(z: Array, ones_n: Array, out: Array) -> None:
    """out (R, K) = sum of z (R, n, K) over its middle axis, as ones (n,) @ z."""
    xp.matmul(ones_n, z, out=out)


def _softmax_lastaxis_(z: Array, row: Array, ones: Array) -> None:
    """Softmax over the last axis, in place; `row` is scratch shaped like z[..., :1]."""
    xp.max(z, axis=-1, keepdims=True, out=row)
    z -= row
    xp.exp(z, out=z)
    _rowdot(z, ones, row)
    xp.divide(1.0, row, out=row)
    z *= row


def _softmax_attention_(att: Array, ws: _Workspace) -> bool:
    """Causal attention softmax in place, shifted by each head's block maximum.

    Any shift gives the same softmax; a row maximum is the usual choice, but numpy is slow at
    maxima over rows of only T entries, while one maximum per (T, T) block is cheap and still
    rules out overflow. A row whose own maximum sits more than ~80 below its block's could
    underflow; then this returns False (att is spoilt) and the caller redoes it exactly.
    """
    R, b, H, T, _ = att.shape
    blk = xp.reshape(ws.att_blk, (-1, 1))
    xp.max(xp.reshape(att, (-1, T * T)), axis=-1, keepdims=True, out=blk)
    att -= ws.att_blk
    xp.exp(att, out=att)
    _rowdot(att, ws.ones_T, ws.att_row)
    if not bool(xp.min(ws.att_row) > 1e-30):
        return False
    xp.divide(1.0, ws.att_row, out=ws.att_row)
    att *= ws.att_row
    return True


def _gelu_forward(a: Array, s: Array, out: Array) -> None:
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
    xp.minimum(s, 80.0, out=s)
    xp.exp(s, out=s)
    s += 1.0
    xp.divide(1.0, s, out=s)
    xp.multiply(a, s, out=out)


def _gelu_backward_(dg: Array, a: Array, s: Array, tmp: Array) -> None:
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


_MODELS: OrderedDict[ModelConfig, Model] = OrderedDict()


def _model(cfg: ModelConfig) -> Model:
    m = _MODELS.get(cfg)
    if m is None:
        m = _MODELS[cfg] = Model(cfg)
        while len(_MODELS) > 4:
            _MODELS.popitem(last=False)
    return m


def forward_backward(
    params: dict[str, Array],
    idx: Array,
    targets: Array,
    cfg: ModelConfig,
    *,
    need_grads: bool = True,
    grads: dict[str, Array] | None = None,
) -> tuple[Array, dict[str, Array] | None]:
    """Losses (R,) and gradients of every replica on its own microbatch; see Model."""
    return _model(cfg).forward_backward(params, idx, targets, need_grads=need_grads, grads=grads)


def logits_last(params: dict[str, Array], idx: Array, cfg: ModelConfig, replica: int = 0) -> Array:
    """Next-token logits (V,) after the token ids idx (1-D, at most block_size long)."""
    return _model(cfg).logits_last(params, idx, replica=replica)
