"""The step engine for data parallelism with a dense model: the fast path.

Every parameter, gradient and AdamW moment is replica-stacked, one row per GPU (row g is GPU
g's own copy), and all replicas run in one batched forward and backward per microbatch
(model.py). The gradients land in one flat (gpus, padded P) buffer, so the ring all-reduce
reads them where the model wrote them. After the all-reduce every row holds the same
numbers, so AdamW's update is computed once and written into every row (`shared_update`):
the same bits each GPU would get on its own (tests compare both ways).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from . import model as M
from .backend import dtype_of, to_numpy, xp
from .collectives import RingTrace, padded_width, ring_allreduce_
from .device import SimGpu
from .optim import AdamW, clip_grad_norm
from .parallel import StepStats
from .report import GpuMemory, LinkLoad, RingSummary
from .stepengine import EngineSetup, StepCosts, StepOutcome
from .steptrace import Walls, data_parallel_trace, slowdowns
from .timing import GRAD_WIRE_BYTES


@dataclass
class ReplicatedWork:
    """What one step did, in measured seconds."""

    passes: list[tuple[float, float]] = field(default_factory=list)  # (fwd, bwd) per mb
    ring: RingTrace | None = None
    ring_wall: float = 0.0
    update_wall: float = 0.0  # clipping and the update


class ReplicatedEngine(EngineSetup):
    draws_faults = True

    def _build(self) -> None:
        config, model_cfg = self.config, self.model_cfg
        self.model = M.Model(model_cfg)
        self.shared_update = True
        self._grad_buffer()
        self._acc: dict | None = None  # a microbatch's gradients, before they are added up
        self._act = M.activation_bytes(model_cfg, config.micro_batch, config.dtype)
        self.last_stats = StepStats(activation_bytes=[self._act] * config.gpus)
        self._memory_key: tuple[int, ...] | None = None
        self._memory_cache: list[GpuMemory] = []

    def _grad_buffer(self) -> None:
        """One (G, padded P) buffer holding every GPU's gradients, one row per GPU.

        `self.grads[name]` are views into it, so the model writes gradients where the ring
        all-reduce reads them, and no gradient is copied on the way."""
        G = self.config.gpus
        total = sum(math.prod(s) for s in self.shapes.values())
        self._grad_elements = total
        self._grad_flat = xp.zeros((G, padded_width(total, G)), dtype=dtype_of(self.config.dtype))
        self.grads, off = {}, 0
        for name, shape in self.shapes.items():
            n = math.prod(shape)
            self.grads[name] = xp.reshape(self._grad_flat[:, off : off + n], (G, *shape))
            off += n

    # ---- state --------------------------------------------------------------------------
    def fresh(self) -> None:
        cfg = self.config
        self.params = M.init_params(
            self.model_cfg, seed=cfg.seed, replicas=cfg.gpus, dtype=cfg.dtype
        )
        self.opt = AdamW(
            self.params,
            betas=(cfg.beta1, cfg.beta2),
            eps=cfg.eps,
            weight_decay=cfg.weight_decay,
        )

    def bind(self, gpus: list[SimGpu]) -> None:
        opt_state = {f"m.{k}": v for k, v in self.opt.m.items()}
        opt_state.update({f"v.{k}": v for k, v in self.opt.v.items()})
        for gpu in gpus:
            gpu.bind(self.params, self.grads, opt_state)
            gpu.activation_bytes = self._act

    @property
    def opt_t(self) -> int:
        return self.opt.t

    def state_arrays(self) -> dict[str, np.ndarray]:
        """GPU 0's copy: the replicas are identical."""
        arrays = {f"p.{k}": to_numpy(v[0]) for k, v in self.params.items()}
        arrays.update({f"m.{k}": to_numpy(v[0]) for k, v in self.opt.m.items()})
        arrays.update({f"v.{k}": to_numpy(v[0]) for k, v in self.opt.v.items()})
        return arrays

    def restore(self, arrays: Mapping[str, np.ndarray], opt_t: int) -> None:
        for k, v in self.params.items():
            v[...] = xp.asarray(arrays[f"p.{k}"])  # broadcast into every GPU's row
        # The optimizer copies the saved replica into every GPU's row itself.
        state: dict[str, np.ndarray | int] = {"t": int(opt_t)}
        state.update({k: v for k, v in arrays.items() if k.startswith(("m.", "v."))})
        self.opt.load_state_dict(state)

    # ---- the step -----------------------------------------------------------------------
    def forward_backward(
        self, idx: np.ndarray, targets: np.ndarray
    ) -> tuple[np.ndarray, ReplicatedWork]:
        """Every GPU's forward and backward on its own microbatch, all at once; with several
        microbatches, one after another, their gradients added up (gradient accumulation)."""
        Mb = self.plan.microbatches
        work = ReplicatedWork()
        b = idx.shape[1] // Mb
        total = None
        for m in range(Mb):
            t0 = time.perf_counter()
            if Mb > 1:
                idx_m = np.ascontiguousarray(idx[:, m * b : (m + 1) * b])
                tgt_m = np.ascontiguousarray(targets[:, m * b : (m + 1) * b])
            else:
                idx_m, tgt_m = idx, targets
            if m and self._acc is None:
                self._acc = {k: xp.empty_like(v) for k, v in self.grads.items()}
            into = self._acc if m else self.grads
            losses, _ = self.model.forward_backward(self.params, idx_m, tgt_m, grads=into)
            if m:
                for k, g in self.grads.items():
                    g += into[k]
            total = losses if total is None else total + losses
            dt = time.perf_counter() - t0
            fwd = self.model.last_forward_s or 0.0
            work.passes.append((fwd, max(0.0, dt - fwd)))
        if Mb > 1:
            # Each microbatch's gradient is of its own mean loss; the step's loss is their mean.
            for g in self.grads.values():
                g *= 1.0 / Mb
            total = total / Mb
        return to_numpy(total), work

    def sync_grads(self, work: ReplicatedWork) -> None:
        """Average every GPU's gradients with a ring all-reduce over the real topology."""
        t0 = time.perf_counter()
        work.ring = ring_allreduce_(
            self._grad_flat,
            self._grad_elements,
            ring=self.topology.ring,
            link_kind=self.topology.link_kind,
            op="mean",
            wire_itemsize=GRAD_WIRE_BYTES,  # a mixed-precision cluster sends BF16 gradients
        )
        work.ring_wall = time.perf_counter() - t0

    def clip(self, work: ReplicatedWork, max_norm: float) -> float:
        t0 = time.perf_counter()
        norm = clip_grad_norm(self.grads, max_norm)
        work.update_wall += time.perf_counter() - t0
        return norm

    def update(self, work: ReplicatedWork, lr: float) -> None:
        t0 = time.perf_counter()
        # Every GPU applies the same AdamW update to its own copy. After the all-reduce the
        # update's inputs are bit-identical on every GPU, so by default it is computed once
        # and written into each GPU's arrays: the same bits each GPU would get, without
        # simulating G identical sweeps (tests compare both ways).
        # Without the all-reduce (a step that only shows what would happen) the rows differ,
        # and each gets its own update.
        shared = self.shared_update and work.ring is not None
        self.opt.step(self.params, self.grads, lr, rows_identical=shared)
        work.update_wall += time.perf_counter() - t0

    def trace(self, work: ReplicatedWork, costs: StepCosts) -> StepOutcome:
        """The data-parallel step's lanes on the simulated hardware (steptrace.py): every
        lane alike, the gradients all-reduced in buckets beside the last backward, the
        checkpoint written by the one GPU that holds the shard."""
        assert work.ring is not None, "sync_grads comes before the trace"
        walls = Walls(
            data=costs.data_wall,
            forward_backward=work.passes,
            ring=work.ring_wall,
            optimizer=work.update_wall,
            checkpoint=costs.checkpoint_wall,
        )
        trace = data_parallel_trace(
            self.preset,
            ring=work.ring,
            server_of=[g.server for g in self.topology.gpus],
            tensors=[math.prod(s) for s in self.shapes.values()],
            n_layer=self.config.n_layer,
            n_params=M.n_params(self.model_cfg),
            tokens_per_gpu=costs.tokens // self.plan.dp,
            batch_bytes_per_gpu=costs.batch_bytes,
            microbatches=self.plan.microbatches,
            checkpoint_bytes=costs.checkpoint_bytes,
            walls=walls,
            slow=slowdowns(costs.faults, costs.step, self.topology.ring),
        )
        return StepOutcome(trace, self._ring_summary(work.ring))

    def _ring_summary(self, trace: RingTrace) -> RingSummary:
        by_link = trace.bytes_by_link()
        kinds = [link.kind for link in self.topology.ring_links]
        per_kind_bytes = trace.bytes_by_kind()
        sizes = [b - a for a, b in trace.chunk_bounds]
        return RingSummary(
            passes=trace.n_passes,
            gpus=trace.gpus,
            elements=trace.elements,
            chunk_bytes=max(sizes) * trace.itemsize if sizes else 0,
            bytes_total=trace.bytes_total,
            bytes_per_gpu=max(trace.bytes_sent_by_gpu()) if trace.gpus else 0,
            busiest_link_bytes=max(by_link.values()) if by_link else 0,
            links=[
                LinkLoad(kind=k, hops=kinds.count(k), bytes=per_kind_bytes.get(k, 0))
                for k in ("nvlink", "leaf", "spine")
            ]
            if trace.gpus > 1
            else [],
        )

    # ---- looking inside -----------------------------------------------------------------
    def probe(
        self, prompt_ids: np.ndarray, weights_name: str
    ) -> tuple[np.ndarray, np.ndarray, list[tuple[list[int], list[float]]]]:
        logits = M.logits_last(self.params, prompt_ids, self.model_cfg)
        weights = to_numpy(self.params[weights_name][0])
        return to_numpy(logits).astype(float), weights, []

    def full_params(self, copy: int = 0) -> dict[str, np.ndarray]:
        if not 0 <= copy < self.copies:
            raise ValueError(f"copy {copy} of {self.copies}")
        return {name: to_numpy(self.params[name][copy]) for name in self.shapes}

    @property
    def copies(self) -> int:
        return self.config.gpus

    def params_l2(self) -> float:
        return math.sqrt(sum(float(np.vdot(p, p)) for p in self.full_params().values()))

    def copies_identical(self) -> bool:
        """Do all GPUs hold the same weights, optimizer state and averaged gradients?"""
        arrays = [*self.params.values(), *self.opt.m.values(), *self.opt.v.values()]
        arrays += list(self.grads.values())
        return all(bool((v == v[0]).all()) for v in arrays)

    def memory(self, gpus: list[SimGpu]) -> list[GpuMemory]:
        """Sizes only change when the arrays do (a GPU replaced), so the account is cached."""
        key = tuple(g.generation for g in gpus)
        if self._memory_key != key:
            self._memory_key, self._memory_cache = key, [g.memory() for g in gpus]
        return [copy.copy(m) for m in self._memory_cache]
