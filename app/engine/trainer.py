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
        A checkpoint whose first step after loading diverges (its weights are finite and
        check out, yet cannot train on) is marked bad (checkpoint_skipped, detail marked_bad)
        and the next older good one is loaded instead (restored, reason "diverged"), within
        the same call; when none is left, Diverged has exhausted=True.
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
    trainer.probe_weights_name, trainer.probe_index the parameter and the 16 positions in it
                                                    that the probe watches (fixed by the seed)
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

How a step runs depends on the plan, and lives in a step engine (stepengine.py): the same
sequence of calls whatever the plan, implemented for data parallelism with a dense model
(replicated.py, the fast path) and for every other plan (sharded.py). Both give the same
numbers (tests/engine/test_parallel_equivalence.py).
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import model as M
from .checkpoint import CheckpointSaveError, CheckpointStore, Loaded
from .cluster import build_topology
from .config import RunConfig
from .device import SimGpu
from .lake import DataError, DataLake, repair_message, tokenize
from .loader import Loader
from .parallel import StepStats
from .plan import Plan
from .replicated import ReplicatedEngine
from .report import (
    BatchText,
    Diverged,
    Event,
    LoaderStats,
    PlanStats,
    Probe,
    ProbeRoute,
    ProbeToken,
    StepReport,
    restored_event,
)
from .sharded import ShardedEngine
from .stepengine import StepCosts, StepEngine
from .steptrace import FAULT_KINDS, Fault
from .timing import get_preset
from .trace import StepTrace, bytes_by_kind

PROBE_PROMPT = "Once upon a"
TEXTS = 4  # texts of each step's batch the report carries, as words

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
        self.gpus = [
            SimGpu(id=g.id, server=g.server, capacity=self.preset.memory_bytes)
            for g in self.topology.gpus
        ]
        self.engine: StepEngine = _engine_for(
            config, self.model_cfg, self.plan, self.topology, self.preset
        )
        self._fresh_state()
        self.restarts = 0
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
        self.probe_index = np.unravel_index(np.sort(flat), shape)
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
        self.engine.fresh()
        self.engine.bind(self.gpus)
        self.step = 0
        self.tokens_total = 0
        self._untried: Path | None = None

    def _restore(self, loaded: Loaded) -> None:
        self.engine.restore(loaded.arrays, int(loaded.meta["opt_t"]))
        # The checkpoint the weights came from, until a step from it has been applied.
        self._untried = loaded.path
        self.step = int(loaded.meta["step"])
        self.tokens_total = int(loaded.meta["tokens_total"])

    @property
    def last_stats(self) -> StepStats:
        return self.engine.last_stats

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
        while True:
            try:
                return self._attempt(events)
            except Diverged as d:
                if self._untried is None:
                    raise  # it trained on from its checkpoint, then diverged: stop there
                # The checkpoint just loaded checks out but cannot train on: mark it bad and
                # fall back to the next older good one (or stop, when none is left).
                events = d.events + self._fall_back(d)

    def _fall_back(self, d: Diverged) -> list[Event]:
        bad = self._untried
        assert bad is not None
        self._untried = None
        reason = f"it diverged on its first step after loading ({d.reason})"
        self.ckpt.mark_bad(bad, reason)
        events = [
            Event(
                kind="checkpoint_skipped",
                step=self.step,
                message=f"Marked checkpoint {bad.name} bad: {reason}",
                detail={"path": str(bad), "reason": reason, "marked_bad": True},
            )
        ]
        older = self.step - 1
        loaded, skipped = self.ckpt.latest_good(at_most=older)
        # Those past `older` (the bad one, and any skipped before it was loaded) are said.
        ahead = {path for step, path in self.ckpt.entries() if step > older}
        events += self._skipped_events([(p, why) for p, why in skipped if p not in ahead])
        if loaded is None:
            for e in events:
                self.log(e.message)
            raise Diverged(
                step=d.step,
                loss=d.loss,
                grad_norm=d.grad_norm,
                reason=d.reason,
                events=d.events + events,
                exhausted=True,
            )
        self._restore(loaded)
        self._last_saved_step = self.step
        self.restarts += 1
        events.append(
            restored_event(
                self.step, failed_step=d.step, steps_lost=d.step - self.step, reason="diverged"
            )
        )
        self.loader.seek(self.step)
        self._epoch = self._epoch_of(self.step)
        for e in events:
            self.log(e.message)
        return events

    def _attempt(self, events: list[Event]) -> StepReport:
        """One try at the next step; raises Diverged (carrying `events`) before any update."""
        cfg = self.config
        t_start = time.perf_counter()

        t0 = time.perf_counter()
        batch, take = self.loader.next()
        data_wall = time.perf_counter() - t0

        losses, work = self._forward_backward(batch.idx, batch.targets)
        self.engine.sync_grads(work)
        loss_vals = [float(x) for x in losses]
        lr = self.lr_at(self.step + 1)
        with np.errstate(invalid="ignore", over="ignore"):  # a diverging step is caught below
            grad_norm = self.engine.clip(work, cfg.grad_clip)
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
        self.engine.update(work, lr)
        self._untried = None  # the checkpoint it came from trains on

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

        done = self.engine.trace(
            work,
            StepCosts(
                step=self.step,
                data_wall=data_wall,
                batch_bytes=int(batch.idx[0].nbytes + batch.targets[0].nbytes),
                tokens=tokens,
                checkpoint_bytes=ckpt_bytes,
                checkpoint_wall=ckpt_wall if ckpt_bytes else None,
                faults=self._faults,
            ),
        )
        trace = done.trace
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
            ring=done.ring,
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
            memory=self.engine.memory(self.gpus),
            probe=probe,
            events=events,
            plan_stats=self._plan_stats(trace),
            texts=self._texts(batch.idx),
        )

    def _texts(self, idx: np.ndarray) -> list[BatchText]:
        """The first TEXTS of the batch's sequences as words, dealt over its copies in turn
        (copy 0's first, copy 1's first, ..., copy 0's second): what the story's trays show."""
        copies, each = idx.shape[0], idx.shape[1]
        return [
            BatchText(replica=i % copies, text=self.lake.vocab.text(idx[i % copies, i // copies]))
            for i in range(min(TEXTS, copies * each))
        ]

    def _forward_backward(self, idx: np.ndarray, targets: np.ndarray):
        """The step's passes on every GPU: each GPU's loss and the engine's work record (a
        method of its own, so a test can make one GPU's numbers go wrong inside a step)."""
        return self.engine.forward_backward(idx, targets)

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
        if kind != "dead" and not self.engine.draws_faults:
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
                f"GPU {gpu + 1} failed during step {failed_step}",  # on screen, from 1
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
                f"GPU {gpu + 1} replaced; it loaded the checkpoint and rejoined the ring",
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
            "opt_t": self.engine.opt_t,
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
            path, size = self.ckpt.save(
                self.step, self.engine.state_arrays(), meta, self.config_hash
            )
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
        logits, weights, chosen = self.engine.probe(self._prompt_ids, self.probe_weights_name)
        route = [ProbeRoute(layer=i, experts=e, gates=g) for i, (e, g) in enumerate(chosen)]
        p = np.exp(logits - logits.max())
        p /= p.sum()
        top = np.argsort(-p, kind="stable")[:5]
        w = weights[self.probe_index]
        return Probe(
            prompt=PROBE_PROMPT,
            top=[ProbeToken(token=self.vocab[i], p=float(p[i])) for i in top],
            weights=[float(x) for x in w],
            weights_name=self.probe_weights_name,
            route=route or None,
        )

    def full_params(self) -> dict[str, np.ndarray]:
        """One full copy of the parameters, in the fixed order (gathered under a plan)."""
        return self.engine.full_params()

    def params_sha256(self) -> str:
        h = hashlib.sha256()
        for name, p in self.full_params().items():
            h.update(name.encode())
            h.update(np.ascontiguousarray(p).tobytes())
        return h.hexdigest()

    def params_l2(self) -> float:
        """L2 norm of all the parameters, each counted once."""
        return self.engine.params_l2()

    def replicas_identical(self) -> bool:
        """Do all GPUs hold the same weights, optimizer state and averaged gradients?
        Under a plan: do all GPUs holding the same shard hold the same bits?"""
        return self.engine.copies_identical()

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
        return f"GPU {bad[0] + 1}'s loss is {losses[bad[0]]}{more}"
    if not math.isfinite(grad_norm):
        return f"the gradient norm is {grad_norm}"
    if not math.isfinite(lr):
        return f"the learning rate is {lr}"
    return None


def _engine_for(
    config: RunConfig, model_cfg: M.ModelConfig, plan: Plan, topology, preset
) -> StepEngine:
    """Data parallelism with a dense model runs replica-stacked; any other plan sharded."""
    if plan.data_parallel_only and config.experts == 0:
        return ReplicatedEngine(config, model_cfg, plan, topology, preset)
    return ShardedEngine(config, model_cfg, plan, topology, preset)
