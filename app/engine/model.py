"""A small decoder-only transformer with a hand-written backward pass.

Every parameter is stored with a leading replica axis: params[name].shape == (R, *shape), and
row r belongs to simulated GPU r. One call runs the forward and backward pass of all R replicas
at once with batched matmuls, each replica on its own weights and its own microbatch, so
grads[name][r] is exactly GPU r's local gradient. R=1 is the single-device case.

The architecture is GPT-2 shaped: token + position embeddings, n_layer pre-norm blocks
(layer norm -> causal multi-head attention with a fused qkv projection -> residual; layer norm
-> MLP with a 4x hidden layer and tanh-approximated GELU -> residual), a final layer norm and an
untied output head, trained with mean cross-entropy on the next token.

The layers' forward and backward kernels are in ops.py, shared with the sharded stages
(stage.py). Speed matters because the run is live: this model hands the kernels a workspace
that is allocated once per (R, B, T, dtype) and reused, so a step allocates almost nothing.

Shapes in comments: R replicas, B sequences per replica, T tokens, C = n_embd, n_head heads,
D = C / n_head, N = B * T token positions per replica, F = 4 * C, V = vocab_size.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import ops
from .backend import dtype_of, xp
from .ops import Space

Array = Any  # an array of the backend namespace

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


def _saved_shapes(cfg: ModelConfig, R: int, B: int, T: int) -> dict[str, tuple[int, ...]]:
    """Every activation the forward pass keeps for the backward pass, with its shape.

    The workspace allocates exactly these buffers, and activation_bytes() sums them, so the
    memory figure shown for each GPU is the memory this model really holds.
    """
    C, H, F, V, N = cfg.n_embd, cfg.n_head, 4 * cfg.n_embd, cfg.vocab_size, B * T
    s: dict[str, tuple[int, ...]] = {}
    for i in range(cfg.n_layer):
        p = f"{i}."
        s[p + "ln1_xhat"] = (R, N, C)
        s[p + "ln1_rstd"] = (R, N, 1)
        s[p + "h1"] = (R, N, C)  # layer-norm output, input of the qkv projection
        s[p + "qkv"] = (R, N, 3 * C)
        s[p + "att"] = (R, B, H, T, T)  # attention probabilities
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


class _Workspace(Space):
    """Buffers for one (R, B, T, dtype), allocated once and handed out again every call: the
    saved activations, the residual stream, and the kernels' scratch (ops.Space)."""

    def __init__(self, cfg: ModelConfig, R: int, B: int, T: int, dt: Any) -> None:
        super().__init__(dt, per_row=False)  # the replicas only meet in the all-reduce
        C = cfg.n_embd
        self.saved = {k: xp.empty(s, dtype=dt) for k, s in _saved_shapes(cfg, R, B, T).items()}
        self.x = xp.empty((R, B * T, C), dtype=dt)  # the residual stream (then its gradient)
        self.mask = self.causal_mask(T)  # (T, T), as the tests see it
        self._bufs: dict[tuple[str, tuple[int, ...]], Array] = {}

    def scratch(self, name: str, shape: tuple[int, ...]) -> Array:
        key = (name, tuple(shape))
        buf = self._bufs.get(key)
        if buf is None:
            buf = self._bufs[key] = xp.empty(shape, dtype=self.dtype)
        return buf


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

    def _workspace(self, R: int, B: int, T: int, dt: Any) -> _Workspace:
        key = (R, B, T, str(dt), repr(xp))  # a workspace belongs to one namespace and device
        ws = self._spaces.get(key)
        if ws is None:
            ws = _Workspace(self.cfg, R, B, T, dt)
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
        R, B, T = idx.shape
        if T > cfg.block_size:
            raise ValueError(f"sequence of {T} tokens is longer than block_size {cfg.block_size}")
        ws = self._workspace(R, B, T, params["wte"].dtype)
        sv, x = ws.saved, ws.x  # x: (R, N, C)
        o = ws.scratch("o", x.shape)  # each block's output, before the residual add
        ops.embed(params["wte"], params["wpe"], idx, out=x)
        for i in range(cfg.n_layer):
            p, s = f"layers.{i}.", f"{i}."
            ops.norm(
                x,
                params,
                p + "ln1",
                ws,
                out=sv[s + "h1"],
                xhat=sv[s + "ln1_xhat"],
                rstd=sv[s + "ln1_rstd"],
            )
            ops.attention(
                sv[s + "h1"],
                params[p + "attn.wqkv"],
                params[p + "attn.bqkv"],
                params[p + "attn.wo"],
                params[p + "attn.bo"],
                qkv=sv[s + "qkv"],
                att=sv[s + "att"],
                y=sv[s + "y"],
                out=o,
                sp=ws,
            )
            x += o
            ops.norm(
                x,
                params,
                p + "ln2",
                ws,
                out=sv[s + "h2"],
                xhat=sv[s + "ln2_xhat"],
                rstd=sv[s + "ln2_rstd"],
            )
            ops.mlp(
                sv[s + "h2"],
                params[p + "mlp.w1"],
                params[p + "mlp.b1"],
                params[p + "mlp.w2"],
                params[p + "mlp.b2"],
                a=sv[s + "a"],
                s=sv[s + "sig"],
                g=sv[s + "g"],
                out=o,
                sp=ws,
            )
            x += o
        ops.norm(x, params, "lnf", ws, out=sv["hf"], xhat=sv["lnf_xhat"], rstd=sv["lnf_rstd"])
        ops.output_probs(sv["hf"], params["head"], sv["probs"], ws)
        return ws

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

        idx, targets: int arrays (R, B, T). Returns losses (R,) and grads shaped like params.
        Pass `grads` (a dict of arrays shaped like params) to have the gradients written into
        it instead of freshly allocated arrays.
        """
        cfg = self.cfg
        idx = xp.asarray(idx)
        targets = xp.asarray(targets)
        if idx.ndim != 3 or targets.shape != idx.shape:
            raise ValueError(f"idx and targets must both be (R, B, T); got {idx.shape}")
        R, B, T = idx.shape
        if params["wte"].shape[0] != R:
            raise ValueError(f"idx has {R} replicas but params have {params['wte'].shape[0]}")
        t0 = time.perf_counter()
        ws = self.forward(params, idx)
        self.last_forward_s = time.perf_counter() - t0
        sv = ws.saved
        losses = ops.cross_entropy(sv["probs"], targets)
        if not need_grads:
            return losses, None

        if grads is None:
            grads = {k: xp.empty_like(v) for k, v in params.items()}

        # d(mean cross-entropy)/d(logits), built in the probs buffer.
        dlogits = sv["probs"]  # (R, N, V)
        ops.cross_entropy_backward_(dlogits, targets, 1.0 / (B * T))
        dx = ws.x  # the residual stream's gradient from here on, (R, N, C)
        dh = ws.scratch("dh", dx.shape)  # each sublayer's input gradient
        ops.linear_backward(dlogits, sv["hf"], params["head"], grads["head"], None, dh, ws)
        dx[...] = 0
        ops.norm_backward(dh, params, grads, "lnf", sv["lnf_xhat"], sv["lnf_rstd"], dx, ws)

        for i in reversed(range(cfg.n_layer)):
            p, s = f"layers.{i}.", f"{i}."
            # MLP: x += w2(gelu(w1 h2 + b1)) + b2
            ops.mlp_backward(
                dx,
                sv[s + "h2"],
                sv[s + "a"],
                sv[s + "sig"],
                sv[s + "g"],
                params[p + "mlp.w1"],
                params[p + "mlp.w2"],
                (
                    grads[p + "mlp.w1"],
                    grads[p + "mlp.b1"],
                    grads[p + "mlp.w2"],
                    grads[p + "mlp.b2"],
                ),
                dh=dh,
                sp=ws,
            )
            ops.norm_backward(
                dh, params, grads, p + "ln2", sv[s + "ln2_xhat"], sv[s + "ln2_rstd"], dx, ws
            )
            # Attention: x += wo(softmax(q k^T / sqrt(D) + mask) v) + bo
            ops.attention_backward(
                dx,
                sv[s + "h1"],
                params[p + "attn.wqkv"],
                params[p + "attn.wo"],
                sv[s + "qkv"],
                sv[s + "att"],
                sv[s + "y"],
                (
                    grads[p + "attn.wqkv"],
                    grads[p + "attn.bqkv"],
                    grads[p + "attn.wo"],
                    grads[p + "attn.bo"],
                ),
                dh=dh,
                sp=ws,
            )
            ops.norm_backward(
                dh, params, grads, p + "ln1", sv[s + "ln1_xhat"], sv[s + "ln1_rstd"], dx, ws
            )

        ops.embed_backward(dx, idx, grads["wte"], grads["wpe"])
        return losses, grads

    def logits(self, params: dict[str, Array], idx: Array) -> Array:
        """Logits (R, B, T, V) at every position of idx (R, B, T); a fresh array."""
        R, B, T = idx.shape
        ws = self.forward(params, xp.asarray(idx))
        out = xp.matmul(ws.saved["hf"], params["head"])  # (R, N, V)
        return xp.reshape(out, (R, B, T, self.cfg.vocab_size))

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


# The attention softmax's fast path, under the name the tests know it by.
_softmax_attention_ = ops.attention_softmax_


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
