"""One pipeline stage's layers on the GPUs that run it, split by tensor and expert parallelism.

Every array has a leading row axis with one row per GPU of the stage, in (tensor rank, data-
parallel rank) order: row r = t * dp + d. A row holds only that GPU's shard, and each GPU
computes with its shard only, as Megatron-LM splits a transformer layer:

- attention by heads: the qkv projection is column-parallel (each tensor rank holds the q, k
  and v columns of its n_head / tp heads), the output projection row-parallel (the rows of
  the same heads); the partial products y_t @ wo_t are summed by an all-reduce over the TP
  group, then the (replicated) bias is added;
- the dense MLP column-then-row: w1's columns and b1, then w2's rows, all-reduced the same way;
- in the backward pass the gradients entering the column-parallel inputs (the outputs of the
  layer norms) are partial sums and are all-reduced likewise;
- layer norms, embeddings, the final norm and the head are replicated in the TP group, so
  their gradients come out identical on every rank of it.

The TP all-reduce is a real ring (reduce-scatter, then all-gather) over each group's GPUs.

Mixture of experts (model.experts > 0): each layer's MLP is `experts` expert MLPs (C -> 4C,
GELU, 4C -> C, no biases) and a router (a linear map C -> experts, no bias). For each token
the router's softmax gives probabilities p over the experts; the top_k largest are chosen
(ties to the lower expert number) and their gates renormalised over the chosen ones,
g_k = p_k / sum_j p_j (the Mixtral convention); the layer outputs sum_k g_k E_k(h). Nothing
is dropped: capacity is unlimited, so results do not depend on the plan. A Switch-style
load-balancing loss is added for each MoE layer and each sequence:
AUX_COEF * experts * sum_i f_i P_i, where f_i is the fraction of the sequence's top_k
choices that went to expert i and P_i its mean router probability over the sequence; the
run's loss is the mean cross-entropy plus the mean of these over the batch's sequences.
(Per sequence, not per device batch, so that the loss is the same however the batch is cut.)

Experts are sharded over the ep GPUs of an EP group (experts / ep each) and, within a TP group,
split like the dense MLP (w1 columns, w2 rows). The router and attention are replicated in
the EP group. With ep > 1 every token is copied to the GPU holding its expert and its output
copied back: an all-to-all (one indexed copy fills every destination GPU's receive buffer
from every source GPU's tokens) in the forward pass, and another pair in the backward pass,
whose bytes for every (source, destination) pair are recorded. Each expert sees its tokens
in source order (EP rank, then position), whichever plan sent them.

Each op leaves a `program` on the StageComm: its compute (FLOPs, by the 2 x weights x tokens
rule of the timing model, at the busiest GPU of the stage) and its transfers, in order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .backend import to_numpy, xp
from .collectives import ring_allreduce_groups_
from .model import (
    LN_EPS,
    ModelConfig,
    _gelu_backward_,
    _gelu_forward,
    _heads_view,
    _split_heads,
)

Array = Any

AUX_COEF = 0.01  # weight of the load-balancing loss (Switch Transformer uses 0.01)


class StageComm:
    """Collectives among one stage's GPUs, and the program of the op that is running.

    program: [("compute", flops), ("tp_allreduce", elements per GPU, chunk elements),
    ("all_to_all", (R, R) bytes from row i to row j)], in the order they happened."""

    def __init__(self, tp: int, dp: int, ep: int) -> None:
        self.tp, self.dp, self.ep = tp, dp, ep
        self.program: list[tuple[str, Any]] = []

    def begin(self) -> None:
        self.program = []

    def compute(self, flops: float) -> None:
        if self.program and self.program[-1][0] == "compute":
            self.program[-1] = ("compute", self.program[-1][1] + float(flops))
        else:
            self.program.append(("compute", float(flops)))

    def tp_allreduce(self, a: Array) -> None:
        """Sum a (R, ...) over the tensor ranks of each TP group, in place."""
        if self.tp == 1:
            return
        view = xp.reshape(a, (self.tp, self.dp, -1))  # a must be contiguous
        chunks = ring_allreduce_groups_(view)
        self.program.append(("tp_allreduce", (view.shape[2], chunks)))

    def all_to_all(self, pair_bytes: np.ndarray) -> None:
        if self.ep > 1:
            self.program.append(("all_to_all", pair_bytes))


# Sums and means along an axis are matmuls with a vector of ones (or of 1/n): BLAS does them
# much faster than numpy's reductions over short rows (as in model.py).
def _mean_last(z: Array) -> Array:
    """(..., n) -> (..., 1): the mean over the last axis."""
    n = z.shape[-1]
    return xp.matmul(z, xp.full((n, 1), 1.0 / n, dtype=z.dtype))


def _softmax_(z: Array) -> None:
    """Softmax over the last axis, in place.

    Its sums are per-row matmuls, not one matmul over all rows stacked: BLAS may round a row
    differently depending on where it sits in a big matrix, and GPUs of a TP group that
    hold the same numbers must compute the same bits."""
    z -= xp.max(z, axis=-1, keepdims=True)
    xp.exp(z, out=z)
    z /= xp.matmul(z, xp.ones((z.shape[-1], 1), dtype=z.dtype))


def _sum_tokens(z: Array) -> Array:
    """(R, N, K) -> (R, K): the sum over the token axis."""
    return xp.matmul(xp.ones(z.shape[1], dtype=z.dtype), z)


def _ln_forward(x: Array, g: Array, b: Array) -> tuple[Array, Array, Array]:
    xc = x - _mean_last(x)
    var = _mean_last(xc * xc)
    var += LN_EPS
    rstd = 1.0 / xp.sqrt(var)  # (R, N, 1)
    xhat = xc
    xhat *= rstd
    h = xhat * g[:, None, :]
    h += b[:, None, :]
    return h, xhat, rstd


def _ln_backward(dh: Array, g: Array, xhat: Array, rstd: Array, dg: Array, db: Array) -> Array:
    """Accumulates the gain and bias gradients; returns the input gradient."""
    db += _sum_tokens(dh)
    dxhat = dh * xhat
    dg += _sum_tokens(dxhat)
    mean2 = _mean_last(xp.multiply(dh, g[:, None, :], out=dxhat) * xhat)
    dx = dxhat - _mean_last(dxhat)
    dx -= xhat * mean2
    dx *= rstd
    return dx


def _t(a: Array) -> Array:
    return xp.swapaxes(a, -1, -2)


class Stage:
    """Forward and backward of layers [layers.start, layers.stop) on one stage's GPUs.

    The first stage also embeds the tokens; the last one also applies the final layer norm,
    the head and the cross-entropy loss. Parameters and gradients are dicts of (R, *shard)
    arrays named as in model.param_shapes."""

    def __init__(
        self,
        cfg: ModelConfig,
        layers: range,
        *,
        first: bool,
        last: bool,
        tp: int = 1,
        dp: int = 1,
        ep: int = 1,
        comm: StageComm | None = None,
    ) -> None:
        self.cfg, self.layers, self.first, self.last = cfg, layers, first, last
        self.tp, self.dp, self.ep = tp, dp, ep
        self.R = tp * dp
        self.comm = comm or StageComm(tp, dp, ep)
        C, H = cfg.n_embd, cfg.n_head
        self.Ht, self.D, self.Ct, self.Ft = H // tp, C // H, C // tp, 4 * C // tp
        self.Xl = cfg.experts // ep if cfg.experts else 0
        T = cfg.block_size
        self.mask = xp.asarray(np.triu(np.full((T, T), -np.inf), k=1))

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        P: dict[str, Array],
        inp: Array,
        targets: Array | None = None,
        *,
        bT: tuple[int, int] | None = None,
    ) -> tuple[Array, dict[str, Any]]:
        """inp: token ids (R, b, T) on the first stage, else the residual stream (R, b*T, C)
        with bT = (b, T). targets (R, b, T): on the last stage.

        Returns (x, ctx) on inner stages, or ((ce, aux), ctx) on the last one: ce (R,) the
        mean cross-entropy of each row's microbatch. aux (R,) is always in ctx["aux"]: the
        mean over the microbatch's sequences of this stage's load-balancing losses."""
        cfg, R, comm = self.cfg, self.R, self.comm
        C, V = cfg.n_embd, cfg.vocab_size
        ctx: dict[str, Any] = {"layers": []}
        if self.first:
            idx = xp.asarray(inp)
            _, b, T = idx.shape
            N = b * T
            rows = xp.reshape(idx, (R, N)) + (xp.arange(R) * V)[:, None]  # (R, N)
            x = xp.take(xp.reshape(P["wte"], (R * V, C)), rows, axis=0)  # (R, N, C)
            xp.reshape(x, (R, b, T, C))[...] += P["wpe"][:, None, :T, :]
            ctx["idx"] = idx
            comm.compute(2.0 * N * (V * C + cfg.block_size * C))
        else:
            if bT is None:
                raise ValueError("a stage past the first needs bT = (b, T) of its input")
            x = inp
            b, T = bT
        ctx["bT"] = (b, T)
        N = b * T
        aux = xp.zeros((R,), dtype=x.dtype)
        for i in self.layers:
            x, saved, a = self._layer_forward(P, f"layers.{i}.", x, b, T)
            ctx["layers"].append(saved)
            aux = aux + a
        ctx["aux"] = aux
        if not self.last:
            return x, ctx
        hf, xhat, rstd = _ln_forward(x, P["lnf.g"], P["lnf.b"])
        probs = xp.matmul(hf, P["head"])  # (R, N, V)
        _softmax_(probs)
        tgt = xp.reshape(xp.asarray(targets), (R, N))
        picked = xp.take_along_axis(probs, tgt[:, :, None], axis=2)[:, :, 0]  # (R, N)
        ce = -xp.mean(xp.log(picked), axis=1)
        comm.compute(2.0 * N * (2 * C + C * V))
        ctx.update(hf=hf, lnf=(xhat, rstd), probs=probs, tgt=tgt)
        return (ce, aux), ctx

    def _layer_forward(
        self, P: dict[str, Array], p: str, x: Array, b: int, T: int
    ) -> tuple[Array, dict[str, Any], Array]:
        cfg, R, comm = self.cfg, self.R, self.comm
        C, Ht, D, Ct = cfg.n_embd, self.Ht, self.D, self.Ct
        N = b * T
        s: dict[str, Any] = {}
        h1, s["ln1_xhat"], s["ln1_rstd"] = _ln_forward(x, P[p + "ln1.g"], P[p + "ln1.b"])
        qkv = xp.matmul(h1, P[p + "attn.wqkv"])  # (R, N, 3Ct)
        qkv += P[p + "attn.bqkv"][:, None, :]
        q, k, v = _split_heads(qkv, R, b, T, Ht, D)  # (R, b, Ht, T, D) each
        att = xp.matmul(q, _t(k))  # (R, b, Ht, T, T)
        att *= 1.0 / math.sqrt(D)
        att += self.mask[:T, :T]
        _softmax_(att)
        y = xp.empty((R, N, Ct), dtype=x.dtype)  # heads side by side
        xp.matmul(att, v, out=_heads_view(y, R, b, T, Ht, D))
        o = xp.matmul(y, P[p + "attn.wo"])  # (R, N, C), this rank's partial sum
        comm.compute(2.0 * N * (2 * C + C * 3 * Ct + 3 * Ct + Ct * C + C))
        comm.tp_allreduce(o)
        o += P[p + "attn.bo"][:, None, :]
        x = x + o
        s.update(h1=h1, qkv=qkv, att=att, y=y)
        h2, s["ln2_xhat"], s["ln2_rstd"] = _ln_forward(x, P[p + "ln2.g"], P[p + "ln2.b"])
        s["h2"] = h2
        if self.Xl:
            m, aux = self._moe_forward(P, p, h2, b, T, s)
        else:
            Ft = self.Ft
            a = xp.matmul(h2, P[p + "mlp.w1"])  # (R, N, Ft)
            a += P[p + "mlp.b1"][:, None, :]
            sig, g = xp.empty_like(a), xp.empty_like(a)
            _gelu_forward(a, sig, g)
            m = xp.matmul(g, P[p + "mlp.w2"])  # (R, N, C) partial
            comm.compute(2.0 * N * (2 * C + C * Ft + Ft + Ft * C + C))
            comm.tp_allreduce(m)
            m += P[p + "mlp.b2"][:, None, :]
            s.update(a=a, sig=sig, g=g)
            aux = xp.zeros((R,), dtype=x.dtype)
        return x + m, s, aux

    # -------------------------------------------------------------- experts
    def _route(self, sel: Array) -> dict[str, Any]:
        """Where each (token, choice) goes: the expert instance (row holding the expert x
        local expert), sorted so each instance's tokens are contiguous, in source order."""
        R, dp, ep, Xl = self.R, self.dp, self.ep, self.Xl
        _, N, K = sel.shape
        e = xp.reshape(sel, (-1,))  # (R*N*K,) expert of each choice
        src = xp.repeat(xp.arange(R), N * K)  # row of each choice
        d = src % dp
        dst = (src // dp) * dp + (d // ep) * ep + e // Xl  # row holding the expert
        inst = dst * Xl + e % Xl
        order = xp.argsort(inst, kind="stable")
        cnt = xp.bincount(inst, minlength=R * Xl)
        start = xp.cumsum(cnt) - cnt
        inst_s = inst[order]
        pos = xp.arange(order.shape[0]) - start[inst_s]
        pairs = xp.bincount(src * R + dst, minlength=R * R).reshape(R, R)
        return {
            "order": order,
            "inst": inst_s,
            "pos": pos,
            "cap": max(int(cnt.max()) if cnt.shape[0] else 0, 1),
            "cnt": cnt,
            "pairs": pairs,
        }

    def _pair_bytes(self, route: dict[str, Any], itemsize: int) -> np.ndarray:
        """Bytes every row sends every other row in one all-to-all (a row's own tokens stay)."""
        out = to_numpy(route["pairs"]).astype(np.int64) * self.cfg.n_embd * itemsize
        np.fill_diagonal(out, 0)
        return out

    def _moe_forward(
        self, P: dict[str, Array], p: str, h2: Array, b: int, T: int, s: dict[str, Any]
    ) -> tuple[Array, Array]:
        cfg, R, comm = self.cfg, self.R, self.comm
        C, X, K, Xl, Ft = cfg.n_embd, cfg.experts, cfg.top_k, self.Xl, self.Ft
        N = b * T
        logits = xp.matmul(h2, P[p + "moe.router"])  # (R, N, X)
        probs = logits
        _softmax_(probs)
        sel = xp.argsort(-probs, axis=-1, kind="stable")[..., :K]  # (R, N, K)
        pk = xp.take_along_axis(probs, sel, axis=-1)  # (R, N, K)
        S = xp.sum(pk, axis=-1, keepdims=True)
        gate = pk / S
        # Load balancing, per sequence: f_i (share of the choices) and P_i (mean probability).
        seq = xp.repeat(xp.arange(R * b), T * K)
        f = xp.bincount(seq * X + xp.reshape(sel, (-1,)), minlength=R * b * X)
        f = xp.asarray(xp.reshape(f, (R, b, X)), dtype=h2.dtype) / (T * K)
        Pm = xp.mean(xp.reshape(probs, (R, b, T, X)), axis=2)  # (R, b, X)
        aux = AUX_COEF * X * xp.mean(xp.sum(f * Pm, axis=-1), axis=-1)  # (R,)
        comm.compute(2.0 * N * (2 * C + C * X))

        route = self._route(sel)
        inst, pos, cap = route["inst"], route["pos"], route["cap"]
        tok = route["order"] // K  # source token (row * N + position) of each sorted choice
        # Dispatch: every token's hidden state goes to the GPU holding its expert.
        xin = xp.zeros((R * Xl, cap, C), dtype=h2.dtype)
        xin[inst, pos] = xp.reshape(h2, (R * N, C))[tok]
        comm.all_to_all(self._pair_bytes(route, h2.dtype.itemsize))
        w1 = xp.reshape(P[p + "moe.w1"], (R * Xl, C, Ft))
        w2 = xp.reshape(P[p + "moe.w2"], (R * Xl, Ft, C))
        a = xp.matmul(xin, w1)  # (R*Xl, cap, Ft)
        sig, g = xp.empty_like(a), xp.empty_like(a)
        _gelu_forward(a, sig, g)
        z = xp.matmul(g, w2)  # (R*Xl, cap, C), this tensor rank's partial output
        per_row = xp.sum(xp.reshape(route["cnt"], (R, Xl)), axis=1)
        comm.compute(2.0 * float(per_row.max()) * 2 * C * Ft)
        # Combine: every output goes back to its token's GPU, weighted by its gate.
        out = xp.empty((R * N * K, C), dtype=h2.dtype)
        out[route["order"]] = z[inst, pos]
        comm.all_to_all(self._pair_bytes(route, h2.dtype.itemsize).T.copy())
        out = xp.reshape(out, (R, N, K, C))
        m = xp.matmul(gate[:, :, None, :], out)[:, :, 0, :]  # (R, N, C) partial
        m = xp.ascontiguousarray(m)
        comm.compute(2.0 * N * K * C)
        comm.tp_allreduce(m)
        s.update(
            probs=probs, sel=sel, S=S, gate=gate, f=f, route=route, xin=xin, a=a,
            sig=sig, g=g, out=out,
        )  # fmt: skip
        return m, aux

    # ----------------------------------------------------------------- backward
    def backward(
        self,
        P: dict[str, Array],
        G: dict[str, Array],
        ctx: dict[str, Any],
        dout: Array | None,
        scale: float,
    ) -> Array | None:
        """Accumulate this microbatch's gradients into G; return the gradient of the stage's
        input (None on the first stage).

        scale: the weight of each of the microbatch's sequences in its replica's loss (the
        cross-entropy of a token weighs scale / T). dout: the gradient of the stage's output
        (None on the last stage, which starts from its loss)."""
        cfg, R, comm = self.cfg, self.R, self.comm
        C, V = cfg.n_embd, cfg.vocab_size
        b, T = ctx["bT"]
        N = b * T
        if self.last:
            d = ctx["probs"]  # consumed: becomes d(loss)/d(logits)
            tgt = ctx["tgt"]
            ri = xp.repeat(xp.arange(R), N)
            d[ri, xp.tile(xp.arange(N), R), xp.reshape(tgt, (-1,))] -= 1.0
            d *= scale / T
            hf = ctx["hf"]
            G["head"] += xp.matmul(_t(hf), d)
            dhf = xp.matmul(d, _t(P["head"]))
            dx = _ln_backward(dhf, P["lnf.g"], *ctx["lnf"], G["lnf.g"], G["lnf.b"])
            comm.compute(4.0 * N * (2 * C + C * V))
        else:
            dx = dout
        for i, saved in zip(reversed(self.layers), reversed(ctx["layers"]), strict=True):
            dx = self._layer_backward(P, G, f"layers.{i}.", saved, dx, b, T, scale)
        if not self.first:
            return dx
        idx = ctx["idx"]
        dwpe = G["wpe"]
        dwpe[:, :T, :] += xp.sum(xp.reshape(dx, (R, b, T, C)), axis=1)
        flat = xp.reshape(G["wte"], (R * V, C))
        rows = xp.reshape(idx, (R, N)) + (xp.arange(R) * V)[:, None]
        xp.add_at(flat, (xp.reshape(rows, (-1,)),), xp.reshape(dx, (R * N, C)))
        comm.compute(4.0 * N * (V * C + cfg.block_size * C))
        return None

    def _layer_backward(
        self,
        P: dict[str, Array],
        G: dict[str, Array],
        p: str,
        s: dict[str, Any],
        dx: Array,
        b: int,
        T: int,
        scale: float,
    ) -> Array:
        cfg, R, comm = self.cfg, self.R, self.comm
        C, Ht, D, Ct, Ft = cfg.n_embd, self.Ht, self.D, self.Ct, self.Ft
        N = b * T
        if self.Xl:
            dh2 = self._moe_backward(P, G, p, s, dx, b, T, scale)
        else:
            G[p + "mlp.b2"] += _sum_tokens(dx)
            G[p + "mlp.w2"] += xp.matmul(_t(s["g"]), dx)
            dg = xp.matmul(dx, _t(P[p + "mlp.w2"]))  # (R, N, Ft)
            _gelu_backward_(dg, s["a"], s["sig"], xp.empty_like(dg))  # now d(loss)/d(a)
            G[p + "mlp.w1"] += xp.matmul(_t(s["h2"]), dg)
            G[p + "mlp.b1"] += _sum_tokens(dg)
            dh2 = xp.matmul(dg, _t(P[p + "mlp.w1"]))  # (R, N, C), partial
            comm.compute(4.0 * N * (2 * C + C * Ft + Ft + Ft * C + C))
            comm.tp_allreduce(dh2)
        dx = dx + _ln_backward(
            dh2, P[p + "ln2.g"], s["ln2_xhat"], s["ln2_rstd"], G[p + "ln2.g"], G[p + "ln2.b"]
        )

        G[p + "attn.bo"] += _sum_tokens(dx)
        G[p + "attn.wo"] += xp.matmul(_t(s["y"]), dx)
        dy = xp.matmul(dx, _t(P[p + "attn.wo"]))  # (R, N, Ct)
        dyh = _heads_view(dy, R, b, T, Ht, D)
        q, k, v = _split_heads(s["qkv"], R, b, T, Ht, D)
        dqkv = xp.empty((R, N, 3 * Ct), dtype=dx.dtype)
        dq, dk, dv = _split_heads(dqkv, R, b, T, Ht, D)
        att = s["att"]
        xp.matmul(_t(att), dyh, out=dv)
        datt = xp.matmul(dyh, _t(v))  # (R, b, Ht, T, T)
        datt *= att  # softmax backward: P * (dP - sum(P * dP))
        datt -= att * xp.matmul(datt, xp.ones((T, 1), dtype=datt.dtype))
        datt *= 1.0 / math.sqrt(D)
        xp.matmul(datt, k, out=dq)
        xp.matmul(_t(datt), q, out=dk)
        G[p + "attn.wqkv"] += xp.matmul(_t(s["h1"]), dqkv)
        G[p + "attn.bqkv"] += _sum_tokens(dqkv)
        dh1 = xp.matmul(dqkv, _t(P[p + "attn.wqkv"]))  # (R, N, C), partial
        comm.compute(4.0 * N * (2 * C + C * 3 * Ct + 3 * Ct + Ct * C + C))
        comm.tp_allreduce(dh1)
        return dx + _ln_backward(
            dh1, P[p + "ln1.g"], s["ln1_xhat"], s["ln1_rstd"], G[p + "ln1.g"], G[p + "ln1.b"]
        )

    def _moe_backward(
        self,
        P: dict[str, Array],
        G: dict[str, Array],
        p: str,
        s: dict[str, Any],
        dm: Array,
        b: int,
        T: int,
        scale: float,
    ) -> Array:
        cfg, R, comm = self.cfg, self.R, self.comm
        C, X, K, Xl, Ft = cfg.n_embd, cfg.experts, cfg.top_k, self.Xl, self.Ft
        N = b * T
        route, gate, out = s["route"], s["gate"], s["out"]
        inst, pos, order = route["inst"], route["pos"], route["order"]
        # Gates: d(loss)/d(g_k) = dm . E_k(h); each rank holds a partial E_k, so sum them.
        dgate = xp.ascontiguousarray(xp.matmul(out, dm[:, :, :, None])[..., 0])  # (R, N, K)
        comm.tp_allreduce(dgate)
        dout = gate[:, :, :, None] * dm[:, :, None, :]  # (R, N, K, C)
        dz = xp.zeros((R * Xl, route["cap"], C), dtype=dm.dtype)
        dz[inst, pos] = xp.reshape(dout, (R * N * K, C))[order]
        pair_bytes = self._pair_bytes(route, dm.dtype.itemsize)
        comm.all_to_all(pair_bytes)
        w1 = xp.reshape(P[p + "moe.w1"], (R * Xl, C, Ft))
        w2 = xp.reshape(P[p + "moe.w2"], (R * Xl, Ft, C))
        gw1 = xp.reshape(G[p + "moe.w1"], (R * Xl, C, Ft))
        gw2 = xp.reshape(G[p + "moe.w2"], (R * Xl, Ft, C))
        gw2 += xp.matmul(_t(s["g"]), dz)
        dg = xp.matmul(dz, _t(w2))  # (R*Xl, cap, Ft)
        _gelu_backward_(dg, s["a"], s["sig"], xp.empty_like(dg))
        gw1 += xp.matmul(_t(s["xin"]), dg)
        dxin = xp.matmul(dg, _t(w1))  # (R*Xl, cap, C)
        per_row = xp.sum(xp.reshape(route["cnt"], (R, Xl)), axis=1)
        comm.compute(4.0 * float(per_row.max()) * 2 * C * Ft)
        back = xp.empty((R * N * K, C), dtype=dm.dtype)
        back[order] = dxin[inst, pos]
        comm.all_to_all(pair_bytes.T.copy())
        dh = xp.sum(xp.reshape(back, (R, N, K, C)), axis=2)  # (R, N, C), partial
        comm.tp_allreduce(dh)
        # Router: through the renormalised gates, then the load-balancing loss, then softmax.
        probs, sel, S = s["probs"], s["sel"], s["S"]
        dpk = (dgate - xp.sum(dgate * gate, axis=-1, keepdims=True)) / S  # (R, N, K)
        dp = xp.zeros_like(probs)  # (R, N, X)
        xp.put_along_axis(dp, sel, dpk, axis=-1)
        daux = (scale * AUX_COEF * X / T) * s["f"]  # (R, b, X): d(aux)/d(p) at every position
        xp.reshape(dp, (R, b, T, X))[...] += daux[:, :, None, :]
        dlogits = probs * (dp - xp.sum(probs * dp, axis=-1, keepdims=True))
        G[p + "moe.router"] += xp.matmul(_t(s["h2"]), dlogits)
        dh += xp.matmul(dlogits, _t(P[p + "moe.router"]))
        comm.compute(4.0 * N * (2 * C + C * X + K * C))
        return dh

    # ------------------------------------------------------------------ helpers
    def logits_last(self, P: dict[str, Array], idx: Array) -> Array:
        """Next-token logits (V,) after the 1-D token ids idx, on a whole model (one row)."""
        return self.probe_last(P, idx)[0]

    def probe_last(
        self, P: dict[str, Array], idx: Array
    ) -> tuple[Array, list[tuple[list[int], list[float]]]]:
        """Next-token logits (V,) after the 1-D token ids idx, on a whole model (one row), and
        for a model with experts, where each layer's router sent the last token: (the top_k
        experts chosen, 0-based, and their gates), layer by layer."""
        if not (self.first and self.last and self.R == 1):
            raise ValueError("logits_last needs the whole model on one row")
        idx = xp.asarray(idx)
        n = idx.shape[0]
        _, ctx = self.forward(P, xp.reshape(idx, (1, 1, n)), xp.zeros((1, 1, n), dtype=idx.dtype))
        route = []
        if self.cfg.experts:
            for saved in ctx["layers"]:
                sel = to_numpy(saved["sel"])[0, -1]
                gate = to_numpy(saved["gate"])[0, -1]
                route.append(([int(e) for e in sel], [float(g) for g in gate]))
        return xp.matmul(ctx["hf"][0, -1], P["head"][0]), route

    @staticmethod
    def held_bytes(ctx: dict[str, Any], R: int) -> np.ndarray:
        """Bytes of activations each row keeps for the backward pass of this microbatch."""
        out = np.zeros(R, dtype=np.int64)

        def add(v: Any) -> None:
            if hasattr(v, "nbytes") and v.ndim and v.shape[0] == R:
                out[:] += v.nbytes // R

        for saved in ctx["layers"]:
            for k, v in saved.items():
                if k in ("xin", "a", "sig", "g") and "route" in saved:
                    # Expert activations sit on the rows holding the experts: count tokens.
                    cnt = to_numpy(saved["route"]["cnt"]).reshape(R, -1).sum(axis=1)
                    out[:] += cnt * v.shape[-1] * v.itemsize
                elif k != "route":
                    add(v)
        for k in ("hf", "probs"):
            if k in ctx:
                add(ctx[k])
        if "lnf" in ctx:
            for v in ctx["lnf"]:
                add(v)
        return out
