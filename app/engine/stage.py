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

The layers' maths is ops.py's, shared with the replicated model (model.py). A stage hands
the kernels fresh arrays, kept as the microbatch's activations, and sums along rows one GPU
at a time, so a TP group's copies of the same numbers stay bit-identical.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import ops
from .backend import to_numpy, xp
from .collectives import ring_allreduce_groups_
from .model import ModelConfig
from .ops import Space

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


class Stage:
    """Forward and backward of layers [layers.start, layers.stop) on one stage's GPUs.

    The first stage also embeds the tokens; the last one also applies the final layer norm,
    the head and the cross-entropy loss. Parameters and gradients are dicts of (R, *shard)
    arrays named as in model.param_shapes. The maths is ops.py's, on fresh arrays: a stage
    keeps each microbatch's activations until that microbatch's backward pass."""

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
        self._spaces: dict[tuple[str, str], Space] = {}

    def _space(self, dtype: Any) -> Space:
        # Sums along rows one GPU at a time: a TP group's copies must agree bit for bit.
        key = (str(dtype), repr(xp))
        sp = self._spaces.get(key)
        if sp is None:
            sp = self._spaces[key] = Space(dtype, per_row=True)
        return sp

    def _reduce(self) -> ops.Reduce:
        return self.comm.tp_allreduce if self.tp > 1 else None

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        P: dict[str, Array],
        inp: Array,
        targets: Array | None = None,
        *,
        bT: tuple[int, int] | None = None,
    ) -> tuple[Array, dict[str, Any]]:
        """inp: token ids (R, B, T) on the first stage, else the residual stream (R, B*T, C)
        with bT = (B, T). targets (R, B, T): on the last stage.

        Returns (x, ctx) on inner stages, or ((ce, aux), ctx) on the last one: ce (R,) the
        mean cross-entropy of each row's microbatch. aux (R,) is always in ctx["aux"]: the
        mean over the microbatch's sequences of this stage's load-balancing losses."""
        cfg, R, comm = self.cfg, self.R, self.comm
        C, V = cfg.n_embd, cfg.vocab_size
        ctx: dict[str, Any] = {"layers": []}
        if self.first:
            idx = xp.asarray(inp)
            _, B, T = idx.shape
            N = B * T
            x = xp.empty((R, N, C), dtype=P["wte"].dtype)
            ops.embed(P["wte"], P["wpe"], idx, out=x)
            ctx["idx"] = idx
            comm.compute(2.0 * N * (V * C + cfg.block_size * C))
        else:
            if bT is None:
                raise ValueError("a stage past the first needs bT = (B, T) of its input")
            x = inp
            B, T = bT
        ctx["bT"] = (B, T)
        N = B * T
        sp = self._space(x.dtype)
        aux = xp.zeros((R,), dtype=x.dtype)
        for i in self.layers:
            x, saved, a = self._layer_forward(P, f"layers.{i}.", x, B, T, sp)
            ctx["layers"].append(saved)
            aux = aux + a
        ctx["aux"] = aux
        if not self.last:
            return x, ctx
        hf, *lnf = ops.norm(x, P, "lnf", sp)
        probs = xp.empty((R, N, V), dtype=x.dtype)
        ops.output_probs(hf, P["head"], probs, sp)
        tgt = xp.reshape(xp.asarray(targets), (R, N))
        ce = ops.cross_entropy(probs, tgt)
        comm.compute(2.0 * N * (2 * C + C * V))
        ctx.update(hf=hf, lnf=lnf, probs=probs, tgt=tgt)
        return (ce, aux), ctx

    def _layer_forward(
        self, P: dict[str, Array], p: str, x: Array, B: int, T: int, sp: Space
    ) -> tuple[Array, dict[str, Any], Array]:
        cfg, R, comm = self.cfg, self.R, self.comm
        C, Ht, Ct = cfg.n_embd, self.Ht, self.Ct
        N, dt = B * T, x.dtype
        s: dict[str, Any] = {}
        h1, s["ln1_xhat"], s["ln1_rstd"] = ops.norm(x, P, p + "ln1", sp)
        s.update(
            h1=h1,
            qkv=xp.empty((R, N, 3 * Ct), dtype=dt),
            att=xp.empty((R, B, Ht, T, T), dtype=dt),
            y=xp.empty((R, N, Ct), dtype=dt),  # heads side by side
        )
        o = xp.empty((R, N, C), dtype=dt)  # this rank's partial sum until the all-reduce
        comm.compute(2.0 * N * (2 * C + C * 3 * Ct + 3 * Ct + Ct * C + C))
        ops.attention(
            h1,
            P[p + "attn.wqkv"],
            P[p + "attn.bqkv"],
            P[p + "attn.wo"],
            P[p + "attn.bo"],
            qkv=s["qkv"],
            att=s["att"],
            y=s["y"],
            out=o,
            sp=sp,
            reduce=self._reduce(),
        )
        x = x + o
        h2, s["ln2_xhat"], s["ln2_rstd"] = ops.norm(x, P, p + "ln2", sp)
        s["h2"] = h2
        if self.Xl:
            m, aux = self._moe_forward(P, p, h2, B, T, s, sp)
        else:
            Ft = self.Ft
            s.update({k: xp.empty((R, N, Ft), dtype=dt) for k in ("a", "sig", "g")})
            m = xp.empty((R, N, C), dtype=dt)
            comm.compute(2.0 * N * (2 * C + C * Ft + Ft + Ft * C + C))
            ops.mlp(
                h2,
                P[p + "mlp.w1"],
                P[p + "mlp.b1"],
                P[p + "mlp.w2"],
                P[p + "mlp.b2"],
                a=s["a"],
                s=s["sig"],
                g=s["g"],
                out=m,
                sp=sp,
                reduce=self._reduce(),
            )
            aux = xp.zeros((R,), dtype=dt)
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

    def _experts(
        self, P: dict[str, Array], p: str, G: dict[str, Array] | None = None
    ) -> tuple[Array, Array]:
        """This stage's expert weights (and gradients) as (R * Xl, ...) stacks, one per
        expert instance."""
        C, Xl, Ft = self.cfg.n_embd, self.Xl, self.Ft
        shapes = {"moe.w1": (self.R * Xl, C, Ft), "moe.w2": (self.R * Xl, Ft, C)}
        return tuple(xp.reshape((G or P)[p + k], shape) for k, shape in shapes.items())

    def _moe_forward(
        self,
        P: dict[str, Array],
        p: str,
        h2: Array,
        B: int,
        T: int,
        s: dict[str, Any],
        sp: Space,
    ) -> tuple[Array, Array]:
        cfg, R, comm = self.cfg, self.R, self.comm
        C, X, K, Xl, Ft = cfg.n_embd, cfg.experts, cfg.top_k, self.Xl, self.Ft
        N = B * T
        routed = ops.route(h2, P[p + "moe.router"], K, B, AUX_COEF, sp)
        comm.compute(2.0 * N * (2 * C + C * X))

        route = self._route(routed["sel"])
        inst, pos, cap = route["inst"], route["pos"], route["cap"]
        tok = route["order"] // K  # source token (row * N + position) of each sorted choice
        # Dispatch: every token's hidden state goes to the GPU holding its expert.
        xin = xp.zeros((R * Xl, cap, C), dtype=h2.dtype)
        xin[inst, pos] = xp.reshape(h2, (R * N, C))[tok]
        comm.all_to_all(self._pair_bytes(route, h2.dtype.itemsize))
        w1, w2 = self._experts(P, p)
        a, sig, g = (xp.empty((R * Xl, cap, Ft), dtype=h2.dtype) for _ in range(3))
        z = xp.empty((R * Xl, cap, C), dtype=h2.dtype)  # this tensor rank's partial output
        ops.mlp(xin, w1, None, w2, None, a=a, s=sig, g=g, out=z, sp=sp)
        per_row = xp.sum(xp.reshape(route["cnt"], (R, Xl)), axis=1)
        comm.compute(2.0 * float(per_row.max()) * 2 * C * Ft)
        # Combine: every output goes back to its token's GPU, weighted by its gate.
        out = xp.empty((R * N * K, C), dtype=h2.dtype)
        out[route["order"]] = z[inst, pos]
        comm.all_to_all(self._pair_bytes(route, h2.dtype.itemsize).T.copy())
        out = xp.reshape(out, (R, N, K, C))
        m = ops.combine(routed["gate"], out)  # (R, N, C) partial
        comm.compute(2.0 * N * K * C)
        comm.tp_allreduce(m)
        aux = routed.pop("aux")
        s.update(routed, route=route, xin=xin, a=a, sig=sig, g=g, out=out)
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
        (None on the last stage, which starts from its loss); it is consumed (the residual
        stream's gradient accumulates in it). ctx's activations are consumed too."""
        cfg, comm = self.cfg, self.comm
        C, V = cfg.n_embd, cfg.vocab_size
        B, T = ctx["bT"]
        N = B * T
        if self.last:
            d = ctx["probs"]  # consumed: becomes d(loss)/d(logits)
            ops.cross_entropy_backward_(d, ctx["tgt"], scale / T)
            sp = self._space(d.dtype)
            hf = ctx["hf"]
            dhf = xp.empty_like(hf)
            ops.linear_backward(d, hf, P["head"], G["head"], None, dhf, sp, add=True)
            dx = xp.zeros_like(hf)
            ops.norm_backward(dhf, P, G, "lnf", *ctx["lnf"], dx, sp, add=True)
            comm.compute(4.0 * N * (2 * C + C * V))
        else:
            dx = dout
            sp = self._space(dx.dtype)
        for i, saved in zip(reversed(self.layers), reversed(ctx["layers"]), strict=True):
            self._layer_backward(P, G, f"layers.{i}.", saved, dx, B, T, scale, sp)
        if not self.first:
            return dx
        ops.embed_backward(dx, ctx["idx"], G["wte"], G["wpe"], add=True)
        comm.compute(4.0 * N * (V * C + cfg.block_size * C))
        return None

    def _layer_backward(
        self,
        P: dict[str, Array],
        G: dict[str, Array],
        p: str,
        s: dict[str, Any],
        dx: Array,
        B: int,
        T: int,
        scale: float,
        sp: Space,
    ) -> None:
        """Adds the layer's input gradient into dx (R, N, C), which holds its output's."""
        cfg, comm = self.cfg, self.comm
        C, Ct, Ft = cfg.n_embd, self.Ct, self.Ft
        N = B * T
        dh = xp.empty_like(dx)  # a sublayer's input gradient, partial until the all-reduce
        if self.Xl:
            self._moe_backward(P, G, p, s, dx, dh, B, T, scale, sp)
        else:
            comm.compute(4.0 * N * (2 * C + C * Ft + Ft + Ft * C + C))
            ops.mlp_backward(
                dx,
                s["h2"],
                s["a"],
                s["sig"],
                s["g"],
                P[p + "mlp.w1"],
                P[p + "mlp.w2"],
                (G[p + "mlp.w1"], G[p + "mlp.b1"], G[p + "mlp.w2"], G[p + "mlp.b2"]),
                dh=dh,
                sp=sp,
                add=True,
                reduce=self._reduce(),
            )
        ops.norm_backward(dh, P, G, p + "ln2", s["ln2_xhat"], s["ln2_rstd"], dx, sp, add=True)
        dh = xp.empty_like(dx)
        comm.compute(4.0 * N * (2 * C + C * 3 * Ct + 3 * Ct + Ct * C + C))
        ops.attention_backward(
            dx,
            s["h1"],
            P[p + "attn.wqkv"],
            P[p + "attn.wo"],
            s["qkv"],
            s["att"],
            s["y"],
            (G[p + "attn.wqkv"], G[p + "attn.bqkv"], G[p + "attn.wo"], G[p + "attn.bo"]),
            dh=dh,
            sp=sp,
            add=True,
            reduce=self._reduce(),
        )
        ops.norm_backward(dh, P, G, p + "ln1", s["ln1_xhat"], s["ln1_rstd"], dx, sp, add=True)

    def _moe_backward(
        self,
        P: dict[str, Array],
        G: dict[str, Array],
        p: str,
        s: dict[str, Any],
        dm: Array,
        dh: Array,
        B: int,
        T: int,
        scale: float,
        sp: Space,
    ) -> None:
        """The MoE layer's input gradient into dh (R, N, C), from its output's dm."""
        cfg, R, comm = self.cfg, self.R, self.comm
        C, X, K, Xl, Ft = cfg.n_embd, cfg.experts, cfg.top_k, self.Xl, self.Ft
        N = B * T
        route = s["route"]
        inst, pos, order = route["inst"], route["pos"], route["order"]
        # Gates: d(loss)/d(g_k) = dm . E_k(h); each rank holds a partial E_k, so sum them.
        dgate, dout = ops.combine_backward(dm, s["gate"], s["out"])  # (R, N, K), (R, N, K, C)
        comm.tp_allreduce(dgate)
        dz = xp.zeros((R * Xl, route["cap"], C), dtype=dm.dtype)
        dz[inst, pos] = xp.reshape(dout, (R * N * K, C))[order]
        pair_bytes = self._pair_bytes(route, dm.dtype.itemsize)
        comm.all_to_all(pair_bytes)
        w1, w2 = self._experts(P, p)
        gw1, gw2 = self._experts(P, p, G)
        dxin = xp.empty((R * Xl, route["cap"], C), dtype=dm.dtype)
        ops.mlp_backward(
            dz, s["xin"], s["a"], s["sig"], s["g"], w1, w2, (gw1, None, gw2, None),
            dh=dxin, sp=sp, add=True,
        )  # fmt: skip
        per_row = xp.sum(xp.reshape(route["cnt"], (R, Xl)), axis=1)
        comm.compute(4.0 * float(per_row.max()) * 2 * C * Ft)
        back = xp.empty((R * N * K, C), dtype=dm.dtype)
        back[order] = dxin[inst, pos]
        comm.all_to_all(pair_bytes.T.copy())
        dh[...] = xp.sum(xp.reshape(back, (R, N, K, C)), axis=2)  # partial
        comm.tp_allreduce(dh)
        ops.route_backward(
            dgate,
            s,
            s["h2"],
            P[p + "moe.router"],
            G[p + "moe.router"],
            dh,
            aux_weight=scale * AUX_COEF * X / T,
            sp=sp,
            add=True,
        )
        comm.compute(4.0 * N * (2 * C + C * X + K * C))

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
