"""The step engine for every plan but plain data parallelism: tensor and pipeline parallel
runs, and models with experts.

Each GPU holds only its shards of its pipeline stage's layers (parallel.ShardedModel: one
(R, *shard) array per parameter and stage, a row per GPU), and a step runs every stage's
microbatches in the schedule's order with real partial products, TP all-reduces and expert
all-to-alls (stage.py), then a ring all-reduce in each data-parallel group, clipping over
the distinct shards and each stage's own AdamW update.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from . import model as M
from .backend import to_numpy
from .device import SimGpu
from .parallel import DpRing, ShardedModel, StepRun, StepStats
from .report import GpuMemory, LinkLoad, RingSummary
from .stepengine import EngineSetup, StepCosts, StepOutcome
from .steptrace import plan_shard_holders
from .timing import checkpoint_seconds, checkpoint_writers, data_seconds


@dataclass
class ShardedWork:
    run: StepRun  # the passes: each op's program, wall time and activations
    rings: list[DpRing] = field(default_factory=list)
    update_walls: list[float] = field(default_factory=list)  # seconds per stage


class ShardedEngine(EngineSetup):
    draws_faults = False  # only a dead GPU (a rollback) under a plan

    def _build(self) -> None:
        self.sharded: ShardedModel | None = None
        self.last_stats = StepStats()
        self._gpus: list[SimGpu] = []

    # ---- state --------------------------------------------------------------------------
    def fresh(self) -> None:
        cfg = self.config
        self.sharded = ShardedModel(
            self.plan,
            self.model_cfg,
            dtype=cfg.dtype,
            betas=(cfg.beta1, cfg.beta2),
            eps=cfg.eps,
            weight_decay=cfg.weight_decay,
        )
        full = M.init_params(self.model_cfg, seed=cfg.seed, replicas=1, dtype=cfg.dtype)
        self.sharded.load({k: v[0] for k, v in full.items()})

    @property
    def _model(self) -> ShardedModel:
        assert self.sharded is not None, "fresh() comes first"
        return self.sharded

    def bind(self, gpus: list[SimGpu]) -> None:
        self._gpus = gpus  # their activation bytes follow each step's schedule (trace)
        for gpu in gpus:
            params, grads, opt = self._model.gpu_arrays(gpu.id)
            gpu.bind_own(params, grads, opt, self.plan.describe(gpu.id))

    @property
    def opt_t(self) -> int:
        return self._model.opt_t

    def state_arrays(self) -> dict[str, np.ndarray]:
        """Gathered from the shards, so a run can resume under another plan."""
        return {
            f"{kind}.{k}": v for kind in ("p", "m", "v") for k, v in self._model.full(kind).items()
        }

    def restore(self, arrays: Mapping[str, np.ndarray], opt_t: int) -> None:
        for kind in ("p", "m", "v"):
            self._model.load({k: arrays[f"{kind}.{k}"] for k in self.shapes}, into=kind)
        self._model.opt_t = int(opt_t)

    # ---- the step -----------------------------------------------------------------------
    def forward_backward(
        self, idx: np.ndarray, targets: np.ndarray
    ) -> tuple[np.ndarray, ShardedWork]:
        run = self._model.run(idx, targets)
        # Every GPU reports the loss of the replica it works on.
        gpu_losses = [run.losses[self.plan.coords(g)[0]] for g in range(self.plan.gpus)]
        return np.asarray(gpu_losses, dtype=float), ShardedWork(run)

    def sync_grads(self, work: ShardedWork) -> None:
        work.rings = self._model.allreduce(self.topology)

    def clip(self, work: ShardedWork, max_norm: float) -> float:
        return self._model.clip(max_norm)

    def update(self, work: ShardedWork, lr: float) -> None:
        model = self._model
        for s in range(self.plan.pp):
            t0 = time.perf_counter()
            model.opts[s].step(model.params[s], model.grads[s], lr)
            work.update_walls.append(time.perf_counter() - t0)

    def trace(self, work: ShardedWork, costs: StepCosts) -> StepOutcome:
        server_of = [g.server for g in self.topology.gpus]
        writers, per_server = checkpoint_writers(plan_shard_holders(self.plan), server_of)
        ckpt = costs.checkpoint_bytes
        trace, timeline = self._model.trace(
            work.run,
            work.rings,
            preset=self.preset,
            topology=self.topology,
            data_s=data_seconds(self.preset, costs.batch_bytes),
            data_wall=costs.data_wall,
            opt_walls=work.update_walls,
            checkpoint_s=checkpoint_seconds(self.preset, ckpt, per_server) if ckpt else 0.0,
            checkpoint_wall=costs.checkpoint_wall,
            checkpoint_lanes=writers,
        )
        peaks = self._model.activation_peaks(timeline, work.run)
        for g in self._gpus:
            g.activation_bytes = peaks[g.id]
        self.last_stats = StepStats(timeline, timeline.bubble_fraction, peaks)
        return StepOutcome(trace, self._rings_summary(work.rings))

    def _rings_summary(self, rings: list[DpRing]) -> RingSummary:
        """The data-parallel all-reduces of a planned step, all groups together: passes and
        GPUs of the largest group, bytes summed over every group's ring."""
        traces = [r.trace for r in rings]
        by_link: dict[tuple[int, int], int] = {}
        sent = [0] * self.config.gpus
        hops: dict[str, int] = {}
        per_kind: dict[str, int] = {}
        for tr in traces:
            for k, v in tr.bytes_by_link().items():
                by_link[k] = by_link.get(k, 0) + v
            for i, v in enumerate(tr._per_position()):
                sent[tr.ring[i]] += int(v)
            if tr.gpus > 1:
                for kind in tr.links:
                    hops[kind] = hops.get(kind, 0) + 1
            for k, v in tr.bytes_by_kind().items():
                per_kind[k] = per_kind.get(k, 0) + v
        chunks = [(b - a) * tr.itemsize for tr in traces for a, b in tr.chunk_bounds]
        return RingSummary(
            passes=max((tr.n_passes for tr in traces), default=0),
            gpus=max((tr.gpus for tr in traces), default=0),
            elements=sum(tr.elements for tr in traces),
            chunk_bytes=max(chunks, default=0),
            bytes_total=sum(tr.bytes_total for tr in traces),
            bytes_per_gpu=max(sent, default=0),
            busiest_link_bytes=max(by_link.values(), default=0),
            links=[
                LinkLoad(kind=k, hops=hops.get(k, 0), bytes=per_kind.get(k, 0))
                for k in ("nvlink", "leaf", "spine")
            ]
            if hops
            else [],
        )

    # ---- looking inside -----------------------------------------------------------------
    def probe(
        self, prompt_ids: np.ndarray, weights_name: str
    ) -> tuple[np.ndarray, np.ndarray, list[tuple[list[int], list[float]]]]:
        whole, full = self._model.whole_model()
        logits, route = whole.probe_last(full, prompt_ids)
        weights = np.asarray(to_numpy(full[weights_name][0]))
        return np.asarray(to_numpy(logits), float), weights, route

    def full_params(self, copy: int = 0) -> dict[str, np.ndarray]:
        return self._model.full("p", copy)

    @property
    def copies(self) -> int:
        return self.plan.dp // self.plan.ep

    def params_l2(self) -> float:
        return self._model.params_l2()

    def copies_identical(self) -> bool:
        return self._model.copies_identical()

    def memory(self, gpus: list[SimGpu]) -> list[GpuMemory]:
        """Not cached: under a plan the activations follow each step's routing and schedule."""
        return [g.memory() for g in gpus]
