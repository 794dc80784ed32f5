"""A training step under a parallel plan: pipeline stages, tensor and expert shards, and the
data-parallel copies of all of it, each GPU with its own arrays.

`ShardedModel` keeps, for every pipeline stage, each parameter the stage holds as one
(R, *shard) array with a row per GPU of the stage (sharding.py), and the gradients and AdamW
state alongside. A step:

1. cuts each data-parallel replica's batch into M microbatches;
2. runs every stage's forwards and backwards in its schedule's order (pipeline.py), each
   op on all of the stage's GPUs at once (stage.py: real partial products, real ring
   all-reduces inside TP groups, real token all-to-alls inside EP groups); a stage's
   output is copied into the next stage's receive buffer (and gradients into the previous
   one's): the point-to-point sends. Gradients add up over the microbatches;
3. averages gradients with a real ring all-reduce in each data-parallel group (and, for
   experts, each group of GPUs holding the same experts);
4. clips by the global norm over all distinct shards; each stage's AdamW then updates every
   GPU's own rows (sharded.py, the step engine that drives all of this).

`trace` then prices every op with the timing model, lays the schedule out in time
(pipeline.simulate: an op starts when its stage is free and its input has arrived) and
writes the step's lanes: compute per microbatch and stage, each collective with its group,
bytes and links, the sends between stages, and every idle stretch as waiting.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import model as M
from .backend import dtype_of, to_numpy, xp
from .cluster import Topology
from .collectives import RingTrace, padded_width, ring_allreduce_
from .gradsync import SyncRing, add_grad_sync
from .optim import AdamW
from .pipeline import Timeline, run_order, simulate
from .plan import Plan
from .sharding import (
    distinct_rows,
    ep_split,
    gather,
    shard_shape,
    stage_layers,
    stage_of,
    stage_rows,
    tp_split,
)
from .stage import Stage, StageComm
from .timing import (
    ACTIVATION_WIRE_BYTES,
    GRAD_WIRE_BYTES,
    HardwarePreset,
    all_to_all_round_seconds,
    compute_seconds,
    hop_seconds,
    layer_kernels,
    optimizer_seconds,
    rails_of,
    ring_seconds_by_pass,
)
from .trace import StepTrace, StepTraceBuilder

Array = Any


@dataclass
class StepRun:
    """What one step's forward and backward passes did."""

    losses: np.ndarray  # (dp,) each replica's loss (cross-entropy + load balancing)
    programs: dict[tuple[int, str, int], list]  # (stage, "F"|"B", mb) -> StageComm.program
    walls: dict[tuple[int, str, int], float]  # measured seconds of each op
    held: dict[tuple[int, int], np.ndarray]  # (stage, mb) -> activation bytes per row
    send_bytes: int  # bytes of one stage-to-stage send per GPU pair (activations or grads)


@dataclass
class DpRing:
    stage: int
    experts: bool  # the expert weights' group (else the stage's other parameters)
    gpus: list[int]
    trace: RingTrace
    wall_s: float


@dataclass
class StepStats:
    """Figures of the last step that the report has no field for (the CLI's summary)."""

    timeline: Timeline | None = None
    bubble_fraction: float = 0.0
    activation_bytes: list[int] = field(default_factory=list)  # peak per GPU


class ShardedModel:
    def __init__(
        self,
        plan: Plan,
        cfg: M.ModelConfig,
        *,
        dtype: str,
        betas: tuple[float, float],
        eps: float,
        weight_decay: float,
    ) -> None:
        self.plan, self.cfg = plan, cfg
        self.dtype = dtype_of(dtype)
        self.itemsize = np.dtype(dtype).itemsize
        pp, tp, dp, ep = plan.pp, plan.tp, plan.dp, plan.ep
        self.R = tp * dp
        self.shapes = M.param_shapes(cfg)
        self.stage_names: list[list[str]] = [[] for _ in range(pp)]
        for name in self.shapes:
            self.stage_names[stage_of(name, cfg.n_layer, pp)].append(name)
        self.comms = [StageComm(tp, dp, ep) for _ in range(pp)]
        self.stages = [
            Stage(
                cfg,
                stage_layers(s, cfg.n_layer, pp),
                first=s == 0,
                last=s == pp - 1,
                tp=tp,
                dp=dp,
                ep=ep,
                comm=self.comms[s],
            )
            for s in range(pp)
        ]
        self.params: list[dict[str, Array]] = []
        self.grads: list[dict[str, Array]] = []
        for names in self.stage_names:
            shapes = {n: shard_shape(n, self.shapes[n], plan) for n in names}
            self.params.append(
                {n: xp.zeros((self.R, *s), dtype=self.dtype) for n, s in shapes.items()}
            )
            self.grads.append(
                {n: xp.zeros((self.R, *s), dtype=self.dtype) for n, s in shapes.items()}
            )
        self.opts = [AdamW(p, betas=betas, eps=eps, weight_decay=weight_decay) for p in self.params]
        self._whole: Stage | None = None

    # ---- state --------------------------------------------------------------------------
    def load(self, full: dict[str, np.ndarray], into: str = "p") -> None:
        """Shard full arrays (one copy of the model) into every GPU's rows: parameters ("p")
        or AdamW moments ("m", "v")."""
        for s, names in enumerate(self.stage_names):
            for n in names:
                dst = {"p": self.params[s], "m": self.opts[s].m, "v": self.opts[s].v}[into][n]
                dst[...] = xp.asarray(np.stack(stage_rows(n, to_numpy(full[n]), self.plan)))

    def full(self, which: str = "p", copy: int = 0) -> dict[str, np.ndarray]:
        """One full copy of the parameters ("p") or AdamW moments ("m", "v"), gathered from
        the shards of data-parallel copy `copy`, in the fixed parameter order."""
        out = {}
        for n in self.shapes:
            s = stage_of(n, self.cfg.n_layer, self.plan.pp)
            src = {"p": self.params[s], "m": self.opts[s].m, "v": self.opts[s].v}[which][n]
            out[n] = gather(n, src, self.plan, copy)
        return out

    @property
    def opt_t(self) -> int:
        return self.opts[0].t

    @opt_t.setter
    def opt_t(self, t: int) -> None:
        for o in self.opts:
            o.t = int(t)

    def gpu_arrays(self, g: int) -> tuple[dict, dict, dict]:
        """Views of GPU g's own rows: (params, grads, optimizer state)."""
        d, s, t = self.plan.coords(g)
        r = t * self.plan.dp + d
        params = {n: a[r] for n, a in self.params[s].items()}
        grads = {n: a[r] for n, a in self.grads[s].items()}
        opt = {f"m.{n}": a[r] for n, a in self.opts[s].m.items()}
        opt.update({f"v.{n}": a[r] for n, a in self.opts[s].v.items()})
        return params, grads, opt

    def whole_model(self) -> tuple[Stage, dict[str, Array]]:
        """The whole model on one row (for the probe), with freshly gathered parameters."""
        if self._whole is None:
            self._whole = Stage(self.cfg, range(self.cfg.n_layer), first=True, last=True)
        return self._whole, {n: xp.asarray(v[None]) for n, v in self.full("p").items()}

    # ---- the step -----------------------------------------------------------------------
    def run(self, idx: np.ndarray, targets: np.ndarray) -> StepRun:
        """Forward and backward of every microbatch on every stage, in schedule order.

        idx, targets: (dp, b, T), each replica's batch."""
        plan = self.plan
        dp, b, T = idx.shape
        Mb = plan.microbatches
        mb = b // Mb
        for grads in self.grads:
            for g in grads.values():
                g[...] = 0
        last = plan.pp - 1
        scale = 1.0 / (mb * Mb)  # each sequence's weight in its replica's loss
        fwd_in: dict[tuple[int, int], Array] = {}
        bwd_in: dict[tuple[int, int], Array] = {}
        ctxs: dict[tuple[int, int], dict] = {}
        ce = np.zeros((Mb, dp))
        aux = np.zeros((Mb, dp))
        programs, walls, held = {}, {}, {}

        def rows(a: np.ndarray, m: int) -> Array:
            # Every tensor rank of replica d works on replica d's microbatch.
            part = xp.asarray(a[:, m * mb : (m + 1) * mb])
            return xp.concatenate([part] * plan.tp) if plan.tp > 1 else part

        for s, (kind, m) in run_order(plan.schedule, plan.pp, Mb):
            comm, stage, P = self.comms[s], self.stages[s], self.params[s]
            comm.begin()
            t0 = time.perf_counter()
            if kind == "F":
                inp = rows(idx, m) if s == 0 else fwd_in.pop((s, m))
                tgt = rows(targets, m) if s == last else None
                out, ctx = stage.forward(P, inp, tgt, bT=(mb, T))
                aux[m] += to_numpy(ctx["aux"][:dp])
                if s == last:
                    ce[m] = to_numpy(out[0][:dp])
                else:
                    # The send: a copy into the next stage's receive buffer. Row r of this
                    # stage sends to row r of the next (same replica, same tensor rank).
                    fwd_in[(s + 1, m)] = xp.array(out, copy=True)
                held[(s, m)] = Stage.held_bytes(ctx, self.R)
                ctxs[(s, m)] = ctx
            else:
                ctx = ctxs.pop((s, m))
                dout = bwd_in.pop((s, m)) if s < last else None
                dx = stage.backward(P, self.grads[s], ctx, dout, scale)
                if s > 0:
                    bwd_in[(s - 1, m)] = xp.array(dx, copy=True)
            walls[(s, kind, m)] = time.perf_counter() - t0
            programs[(s, kind, m)] = comm.program
        losses = np.mean(ce + aux, axis=0)
        send = mb * T * self.cfg.n_embd * self.itemsize
        return StepRun(losses, programs, walls, held, send)

    def allreduce(self, topology: Topology) -> list[DpRing]:
        """Average gradients over each data-parallel group with a ring all-reduce: the
        stage's parameters over the GPUs holding the same shard; expert weights over the
        GPUs holding the same experts (they already hold the sum over their EP group)."""
        plan, out = self.plan, []
        dp, ep = plan.dp, plan.ep
        for s, names in enumerate(self.stage_names):
            dense = [n for n in names if not ep_split(n)]
            experts = [n for n in names if ep_split(n)]
            for t in range(plan.tp):
                ds = list(range(dp))
                out.append(self._ring(s, dense, t, ds, False, topology, "mean"))
            if experts:
                for t in range(plan.tp):
                    for e in range(ep):
                        ds = list(range(e, dp, ep))
                        out.append(self._ring(s, experts, t, ds, True, topology, "sum"))
                for n in experts:
                    self.grads[s][n] *= 1.0 / dp
        return out

    def _ring(
        self,
        s: int,
        names: list[str],
        t: int,
        ds: list[int],
        experts: bool,
        topology: Topology,
        op: str,
    ) -> DpRing:
        t0 = time.perf_counter()
        plan = self.plan
        grads = self.grads[s]
        rows = [t * plan.dp + d for d in ds]
        gpus = [plan.gpu(d, s, t) for d in ds]
        sizes = [math.prod(grads[n].shape[1:]) for n in names]
        n = sum(sizes)
        g = len(rows)
        work = xp.zeros((g, padded_width(n, g)), dtype=self.dtype)
        off = 0
        for name, size in zip(names, sizes, strict=True):
            work[:, off : off + size] = xp.reshape(grads[name][rows], (g, size))
            off += size
        trace = ring_allreduce_(
            work,
            n,
            ring=gpus,
            link_kind=topology.link_kind,
            op=op,
            wire_itemsize=GRAD_WIRE_BYTES,  # a mixed-precision cluster sends BF16 gradients
        )
        off = 0
        for name, size in zip(names, sizes, strict=True):
            grads[name][rows] = xp.reshape(work[:, off : off + size], (g, *grads[name].shape[1:]))
            off += size
        return DpRing(s, experts, gpus, trace, time.perf_counter() - t0)

    def clip(self, max_norm: float) -> float:
        """Clip by the global norm over every distinct shard (each parameter counted once);
        returns the norm before clipping."""
        norm = math.sqrt(self._sum_of_squares(self.grads))
        if norm > max_norm:
            factor = max_norm / (norm + 1e-6)
            for grads in self.grads:
                for gr in grads.values():
                    gr *= factor
        return norm

    def params_l2(self) -> float:
        return math.sqrt(self._sum_of_squares(self.params))

    def _sum_of_squares(self, stages: list[dict[str, Array]]) -> float:
        """The sum of squares of every distinct shard (each parameter counted once), added
        up stage by stage, name by name, in a fixed order."""
        total = 0.0
        for arrays in stages:
            for name, a in arrays.items():
                for r in distinct_rows(name, self.plan):
                    row = xp.reshape(a[r], (-1,))
                    total += float(xp.sum(row * row))
        return total

    def params_per_gpu(self, s: int) -> int:
        return sum(math.prod(a.shape[1:]) for a in self.params[s].values())

    # ---- time and memory ----------------------------------------------------------------
    def activation_peaks(self, timeline: Timeline, run: StepRun) -> list[int]:
        """Each GPU's peak activation bytes over the step: what its stage holds at once, as
        the schedule keeps microbatches from forward to backward."""
        plan = self.plan
        out = [0] * plan.gpus
        for s in range(plan.pp):
            held = np.zeros(self.R, dtype=np.int64)
            peak = held.copy()
            for kind, m in timeline.orders[s]:
                if kind == "F":
                    held += run.held[(s, m)]
                    peak = np.maximum(peak, held)
                else:
                    held -= run.held[(s, m)]
            for r, g in enumerate(plan.stage_gpus(s)):
                out[g] = int(peak[r])
        return out

    def trace(
        self,
        run: StepRun,
        rings: list[DpRing],
        *,
        preset: HardwarePreset,
        topology: Topology,
        data_s: float,
        data_wall: float,
        opt_walls: list[float],
        checkpoint_s: float = 0.0,
        checkpoint_wall: float | None = None,
        checkpoint_lanes: list[int] | None = None,
    ) -> tuple[StepTrace, Timeline]:
        """The step's lanes on the simulated hardware. Activations and gradients travel as
        BF16 (timing.py: a mixed-precision cluster), whatever dtype the numbers here are
        computed in; each op's compute has the kernel floor of its layers; each stage's
        gradients are all-reduced in buckets beside its last backward (gradsync.py); the
        checkpoint is written by `checkpoint_lanes` (one GPU per shard) while the rest wait."""
        plan, itemsize = self.plan, ACTIVATION_WIRE_BYTES
        wire = ACTIVATION_WIRE_BYTES / self.itemsize  # bytes recorded here -> bytes on the wire
        dp, tp, ep = plan.dp, plan.tp, plan.ep
        link = functools.cache(topology.link_kind)
        server_of = [g.server for g in topology.gpus]
        b = StepTraceBuilder(plan.gpus)
        b.add_span("data", 0.0, data_s, wall_s=data_wall)
        stage_gpus = [plan.stage_gpus(s) for s in range(plan.pp)]

        def tp_rings(s: int) -> list[list[int]]:
            return [[plan.gpu(d, s, t) for t in range(tp)] for d in range(dp)]

        def ep_groups(s: int) -> list[list[int]]:
            return [
                [t * dp + blk * ep + e for e in range(ep)]
                for t in range(tp)
                for blk in range(dp // ep)
            ]

        @functools.cache
        def tp_joins(s: int, chunks: tuple[int, ...]) -> tuple[float, list]:
            groups = []
            for ring in tp_rings(s):
                links = [link(ring[i], ring[(i + 1) % tp]) for i in range(tp)]
                cb = [c * itemsize for c in chunks]
                groups.append((ring, links, cb, ring_seconds_by_pass(preset, links, cb)))
            return max(sum(g[3]) for g in groups), groups

        # Price every segment of every op: (kind, seconds, per-group detail). An op's kernels
        # (its stage's layers, and the embedding or head on the first and last stage) are
        # shared out over its compute segments in proportion to their FLOPs.
        priced: dict[tuple[int, str, int], list[tuple[str, float, Any]]] = {}
        last_stage = plan.pp - 1
        for (s, kind, m), program in run.programs.items():
            segs = []
            pass_kind = "forward" if kind == "F" else "backward"
            kernels = layer_kernels(pass_kind, len(self.stages[s].layers), outside=False)
            if s in (0, last_stage):  # the embedding and the head (one stage when pp is 1)
                kernels += layer_kernels(pass_kind, 0)
            op_flops = sum(arg for what, arg in program if what == "compute") or 1.0
            for what, arg in program:
                if what == "compute":
                    share = kernels * arg / op_flops
                    segs.append(("compute", compute_seconds(preset, arg, share), None))
                elif what == "tp_allreduce":
                    seconds, groups = tp_joins(s, tuple(arg[1]))
                    segs.append(("tp_allreduce", seconds, groups))
                elif what == "all_to_all":
                    rows = stage_gpus[s]
                    groups = []
                    for grp in ep_groups(s):
                        gpus = [rows[r] for r in grp]
                        nb = [[int(arg[i, j] * wire) for j in grp] for i in grp]
                        ln = [[link(a, c) if a != c else "" for c in gpus] for a in gpus]
                        groups.append((gpus, nb, ln, all_to_all_round_seconds(preset, nb, ln)))
                    segs.append(("all_to_all", max(sum(g[3]) for g in groups), groups))
            priced[(s, kind, m)] = segs

        def op_seconds(s: int, kind: str, m: int) -> float:
            return sum(seg[1] for seg in priced[(s, kind, m)])

        def pairs(src: int, dst: int) -> list[tuple[int, int]]:
            return [
                (plan.gpu(d, src, t), plan.gpu(d, dst, t)) for d in range(dp) for t in range(tp)
            ]

        send_bytes = int(run.send_bytes * wire)

        @functools.cache
        def hop(a: int, c: int) -> float:
            return hop_seconds(preset, send_bytes, link(a, c))

        @functools.cache
        def send_seconds(kind: str, m: int, src: int, dst: int) -> float:
            return max(hop(a, c) for a, c in pairs(src, dst))

        tl = simulate(plan.schedule, plan.pp, plan.microbatches, op_seconds, send_seconds)
        T0 = data_s
        for op in tl.ops:
            s, lanes = op.stage, stage_gpus[op.stage]
            segs = priced[(s, op.kind, op.mb)]
            busy = sum(seg[1] for seg in segs if seg[0] == "compute") or 1.0
            wall = run.walls[(s, op.kind, op.mb)]
            kind = "forward" if op.kind == "F" else "backward"
            t = T0 + op.t0
            for what, dur, groups in segs:
                if what == "compute":
                    b.add_span(kind, t, dur, lanes=lanes, wall_s=wall * dur / busy, mb=op.mb)
                elif what == "tp_allreduce":
                    for ring, links, cb, passes in groups:
                        took = b.add_ring(
                            "tp_allreduce",
                            t,
                            passes,
                            ring=ring,
                            links=links,
                            chunk_bytes=cb,
                            mb=op.mb,
                        )
                        if took < dur:
                            b.add_span("wait", t + took, dur - took, lanes=ring, mb=op.mb)
                else:
                    for gpus, nb, ln, rounds in groups:
                        took = b.add_all_to_all(
                            "all_to_all",
                            t,
                            rounds,
                            gpus=gpus,
                            nbytes=[x for row in nb for x in row],
                            links=[x for row in ln for x in row],
                            mb=op.mb,
                        )
                        if took < dur:
                            b.add_span("wait", t + took, dur - took, lanes=gpus, mb=op.mb)
                t += dur
        for tr in tl.transfers:
            for a, c in pairs(tr.src, tr.dst):
                b.add_p2p(
                    "p2p",
                    T0 + tr.t0,
                    hop(a, c),
                    src=a,
                    dst=c,
                    nbytes=send_bytes,
                    link=link(a, c),
                    mb=tr.mb,
                )
        ends = []
        for s in range(plan.pp):
            lanes = stage_gpus[s]
            t = T0
            for op in tl.stage_ops(s):
                if op.t0 + T0 > t:
                    b.add_span("wait", t, op.t0 + T0 - t, lanes=lanes)
                t = T0 + op.t1
            # The stage's gradients go out in buckets beside its last backward: the dense
            # groups' rings first, then the experts' (gradsync.py).
            last_b = max((op for op in tl.stage_ops(s) if op.kind == "B"), key=lambda o: o.t1)
            phases = [
                [
                    SyncRing(
                        gpus=r.gpus,
                        links=r.trace.links,
                        elements=r.trace.elements,
                        rails=rails_of(r.gpus, server_of),
                        wall_s=r.wall_s,
                    )
                    for r in rings
                    if r.stage == s and r.experts == experts
                ]
                for experts in (False, True)
            ]
            window = (T0 + last_b.t0, T0 + last_b.t1)
            t = add_grad_sync(b, preset, [p for p in phases if p], window=window)
            opt_s = optimizer_seconds(preset, self.params_per_gpu(s))
            b.add_span("optimizer", t, opt_s, lanes=lanes, wall_s=opt_walls[s])
            ends.append(t + opt_s)
        end = max(ends)
        for s, e in enumerate(ends):
            if e < end:
                b.add_span("wait", e, end - e, lanes=stage_gpus[s])
        if checkpoint_s or checkpoint_wall is not None:
            writers = list(range(plan.gpus)) if checkpoint_lanes is None else checkpoint_lanes
            b.add_span("checkpoint", end, checkpoint_s, lanes=writers, wall_s=checkpoint_wall)
            others = sorted(set(range(plan.gpus)) - set(writers))
            if others:
                b.add_span("wait", end, checkpoint_s, lanes=others)
            end += checkpoint_s
        return b.done(end), tl

    def copies_identical(self) -> bool:
        """Do all GPUs that hold the same shard hold the same bits (parameters, gradients,
        AdamW moments)? Replicated parameters are one shard across the whole TP group."""
        plan = self.plan
        for s, names in enumerate(self.stage_names):
            for n in names:
                for arrays in (self.params[s], self.grads[s], self.opts[s].m, self.opts[s].v):
                    a = arrays[n]
                    for r in range(self.R):
                        t, d = divmod(r, plan.dp)
                        first = shard_row(n, plan, t, d)
                        if r != first and not bool((a[r] == a[first]).all()):
                            return False
        return True


def shard_row(name: str, plan: Plan, t: int, d: int) -> int:
    """The first row of a stage holding the same shard of `name` as row (t, d)."""
    t0 = t if tp_split(name) is not None else 0
    e = d % plan.ep if ep_split(name) else 0
    return t0 * plan.dp + e
