"""The training run: data lake -> loaders -> GPUs -> ring all-reduce -> update -> checkpoint.

PUBLIC API (the server and the CLI rely on exactly this):

    trainer = Trainer(config: RunConfig, run_dir: str | Path, *, fresh: bool = False,
                      log: Callable[[str], None] | None = None, run_id: str | None = None,
                      resume_at_most: int | None = None)
        Opens (or creates) the run directory: data lake, checkpoints. Resumes from the
        latest good checkpoint unless fresh=True (which deletes old checkpoints). Unusable
        checkpoints (corrupt, partial, malformed, not finite, another configuration, another
        run) are skipped with an event each. Starts the loader threads.
        run_id: saved in every checkpoint; a checkpoint saved under another run id is
        skipped ("belongs to another run (<id>)"); one without a run id is accepted.
        resume_at_most: resume from no checkpoint past this step. A supervisor that records
        every step passes its last recorded one, so that a checkpoint written just before a
        crash, of steps the record never got, cannot leave a gap in the record.
        Raises RunDirError (an OSError; one line naming the path) when the run dir cannot be
        used (a file, not writable), and DataError (lake.py) when the data cannot be used,
        including the user's own text changed since the checkpoints were made on it.
    trainer.config            RunConfig
    trainer.step              int, steps completed on the current timeline
    trainer.topology          cluster.Topology (use .to_dict() for the wire)
    trainer.vocab             list[str]
    trainer.n_params          int, parameters per replica
    trainer.plan              plan.Plan: which GPU does what (dp x pp x tp, ep, microbatches)
    trainer.last_stats        parallel.StepStats of the last step: its pipeline timeline,
                              bubble fraction and each GPU's peak activation bytes
    trainer.run_id            str | None, as given
    trainer.startup_events    list[Event] raised while opening (shard_rebuilt,
                              checkpoint_skipped, restored)
    trainer.restarts          int, rollbacks after failures so far (this process)
    trainer.train_step() -> StepReport
        One full step. May carry events (checkpoint_saved or checkpoint_failed,
        epoch_started; gpu_failed, restored and gpu_replaced when a failure was scheduled for
        this step). Every float in the report is finite.
        Raises Diverged (report.py) when the loss, a GPU's loss, the gradient norm or the
        learning rate is not finite: the update is not applied, and the weights, optimizer
        state, step and loader position stay as they were. It carries step (the step that
        diverged), loss, grad_norm, reason, message (one line), events (raised earlier in
        the step) and event() (a `diverged` Event). The caller decides: the server and the
        CLI stop the run; close(final_checkpoint=False) saves nothing new.
    trainer.fail_gpu(gpu: int) -> list[Event]
        Fails a GPU now: [gpu_failed, restored, gpu_replaced]. The run is rolled back to
        the last good checkpoint (step 0 if none) and continues from there on the next
        train_step(). Raises ValueError for an out-of-range gpu.
    trainer.schedule_failure(step: int, gpu: int)   fail `gpu` when `step` is attempted
    trainer.inject(kind, target, steps=1, *, start=None) -> Fault
        A fault at scale from `start` (default: the next step) for `steps` steps: "dead",
        "straggler", "data_stall" (target: milliseconds) or "link" (steptrace.py). The
        trace shows it (slow lanes, waits, a rerouted ring hop); the numbers are unchanged.
    trainer.checkpoint_now() -> Event               checkpoint_saved (reason "on_demand"),
                                                    or checkpoint_failed
    trainer.checkpoints() -> list[dict]             [{step, path, bytes, created, ok}], newest last
    trainer.probe() -> Probe                        top-5 after "Once upon a" + 16 weights
    trainer.params_sha256() -> str                  over one full copy of the parameters
                                                    (gathered from their shards), fixed order
    trainer.params_l2() -> float                    L2 norm of all parameters, likewise
    trainer.close(final_checkpoint: bool = True)    stops loaders; saves a checkpoint if the
                                                    current step has none yet; returns its
                                                    event (or checkpoint_failed) or None

A checkpoint that cannot be written (disk full, folder not writable, weights not finite) is
never an exception: the step's report carries `checkpoint_failed` {"step", "reason",
"kept_step"}, nothing partial is left, the last good checkpoint is kept and training goes on.

Calls are not thread-safe: one thread drives a Trainer.

Two ways to run a step. Data parallelism with a dense model (the default) keeps every
parameter replica-stacked, one row per GPU, and runs all replicas in one batched forward and
backward per microbatch (model.py): the fast path. Any other plan (tensor or pipeline
parallel, or a model with experts) runs through parallel.py, each GPU with its own shards.
Both give the same numbers (tests/engine/test_parallel_equivalence.py).
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import model as M
from .backend import dtype_of, to_numpy, xp
from .checkpoint import CheckpointSaveError, CheckpointStore, Loaded
from .cluster import build_topology
from .collectives import RingTrace, padded_width, ring_allreduce_
from .config import RunConfig
from .device import SimGpu
from .lake import DataError, DataLake, repair_message, tokenize
from .loader import Loader
from .optim import AdamW, clip_grad_norm
from .parallel import DpRing, ShardedModel, StepRun, StepStats
from .plan import Plan
from .report import (
    Diverged,
    Event,
    LinkLoad,
    LoaderStats,
    PlanStats,
    Probe,
    ProbeRoute,
    ProbeToken,
    RingSummary,
    StepReport,
    restored_event,
)
from .steptrace import (
    FAULT_KINDS,
    Fault,
    Walls,
    data_parallel_trace,
    plan_shard_holders,
    slowdowns,
)
from .timing import (
    GRAD_WIRE_BYTES,
    checkpoint_seconds,
    checkpoint_writers,
    data_seconds,
    get_preset,
)
from .trace import StepTrace, bytes_by_kind

PROBE_PROMPT = "Once upon a"

__all__ = ["DataError", "Diverged", "RunDirError", "Trainer"]


class RunDirError(OSError):
    """The run directory cannot be used (a file, not writable); one line naming the path."""


def _run_dir_error(run_dir: Path, e: OSError) -> RunDirError:
    where = Path(e.filename) if e.filename else run_dir
    if (
        where.exists()
        and not where.is_dir()
        and isinstance(e, FileExistsError | NotADirectoryError)
    ):
        why = f"{where} is a file where a folder should be"
    else:
        why = f"{e.strerror or e} ({where})"
    return RunDirError(f"run dir {run_dir} cannot be used: {why}")


class Trainer:
    def __init__(
        self,
        config: RunConfig,
        run_dir: str | Path,
        *,
        fresh: bool = False,
        log: Callable[[str], None] | None = None,
        run_id: str | None = None,
        resume_at_most: int | None = None,
    ):
        self.config = config
        self.run_dir = Path(run_dir)
        self.run_id = run_id
        self.log = log or (lambda _msg: None)
        self.preset = get_preset(config.preset)
        self.topology = build_topology(config)
        self.plan = Plan.of(config)
        self._open_run_dir()
        try:
            self.lake = DataLake(
                self.run_dir / "lake",
                data=config.data,
                stories=config.corpus_stories,
                log=self.log,
            )
        except OSError as e:  # the user's own files are DataErrors; this is the run dir
            raise _run_dir_error(self.run_dir, e) from None
        self.vocab = self.lake.vocab.words
        self.model_cfg = M.ModelConfig(
            vocab_size=len(self.vocab),
            n_layer=config.n_layer,
            n_head=config.n_head,
            n_embd=config.n_embd,
            block_size=config.block_size,
            experts=config.experts,
            top_k=config.top_k,
        )
        self.n_params = M.n_params(self.model_cfg)
        self.config_hash = config.config_hash()
        shapes = M.param_shapes(self.model_cfg)
        self._shapes = shapes
        try:
            self.ckpt = CheckpointStore(
                self.run_dir / "checkpoints",
                keep=config.keep_checkpoints,
                config_hash=self.config_hash,
                shapes={f"{kind}.{k}": s for kind in ("p", "m", "v") for k, s in shapes.items()},
                run_id=run_id,
            )
            if fresh:
                self.ckpt.clear()
            self._check_data()
        except OSError as e:
            raise _run_dir_error(self.run_dir, e) from None
        G = config.gpus
        self.gpus = [
            SimGpu(id=g.id, server=g.server, capacity=self.preset.memory_bytes)
            for g in self.topology.gpus
        ]
        # The fast path: data parallel, dense, replica-stacked (see the module docstring).
        self.replicated = self.plan.data_parallel_only and config.experts == 0
        self.sharded: ShardedModel | None = None
        if self.replicated:
            self.model = M.Model(self.model_cfg)
            self._grad_buffer()  # before the state: the GPUs bind to the gradient rows too
        self._fresh_state()
        act = M.activation_bytes(self.model_cfg, config.micro_batch, config.dtype)
        if self.replicated:
            for gpu in self.gpus:
                gpu.activation_bytes = act
        self.last_stats = StepStats(activation_bytes=[act] * G if self.replicated else [])
        self._mb_walls: list[tuple[float, float]] = []
        self._mb_grads: dict | None = None
        self._memory_key: tuple[int, ...] | None = None
        self._memory_cache: list = []
        self.restarts = 0
        self.shared_update = True
        self._scheduled: dict[int, int] = {}
        self._faults: list[Fault] = []  # injected (steptrace.py), keyed by step number
        self._last_saved_step: int | None = None
        # Which 16 weights the probe watches: fixed by the seed.
        layer = min(1, config.n_layer - 1)
        mlp = "moe" if config.experts else "mlp"
        self.probe_weights_name = f"layers.{layer}.{mlp}.w1"
        shape = shapes[self.probe_weights_name]
        rng = np.random.default_rng([config.seed, 16])
        flat = rng.choice(int(np.prod(shape)), size=16, replace=False)
        self._probe_index = np.unravel_index(np.sort(flat), shape)
        self._prompt_ids = np.asarray(
            self.lake.vocab.encode(tokenize(PROBE_PROMPT)), dtype=np.int64
        )

        self.startup_events: list[Event] = self._repair_events(0)
        loaded, skipped = self.ckpt.latest_good(at_most=resume_at_most)
        self.startup_events += self._skipped_events(skipped)
        if loaded is not None:
            made_on = loaded.meta.get("data_sha256")
            if made_on is not None and made_on != self.lake.sha256:
                raise DataError(
                    f"the data lake is not the text the checkpoint at step {loaded.step} "
                    "was made on; put the data back, or start the run afresh"
                )
            self._restore(loaded)
            self._last_saved_step = self.step
            self.restarts = int(loaded.meta.get("restarts", 0))
            self.startup_events.append(
                restored_event(self.step, failed_step=None, steps_lost=0, reason="resume")
            )
        for e in self.startup_events:
            if e.kind != "shard_rebuilt":
                self.log(e.message)
        self.loader = Loader(
            self.lake,
            block_size=config.block_size,
            batch_size=config.batch_size,
            gpus=config.dp,  # the batch is cut once per data-parallel replica
            seed=config.seed,
            workers=config.loader_workers,
            prefetch=config.prefetch,
            start_batch=self.step,
        )
        # Shards found damaged while the loaders read them (the lake logged these too).
        self.startup_events += self._repair_events(self._repairs_seen)
        self._epoch = self._epoch_of(self.step)

    # ---- opening ------------------------------------------------------------------------
    def _open_run_dir(self) -> None:
        path = self.run_dir
        if path.exists() and not path.is_dir():
            raise RunDirError(f"run dir {path} is not a folder")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunDirError(f"run dir {path} cannot be created: {e.strerror or e}") from None
        if not os.access(path, os.W_OK | os.X_OK):
            raise RunDirError(f"run dir {path} is not writable")

    def _repair_events(self, seen: int) -> list[Event]:
        """Events for the lake's repairs after the first `seen` (already logged by the lake)."""
        repairs = self.lake.repairs[seen:]
        self._repairs_seen = seen + len(repairs)
        return [
            Event(
                "shard_rebuilt",
                self.step,
                repair_message(path, reason),
                {"path": str(path), "reason": reason},
            )
            for path, reason in repairs
        ]

    def _check_data(self) -> None:
        """A run with checkpoints resumes only on the text they were made on (lake.py)."""
        entries = self.ckpt.entries()
        if entries:
            change = self.lake.changed()
            if change is not None:
                raise DataError(
                    f"{change} since the checkpoint at step {entries[-1][0]} was made; "
                    "a resumed run must train on the same text: put it back as it was, "
                    "or start the run afresh"
                )
        self.lake.record()

    # ---- state --------------------------------------------------------------------------
    def _fresh_state(self) -> None:
        cfg = self.config
        if not self.replicated:
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
            self.step = 0
            self.tokens_total = 0
            self._bind()
            return
        self.params = M.init_params(
            self.model_cfg, seed=cfg.seed, replicas=cfg.gpus, dtype=cfg.dtype
        )
        self.opt = AdamW(
            self.params,
            betas=(cfg.beta1, cfg.beta2),
            eps=cfg.eps,
            weight_decay=cfg.weight_decay,
        )
        self.step = 0
        self.tokens_total = 0
        self._bind()

    def _bind(self) -> None:
        if self.sharded is not None:
            for gpu in self.gpus:
                params, grads, opt = self.sharded.gpu_arrays(gpu.id)
                gpu.bind_own(params, grads, opt, self.plan.describe(gpu.id))
            return
        opt_state = {f"m.{k}": v for k, v in self.opt.m.items()}
        opt_state.update({f"v.{k}": v for k, v in self.opt.v.items()})
        for gpu in self.gpus:
            gpu.bind(self.params, self.grads, opt_state)

    def _state_arrays(self) -> dict[str, np.ndarray]:
        """One full copy of everything: GPU 0's (the replicas are identical), or gathered
        from the shards, so a run can resume under another plan."""
        if self.sharded is not None:
            return {
                f"{kind}.{k}": v
                for kind in ("p", "m", "v")
                for k, v in self.sharded.full(kind).items()
            }
        arrays = {f"p.{k}": to_numpy(v[0]) for k, v in self.params.items()}
        arrays.update({f"m.{k}": to_numpy(v[0]) for k, v in self.opt.m.items()})
        arrays.update({f"v.{k}": to_numpy(v[0]) for k, v in self.opt.v.items()})
        return arrays

    def _restore(self, loaded: Loaded) -> None:
        a, meta = loaded.arrays, loaded.meta
        if self.sharded is not None:
            for kind in ("p", "m", "v"):
                self.sharded.load({k: a[f"{kind}.{k}"] for k in self._shapes}, into=kind)
            self.sharded.opt_t = int(meta["opt_t"])
            self.step = int(meta["step"])
            self.tokens_total = int(meta["tokens_total"])
            return
        for k, v in self.params.items():
            v[...] = xp.asarray(a[f"p.{k}"])  # broadcast into every GPU's row
        # The optimizer copies the saved replica into every GPU's row itself.
        opt_state: dict[str, np.ndarray | int] = {"t": int(meta["opt_t"])}
        opt_state.update({k: v for k, v in a.items() if k.startswith(("m.", "v."))})
        self.opt.load_state_dict(opt_state)
        self.step = int(meta["step"])
        self.tokens_total = int(meta["tokens_total"])

    def _skipped_events(self, skipped) -> list[Event]:
        return [
            Event(
                kind="checkpoint_skipped",
                step=self.step,
                message=f"Skipped checkpoint {path.name}: {reason}",
                detail={"path": str(path), "reason": reason},
            )
            for path, reason in skipped
        ]

    def _epoch_of(self, step: int) -> int:
        return (step * self.config.batch_size) // self.loader.n_samples

    # ---- schedule -----------------------------------------------------------------------
    def lr_at(self, step: int) -> float:
        cfg = self.config
        if cfg.warmup_steps and step <= cfg.warmup_steps:
            return cfg.lr * step / cfg.warmup_steps
        return cfg.lr

    # ---- one step -----------------------------------------------------------------------
    def train_step(self) -> StepReport:
        events: list[Event] = []
        gpu = self._scheduled.pop(self.step + 1, None)
        if gpu is not None:
            events += self.fail_gpu(gpu)
        cfg, G = self.config, self.config.gpus
        t_start = time.perf_counter()

        t0 = time.perf_counter()
        batch, take = self.loader.next()
        data_wall = time.perf_counter() - t0

        run: StepRun | None = None
        rings: list[DpRing] = []
        if self.sharded is None:
            losses, (fwd_wall, bwd_wall) = self._forward_backward(batch.idx, batch.targets)
            t0 = time.perf_counter()
            ring = self._allreduce()
            ring_wall = time.perf_counter() - t0
            loss_vals = [float(x) for x in to_numpy(losses)]
        else:
            run = self.sharded.run(batch.idx, batch.targets)
            rings = self.sharded.allreduce(self.topology)
            # Every GPU reports the loss of the replica it works on.
            loss_vals = [float(run.losses[self.plan.coords(g)[0]]) for g in range(G)]

        t0 = time.perf_counter()
        lr = self.lr_at(self.step + 1)
        with np.errstate(invalid="ignore", over="ignore"):  # a diverging step is caught below
            if self.sharded is None:
                grad_norm = clip_grad_norm(self.grads, cfg.grad_clip)
            else:
                grad_norm = self.sharded.clip(cfg.grad_clip)
        why = _divergence(loss_vals, grad_norm, lr)
        if why is not None:
            # Nothing has been updated yet; put the loader back so the state is exactly
            # that of the last good step.
            self.loader.seek(self.step)
            raise Diverged(
                step=self.step + 1,
                loss=sum(loss_vals) / len(loss_vals),
                grad_norm=grad_norm,
                reason=why,
                events=events,
            )
        opt_walls: list[float] = []
        if self.sharded is None:
            # Every GPU applies the same AdamW update to its own copy. After the all-reduce
            # the update's inputs are bit-identical on every GPU, so by default it is computed
            # once and written into each GPU's arrays: the same bits each GPU would get,
            # without simulating G identical sweeps (tests compare both ways).
            self.opt.step(self.params, self.grads, lr, rows_identical=self.shared_update)
        else:
            for s in range(self.plan.pp):
                t1 = time.perf_counter()
                self.sharded.opts[s].step(self.sharded.params[s], self.sharded.grads[s], lr)
                opt_walls.append(time.perf_counter() - t1)
        opt_wall = time.perf_counter() - t0

        self.step += 1
        tokens = int(batch.idx.size)
        self.tokens_total += tokens
        epoch = batch.epoch
        if epoch != self._epoch:
            self._epoch = epoch
            events.append(
                Event("epoch_started", self.step, f"Epoch {epoch} started", {"epoch": epoch})
            )

        ckpt_bytes = 0
        t0 = time.perf_counter()
        if cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0:
            ev = self._save("periodic")
            ckpt_bytes = ev.detail.get("bytes", 0)
            events.append(ev)
        ckpt_wall = time.perf_counter() - t0

        probe = None
        if self.step == 1 or (cfg.probe_every and self.step % cfg.probe_every == 0):
            probe = self.probe()

        dp = self.plan.dp
        batch_bytes = int(batch.idx[0].nbytes + batch.targets[0].nbytes)
        if run is None:
            trace = self._replicated_trace(
                ring,
                tokens // dp,
                batch_bytes,
                ckpt_bytes,
                Walls(data_wall, self._fb_walls(fwd_wall, bwd_wall), ring_wall, opt_wall),
                ckpt_wall if ckpt_bytes else None,
            )
            ring_summary = self._ring_summary(ring)
        else:
            server_of = [g.server for g in self.topology.gpus]
            writers, per_server = checkpoint_writers(plan_shard_holders(self.plan), server_of)
            trace, timeline = self.sharded.trace(
                run,
                rings,
                preset=self.preset,
                topology=self.topology,
                data_s=data_seconds(self.preset, batch_bytes),
                data_wall=data_wall,
                opt_walls=opt_walls,
                checkpoint_s=checkpoint_seconds(self.preset, ckpt_bytes, per_server)
                if ckpt_bytes
                else 0.0,
                checkpoint_wall=ckpt_wall if ckpt_bytes else None,
                checkpoint_lanes=writers,
            )
            peaks = self.sharded.activation_peaks(timeline, run)
            for g in self.gpus:
                g.activation_bytes = peaks[g.id]
            self.last_stats = StepStats(timeline, timeline.bubble_fraction, peaks)
            ring_summary = self._rings_summary(rings)
        return StepReport(
            step=self.step,
            epoch=epoch,
            loss=float(np.mean(loss_vals)),
            gpu_losses=loss_vals,
            grad_norm=float(grad_norm),
            lr=lr,
            tokens=tokens,
            tokens_total=self.tokens_total,
            trace=trace,
            sim_step_s=trace.step_s,
            wall_step_s=time.perf_counter() - t_start,
            ring=ring_summary,
            loader=LoaderStats(
                workers=cfg.loader_workers,
                queue_depth=take.queue_depth,
                queue_capacity=take.queue_capacity,
                waited=take.waited,
                wait_s=take.wait_s,
                epoch=epoch,
                batch_in_epoch=int(
                    ((self.step - 1) * cfg.batch_size % self.loader.n_samples) // cfg.batch_size
                ),
                batches_per_epoch=max(1, self.loader.n_samples // cfg.batch_size),
                samples_per_epoch=self.loader.n_samples,
            ),
            memory=self._memory(),
            probe=probe,
            events=events,
            plan_stats=self._plan_stats(trace),
        )

    def _plan_stats(self, trace: StepTrace) -> PlanStats:
        """The plan's figures for the report, from the step's stats and its trace (the data
        parallel fast path has no pipeline: no bubble, its activation bytes set at start)."""
        peaks = self.last_stats.activation_bytes
        stages = (
            [max(peaks[g] for g in self.plan.stage_gpus(s)) for s in range(self.plan.pp)]
            if peaks
            else []
        )
        return PlanStats(
            bubble_fraction=float(self.last_stats.bubble_fraction),
            peak_activation_bytes=int(max(peaks, default=0)),
            stage_activation_bytes=[int(b) for b in stages],
            traffic_bytes=bytes_by_kind(trace),
        )

    def _replicated_trace(
        self,
        ring: RingTrace,
        tokens_per_gpu: int,
        batch_bytes: int,
        ckpt_bytes: int,
        walls: Walls,
        ckpt_wall: float | None,
    ) -> StepTrace:
        """The data-parallel step's lanes on the simulated hardware (steptrace.py): every
        lane alike, the gradients all-reduced in buckets beside the last backward, the
        checkpoint written by the one GPU that holds the shard."""
        walls.checkpoint = ckpt_wall
        return data_parallel_trace(
            self.preset,
            ring=ring,
            server_of=[g.server for g in self.topology.gpus],
            tensors=[int(np.prod(s)) for s in self._shapes.values()],
            n_layer=self.config.n_layer,
            n_params=self.n_params,
            tokens_per_gpu=tokens_per_gpu,
            batch_bytes_per_gpu=batch_bytes,
            microbatches=self.plan.microbatches,
            checkpoint_bytes=ckpt_bytes,
            walls=walls,
            slow=slowdowns(self._faults, self.step, self.topology.ring),
        )

    def _fb_walls(self, fwd_wall: float, bwd_wall: float) -> list[tuple[float, float]]:
        """Measured (forward, backward) seconds of each microbatch."""
        return [(fwd_wall, bwd_wall)] if self.plan.microbatches == 1 else list(self._mb_walls)

    def _forward_backward(self, idx, targets):
        """Every GPU's forward and backward on its own microbatch, all at once; with several
        microbatches, one after another, their gradients added up (gradient accumulation).

        Gradients land straight in the flat all-reduce buffer (see `_grad_buffer`).
        Returns the losses and the measured (forward, backward) seconds."""
        Mb = self.plan.microbatches
        if Mb == 1:
            t0 = time.perf_counter()
            losses, _ = self.model.forward_backward(self.params, idx, targets, grads=self.grads)
            dt = time.perf_counter() - t0
            fwd = self.model.last_forward_s or 0.0
            return losses, (fwd, max(0.0, dt - fwd))
        b = idx.shape[1] // Mb
        total = None
        self._mb_walls = []
        if self._mb_grads is None:
            self._mb_grads = {k: xp.empty_like(v) for k, v in self.grads.items()}
        for m in range(Mb):
            t0 = time.perf_counter()
            sl = slice(m * b, (m + 1) * b)
            into = self.grads if m == 0 else self._mb_grads
            losses, _ = self.model.forward_backward(
                self.params,
                np.ascontiguousarray(idx[:, sl]),
                np.ascontiguousarray(targets[:, sl]),
                grads=into,
            )
            if m:
                for k, g in self.grads.items():
                    g += into[k]
            total = losses if total is None else total + losses
            dt = time.perf_counter() - t0
            fwd = self.model.last_forward_s or 0.0
            self._mb_walls.append((fwd, max(0.0, dt - fwd)))
        # Each microbatch's gradient is of its own mean loss; the step's loss is their mean.
        for g in self.grads.values():
            g *= 1.0 / Mb
        return total / Mb, tuple(sum(w[i] for w in self._mb_walls) for i in range(2))

    def _grad_buffer(self) -> None:
        """One (G, padded P) buffer holding every GPU's gradients, one row per GPU.

        `self.grads[name]` are views into it, so the model writes gradients where the ring
        all-reduce reads them, and no gradient is copied on the way."""
        G = self.config.gpus
        shapes = M.param_shapes(self.model_cfg)
        total = sum(int(np.prod(s)) for s in shapes.values())
        self._grad_elements = total
        self._grad_flat = xp.zeros((G, padded_width(total, G)), dtype=dtype_of(self.config.dtype))
        self.grads, off = {}, 0
        for name, shape in shapes.items():
            n = int(np.prod(shape))
            self.grads[name] = xp.reshape(self._grad_flat[:, off : off + n], (G, *shape))
            off += n

    def _allreduce(self) -> RingTrace:
        """Average every GPU's gradients with a ring all-reduce over the real topology."""
        return ring_allreduce_(
            self._grad_flat,
            self._grad_elements,
            ring=self.topology.ring,
            link_kind=self.topology.link_kind,
            op="mean",
            wire_itemsize=GRAD_WIRE_BYTES,  # a mixed-precision cluster sends BF16 gradients
        )

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

    def _memory(self):
        """Each GPU's memory account. Sizes only change when the arrays do, so it is cached
        (under a plan the activations follow the step's routing and schedule, so not then)."""
        if self.sharded is not None:
            return [g.memory() for g in self.gpus]
        key = tuple(g.generation for g in self.gpus)
        if self._memory_key != key:
            self._memory_key, self._memory_cache = key, [g.memory() for g in self.gpus]
        return [copy.copy(m) for m in self._memory_cache]

    # ---- failures and checkpoints ---------------------------------------------------------
    def schedule_failure(self, step: int, gpu: int) -> None:
        self._check_gpu(gpu)
        self._scheduled[step] = gpu

    def inject(self, kind: str, target: int, steps: int = 1, *, start: int | None = None) -> Fault:
        """Inject a fault for `steps` steps from step `start` (default: the next step):
        "dead" (GPU `target` fails: a rollback, as fail_gpu), "straggler" (GPU `target`
        computes STRAGGLER_FACTOR x slower; the others wait at the all-reduce), "data_stall"
        (every GPU waits `target` ms of simulated time for its batch) or "link" (the ring hop
        out of GPU `target` is cut and takes the longer path). Only the step's simulated time
        changes (the numbers do not); faults other than "dead" are drawn for data-parallel
        runs. Raises ValueError naming what is wrong."""
        start = self.step + 1 if start is None else int(start)
        if kind not in FAULT_KINDS:
            raise ValueError(f"fault kind must be one of {', '.join(FAULT_KINDS)}, got {kind!r}")
        if not isinstance(steps, int) or steps < 1 or start < 1:
            raise ValueError("a fault needs a step of 1 or more and 1 or more steps")
        if kind == "data_stall":
            if not isinstance(target, int) or target < 1:
                raise ValueError(
                    f"a data stall's target is its milliseconds, 1 or more: {target!r}"
                )
        else:
            self._check_gpu(target)
        if kind != "dead" and not self.replicated:
            raise ValueError(f"a {kind} fault is simulated for data-parallel runs only")
        fault = Fault(kind, target, start, steps)
        if kind == "dead":
            self.schedule_failure(start, target)
        else:
            self._faults.append(fault)
        return fault

    def _check_gpu(self, gpu: int) -> None:
        if not isinstance(gpu, int) or not 0 <= gpu < self.config.gpus:
            raise ValueError(f"gpu must be between 0 and {self.config.gpus - 1}, got {gpu!r}")

    def fail_gpu(self, gpu: int) -> list[Event]:
        self._check_gpu(gpu)
        failed_step = self.step + 1  # the step it was working on
        self.gpus[gpu].failed = True
        events = [
            Event(
                "gpu_failed",
                self.step,
                f"GPU {gpu} failed during step {failed_step}",
                {"gpu": gpu},
            )
        ]
        loaded, skipped = self.ckpt.latest_good()
        events += self._skipped_events(skipped)
        if loaded is not None:
            self._restore(loaded)
            self._last_saved_step = self.step
        else:
            self._fresh_state()
            self._last_saved_step = None
        self.restarts += 1
        events.append(
            restored_event(
                self.step,
                failed_step=failed_step,
                steps_lost=failed_step - self.step,
                reason="failure",
            )
        )
        replacement = self.gpus[gpu]
        replacement.failed = False
        replacement.generation += 1
        events.append(
            Event(
                "gpu_replaced",
                self.step,
                f"GPU {gpu} replaced; it loaded the checkpoint and rejoined the ring",
                {"gpu": gpu},
            )
        )
        self.loader.seek(self.step)
        self._epoch = self._epoch_of(self.step)
        for e in events:
            self.log(e.message)
        return events

    def _save(self, reason: str) -> Event:
        meta = {
            "step": self.step,
            "tokens_total": self.tokens_total,
            "opt_t": self.opt.t if self.sharded is None else self.sharded.opt_t,
            "loader_position": self.loader.position,
            "epoch": self._epoch_of(self.step),
            # Data order is a pure function of (seed, batch index): this is its whole state.
            "rng": {"data_seed": self.config.seed, "next_batch": self.step},
            "restarts": self.restarts,
            "config": self.config.to_dict(),
            "vocab_sha256": hashlib.sha256("\n".join(self.vocab).encode()).hexdigest(),
            "data_sha256": self.lake.sha256,
        }
        if self.run_id is not None:
            meta["run_id"] = self.run_id
        try:
            path, size = self.ckpt.save(self.step, self._state_arrays(), meta, self.config_hash)
        except CheckpointSaveError as e:
            kept = self._last_saved_step
            ev = Event(
                "checkpoint_failed",
                self.step,
                f"Checkpoint at step {self.step} failed: {e}; "
                + (
                    f"the last good checkpoint (step {kept}) is kept"
                    if kept is not None
                    else "there is no good checkpoint yet"
                ),
                {"step": self.step, "reason": str(e), "kept_step": kept},
            )
            self.log(ev.message)
            return ev
        self._last_saved_step = self.step
        return Event(
            "checkpoint_saved",
            self.step,
            f"Checkpoint saved at step {self.step}",
            {"step": self.step, "path": str(path), "bytes": size, "reason": reason},
        )

    def checkpoint_now(self) -> Event:
        return self._save("on_demand")

    def checkpoints(self) -> list[dict]:
        return self.ckpt.listing()

    # ---- looking inside -------------------------------------------------------------------
    def probe(self) -> Probe:
        route = None
        if self.sharded is not None:
            whole, full = self.sharded.whole_model()
            logits, chosen = whole.probe_last(full, self._prompt_ids)
            logits = np.asarray(to_numpy(logits), float)
            weights = np.asarray(full[self.probe_weights_name][0])
            if chosen:
                route = [ProbeRoute(layer=i, experts=e, gates=g) for i, (e, g) in enumerate(chosen)]
        else:
            logits = M.logits_last(self.params, self._prompt_ids, self.model_cfg)
            logits = to_numpy(logits).astype(float)
            weights = to_numpy(self.params[self.probe_weights_name][0])
        p = np.exp(logits - logits.max())
        p /= p.sum()
        top = np.argsort(-p, kind="stable")[:5]
        w = weights[self._probe_index]
        return Probe(
            prompt=PROBE_PROMPT,
            top=[ProbeToken(token=self.vocab[i], p=float(p[i])) for i in top],
            weights=[float(x) for x in w],
            weights_name=self.probe_weights_name,
            route=route,
        )

    def full_params(self) -> dict[str, np.ndarray]:
        """One full copy of the parameters, in the fixed order (gathered under a plan)."""
        if self.sharded is not None:
            return self.sharded.full("p")
        return {name: to_numpy(self.params[name][0]) for name in self._shapes}

    def params_sha256(self) -> str:
        h = hashlib.sha256()
        for name, p in self.full_params().items():
            h.update(name.encode())
            h.update(np.ascontiguousarray(p).tobytes())
        return h.hexdigest()

    def params_l2(self) -> float:
        """L2 norm of all the parameters, each counted once."""
        if self.sharded is not None:
            return self.sharded.params_l2()
        return math.sqrt(sum(float(np.vdot(p, p)) for p in self.full_params().values()))

    def replicas_identical(self) -> bool:
        """Do all GPUs hold the same weights, optimizer state and averaged gradients?
        Under a plan: do all GPUs holding the same shard hold the same bits?"""
        if self.sharded is not None:
            return self.sharded.copies_identical()
        arrays = [*self.params.values(), *self.opt.m.values(), *self.opt.v.values()]
        arrays += list(self.grads.values())
        return all(bool((v == v[0]).all()) for v in arrays)

    def close(self, final_checkpoint: bool = True) -> Event | None:
        ev = None
        try:
            if final_checkpoint and self.step > 0 and self._last_saved_step != self.step:
                ev = self._save("final")
        finally:
            self.loader.close()
        return ev


def _divergence(losses: list[float], grad_norm: float, lr: float) -> str | None:
    """Why a step must not be applied (a non-finite loss, gradient or rate), or None."""
    bad = [g for g, x in enumerate(losses) if not math.isfinite(x)]
    if bad and len(bad) == len(losses):
        return f"the loss is {sum(losses) / len(losses)}"
    if bad:
        more = f" (and {len(bad) - 1} more GPUs')" if len(bad) > 1 else ""
        return f"GPU {bad[0]}'s loss is {losses[bad[0]]}{more}"
    if not math.isfinite(grad_norm):
        return f"the gradient norm is {grad_norm}"
    if not math.isfinite(lr):
        return f"the learning rate is {lr}"
    return None
