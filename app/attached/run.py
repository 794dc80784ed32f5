"""An attached run: a real torch.distributed job reporting to a `trainingrun watch` server.

Each rank of the job sends its measured steps (app/reporter/, POST /api/attach). `AttachedRun`
collects them, and once every rank has reported a step it turns them into the same `hello`
and `step` messages the built-in engine's run produces, so the page draws the job with the
scene it already has: the job's real world size, its ranks per node as servers, one lane per
rank with its own measured data, forward, backward and optimizer times, and the gradient
all-reduce it really made (bytes and measured time) as the ring. `hello.measured` tells the
page that every number was measured on the user's cluster.

It stands where the built-in run's `Runner` stands for the routes (`hello_text`,
`snapshot_text`, `status`, `problem`, `control`), so /ws and the REST routes serve either.
With no job reporting (yet, or any more) the page is told it is waiting for one to attach.
Every step shown is also recorded in the server's history (runs.sqlite) like a built-in one,
so the loss chart survives a restart of the server and recorded steps can be looked back at.

A job of thousands of ranks registers one rank at a time, and its `hello` grows with the
ranks, so the hello is coalesced: it goes out once the ranks' topology has been still for
HELLO_SETTLE_S, and never later than HELLO_MAX_HOLD_S after the first change it carries (nor,
for a job of thousands of ranks, more bytes of hellos a second than HELLO_BYTES_PER_S), so a
viewer's bytes grow with the ranks, not with their square. A step is never drawn before the
first hello of its run, which goes out at once when a step needs it.

Steps are checked for plausibility: one more than MAX_STEP_JUMP beyond the step shown is
refused (422 `step_out_of_range`), so one bad report cannot freeze the display. A job that
restarts under the same run id at a lower step (from its checkpoint) is shown as a rollback,
with the same `restored` event the built-in run sends, and its steps are drawn again from there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import zlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from app.attached.trace import ring_figures, step_trace, topology_for
from app.engine.report import restored_event
from app.protocol import (
    AttachBatch,
    AttachedRunMsg,
    AttachStatusMsg,
    CheckpointMsg,
    ConfigMsg,
    Control,
    EventMsg,
    HelloMsg,
    HistoryPoint,
    LoaderMsg,
    MemoryMsg,
    PlanMsg,
    PlanStatsMsg,
    PresetMsg,
    RankInfo,
    RankStep,
    RoleMsg,
    RunState,
    RunStatus,
    StepMsg,
    TopologyMsg,
)
from app.run.controls import ControlError
from app.run.history import History
from app.run.view import HISTORY_POINTS, RECENT_EVENTS, LossPoints, downsample, snapshot_text
from app.web.hub import Frame, Hub

log = logging.getLogger("trainingrun.attached")

# A job that has not reported for this long is shown as waiting; another job may then attach.
QUIET_S = 5.0
# Steps kept while not every rank has reported them; beyond this the oldest go unshown.
MAX_PENDING_STEPS = 64
# A hello goes out once the ranks' topology has not changed for this long...
HELLO_SETTLE_S = 0.25
# ...and never later than this after the first change it carries, however the ranks churn...
HELLO_MAX_HOLD_S = 2.0
# ...unless the hellos of a job that large would pass this many bytes a second to a viewer
# (a hello of more than 512 KiB, some 2,000 ranks): then they are spaced to keep within it.
HELLO_BYTES_PER_S = 256 * 1024
# A reported step more than this beyond the step shown is refused as implausible.
MAX_STEP_JUMP = 2**30
MEASURED_LABEL = "measured on your cluster"
WAITING_MESSAGE = (
    "Waiting for a run to attach: start a torch.distributed job with "
    "Reporter(url) from app.reporter, e.g. torchrun --nproc-per-node 4 "
    "examples/ddp_tiny.py --report {url}"
)


class AttachError(Exception):
    """A batch this server cannot take; `code` and `message` go back to the reporter."""

    def __init__(self, code: str, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


@dataclass
class _View:
    """What the REST routes read of a run (`runner.view` for the built-in one)."""

    run_id: str = ""
    step: int = 0
    checkpoints: list[CheckpointMsg] = field(default_factory=list)


class AttachedRun:
    """The run a `trainingrun watch` server shows: whatever job reports to it."""

    def __init__(
        self, hub: Hub, history: History | None = None, *, url: str = "http://127.0.0.1:8000"
    ) -> None:
        self.hub = hub
        self.history = history
        self._record_error: str | None = None
        self.url = url
        self.view = _View()
        self.state: RunState = "waiting"
        self.speed: str | float = "max"
        self.world = 0
        self.ranks: dict[int, RankInfo] = {}
        self.dropped: dict[int, int] = {}
        self.pending: dict[int, dict[int, RankStep]] = {}
        self.points = LossPoints()
        self.events: deque[EventMsg] = deque(maxlen=RECENT_EVENTS)
        self.loss: float | None = None
        self.tokens_total = 0
        self.steps_shown = 0
        self.steps_unshown = 0  # steps some rank's report never came for
        self.last_report = 0.0
        self._seq = 0
        self._links: list[str] = []
        self._topology: dict[str, Any] | None = None
        self._last_frame: str | None = None
        self._hello_cache: dict[bool, str] = {}
        self._hello_key: tuple[Any, ...] | None = None
        self._hello_since: float | None = None  # when the oldest change not yet sent came
        self._hello_last = 0.0  # when the latest change came
        self._hello_timer: asyncio.TimerHandle | None = None
        self._hello_sent = False  # a hello of this run has gone out
        self._hello_next = 0.0  # the earliest the next hello may go, for the byte budget
        self._top: dict[int, int] = {}  # the highest step each rank has reported
        self._last_batch: dict[int, int] = {}  # each rank's last batch, as a fingerprint
        self._rerun: set[int] = set()  # ranks that went back to a lower step (restarted)
        self._quiet_loop: asyncio.Task[None] | None = None

    # --- life cycle (as the Runner's) --------------------------------------------------------

    async def start(self) -> None:
        if self.history is not None:
            self._seq = self.history.next_seq() - 1
        self._quiet_loop = asyncio.create_task(self._watch_quiet())

    async def stop(self) -> None:
        self._cancel_hello_timer()
        if self._quiet_loop is not None:
            self._quiet_loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._quiet_loop

    async def _watch_quiet(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            if self.state == "running" and time.monotonic() - self.last_report > QUIET_S:
                self.state = "waiting"
                self._publish_state()

    # --- what the ranks send ----------------------------------------------------------------

    def ingest(self, batch: AttachBatch) -> dict[str, Any]:
        """Take one rank's batch of steps; publish every step all ranks have now reported."""
        info = batch.rank
        if info.rank >= info.world_size:
            raise AttachError(
                "bad_rank", f"rank {info.rank} is not below world_size {info.world_size}", 400
            )
        self._check_steps(batch)
        now = time.monotonic()
        if batch.run_id != self.view.run_id:
            if self.view.run_id and now - self.last_report < QUIET_S:
                raise AttachError(
                    "another_run",
                    f"run {self.view.run_id!r} is attached and still reporting; one run at a "
                    f"time (this one may attach {QUIET_S:g} s after it goes quiet)",
                )
            self._new_run(batch.run_id, info.world_size)
        if info.world_size != self.world:
            raise AttachError(
                "world_size_mismatch",
                f"rank {info.rank} says the job has {info.world_size} ranks, but its other "
                f"ranks said {self.world}",
                400,
            )
        self.last_report = now
        old = self.ranks.get(info.rank)
        self.ranks[info.rank] = info
        if old is None or old.host != info.host or old.params != info.params:
            self._hello_changed()
        if batch.dropped > self.dropped.get(info.rank, 0):
            lost = batch.dropped - self.dropped.get(info.rank, 0)
            self.dropped[info.rank] = batch.dropped
            self._emit(
                EventMsg(
                    kind="reports_dropped",
                    step=self.view.step,
                    message=f"rank {info.rank} dropped {lost} step reports it could not send "
                    f"({batch.dropped} in all); the job itself was not held up",
                    detail={"rank": info.rank, "dropped": batch.dropped},
                )
            )
        if self._is_new_batch(info.rank, batch):
            for st in batch.steps:
                if st.step > self.view.step or self.steps_shown == 0 or info.rank in self._rerun:
                    self.pending.setdefault(st.step, {})[info.rank] = st
        if self.state != "running":
            self.state = "running"
            self._publish_state()
        self._flush()
        return {"ok": True, "step": self.view.step, "steps_shown": self.steps_shown}

    def _check_steps(self, batch: AttachBatch) -> None:
        """Refuse a batch with a step no real job could have reached from the step shown
        (the schema has already refused negative and non-finite ones)."""
        shown = self.view.step if batch.run_id == self.view.run_id else 0
        for st in batch.steps:
            if st.step > shown + MAX_STEP_JUMP:
                raise AttachError(
                    "step_out_of_range",
                    f"step {st.step} is more than {MAX_STEP_JUMP} steps beyond the step shown "
                    f"({shown}); the batch was not taken",
                    422,
                )

    def _is_new_batch(self, rank: int, batch: AttachBatch) -> bool:
        """Whether the batch is news (not the rank's last batch sent again because its answer
        was lost), and whether the rank went back to a lower step: the job restarted."""
        if not batch.steps:
            return False
        mark = hash(
            tuple((s.step, s.step_s, s.forward_s, s.backward_s, s.loss) for s in batch.steps)
        )
        if self._last_batch.get(rank) == mark:
            return False
        self._last_batch[rank] = mark
        low = min(s.step for s in batch.steps)
        high = max(s.step for s in batch.steps)
        top = self._top.get(rank)
        if top is not None and low <= top:
            # Its reports from before the restart, not shown yet, are of a life that is over.
            for s in [s for s in self.pending if s >= low]:
                self.pending[s].pop(rank, None)
                if not self.pending[s]:
                    del self.pending[s]
            self._rerun.add(rank)
            self._top[rank] = high
        else:
            self._top[rank] = high if top is None else max(top, high)
        return True

    def _roll_back(self, first: int) -> None:
        """Every rank has reported `first` again, at or below the step shown: the job
        restarted from a checkpoint. Say so as the built-in run says a rollback."""
        failed = self.view.step
        restored = max(first - 1, 0)
        lost = failed - restored
        message = (
            f"The job restarted at step {first}: rolled back from step {failed} to step "
            f"{restored}, {lost} step{'s' if lost != 1 else ''} to redo"
        )
        event = EventMsg.model_validate(
            restored_event(
                restored, failed_step=failed, steps_lost=lost, reason="restart", message=message
            )
        )
        log.info("run %s: %s", self.view.run_id, message)
        self.view.step = restored
        self._rerun.clear()
        self._emit(event)
        self._record(
            self.history.add_event if self.history else None,
            self.view.run_id,
            event.model_dump(exclude={"type"}),
        )

    def _new_run(self, run_id: str, world: int) -> None:
        log.info("run %s attached: %d ranks", run_id, world)
        self.view = _View(run_id=run_id)
        self.world = world
        self.ranks, self.dropped, self.pending = {}, {}, {}
        self.points, self.events = LossPoints(), deque(maxlen=RECENT_EVENTS)
        self.loss, self.tokens_total, self.steps_shown, self.steps_unshown = None, 0, 0, 0
        self._last_frame = None
        self._topology = None
        self._top, self._last_batch, self._rerun = {}, {}, set()
        self._cancel_hello_timer()
        self._hello_since, self._hello_sent = None, False
        self._hello_cache.clear()  # the hello goes out once the first rank has said who it is
        self._record(self._resume_or_start, run_id, world)

    def _resume_or_start(self, run_id: str, world: int) -> None:
        """A job this server recorded before (it was restarted under the job): its loss
        history comes back; else a new run in the history."""
        assert self.history is not None
        if self.history.run_config(run_id) is None:
            self.history.start_run(run_id, {"attached": True, "world_size": world})
            return
        self.points = LossPoints(self.history.each_loss_point(run_id))
        last = self.points.last()
        if last is not None:
            self.view.step, self.loss = last[1], last[2]

    def _record(self, what: Any, *args: Any) -> None:
        """Write to the history; a history that cannot be written never costs the picture."""
        if self.history is None:
            return
        try:
            what(*args)
        except Exception as exc:
            if self._record_error is None:
                log.error("could not record the attached run: %s: %s", type(exc).__name__, exc)
            self._record_error = f"{type(exc).__name__}: {exc}"
        else:
            self._record_error = None

    def _flush(self) -> None:
        complete = [s for s, got in self.pending.items() if len(got) >= self.world]
        if complete and self.points:
            first = min(complete)
            # After a restart of this server the job's last recorded step may come again
            # (its answer was lost): only a step below it is a rollback then.
            if first < self.view.step or (self.steps_shown and first == self.view.step):
                self._roll_back(first)
        if complete:
            top = max(complete)
            for s in sorted(self.pending):
                if s > top:
                    break
                got = self.pending.pop(s)
                if len(got) >= self.world:
                    self._publish_step(s, got)
                else:
                    self.steps_unshown += 1
        while len(self.pending) > MAX_PENDING_STEPS:
            self.pending.pop(min(self.pending))
            self.steps_unshown += 1

    # --- the messages -----------------------------------------------------------------------

    def _hello_changed(self) -> None:
        """The ranks' topology changed: a hello goes out once it settles (see the module)."""
        self._hello_cache.clear()
        if not self.world:
            return
        now = time.monotonic()
        self._hello_last = now
        if self._hello_since is None:
            self._hello_since = now
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # driven without an event loop (a script, a test): nothing to wait on
            self._send_hello()
            return
        if self._hello_timer is None:
            self._hello_timer = loop.call_later(HELLO_SETTLE_S, self._hello_due)

    def _hello_due(self) -> None:
        self._hello_timer = None
        if self._hello_since is None:
            return
        due = min(self._hello_last + HELLO_SETTLE_S, self._hello_since + HELLO_MAX_HOLD_S)
        due = max(due, self._hello_next)
        wait = due - time.monotonic()
        if wait > 0.001:
            self._hello_timer = asyncio.get_running_loop().call_later(wait, self._hello_due)
        else:
            self._send_hello()

    def _send_hello(self) -> None:
        self._cancel_hello_timer()
        self._hello_since = None
        self._hello_sent = True
        text = self.hello_text(False)
        self._hello_next = time.monotonic() + len(text) / HELLO_BYTES_PER_S
        self.hub.publish(Frame(text))

    def _cancel_hello_timer(self) -> None:
        if self._hello_timer is not None:
            self._hello_timer.cancel()
            self._hello_timer = None

    def _topo(self) -> dict[str, Any]:
        if self._topology is None:
            per = next(iter(self.ranks.values())).local_world_size if self.ranks else self.world
            per = per if per and self.world % per == 0 else self.world
            self._topology = topology_for(self.world, self.world // per)
            self._links = [link["kind"] for link in self._topology["ring_links"]]
        return self._topology

    def _attached_msg(self) -> AttachedRunMsg:
        topo = self._topo()
        any_rank = next(iter(self.ranks.values()), None)
        hosts: dict[int, str] = {}
        for r in self.ranks.values():
            hosts.setdefault(r.node, r.host)
        nodes = len(topo["servers"])
        return AttachedRunMsg(
            backend=any_rank.backend if any_rank else "?",
            device=any_rank.device if any_rank else "?",
            world_size=self.world,
            nodes=nodes,
            ranks_per_node=self.world // nodes,
            hosts=[hosts[n] for n in sorted(hosts)],
        )

    def hello_text(self, can_control: bool) -> str:
        """The job as a `hello`; while no job reports, where things stand instead."""
        if not self.world:
            return self.status_msg().model_dump_json()
        text = self._hello_cache.get(can_control)
        if text is not None:
            return text
        topo = self._topo()
        attached = self._attached_msg()
        any_rank = next(iter(self.ranks.values()), None)
        params = any_rank.params if any_rank else 0
        config = ConfigMsg(
            seed=0,
            gpus=self.world,
            servers=attached.nodes,
            leaves=1,
            spines=1,
            preset="measured",
            n_layer=0,
            n_head=0,
            n_embd=0,
            block_size=0,
            dtype="",
            batch_size=0,
            lr=0.0,
            warmup_steps=0,
            weight_decay=0.0,
            beta1=0.0,
            beta2=0.0,
            eps=0.0,
            grad_clip=0.0,
            data=None,
            corpus_stories=0,
            loader_workers=0,
            prefetch=0,
            checkpoint_every=0,
            keep_checkpoints=1,
            probe_every=0,
        )
        machines = f"{attached.nodes} machine{'s' if attached.nodes != 1 else ''}"
        where = f"{self.world} ranks on {machines}, {attached.backend} on {attached.device}"
        text = HelloMsg(
            run_id=self.view.run_id,
            can_control=False,  # the job's own script drives it
            config=config,
            topology=TopologyMsg.model_validate(topo),
            preset=PresetMsg(
                name="measured",
                label=f"{MEASURED_LABEL.capitalize()}: {where}",
                sources=[],
            ),
            n_params=params,
            vocab_size=0,
            plan=PlanMsg(
                dp=self.world,
                tp=1,
                pp=1,
                ep=1,
                microbatches=1,
                schedule="1f1b",
                experts=0,
                top_k=1,
            ),
            roles=[
                RoleMsg(
                    gpu=g,
                    dp=g,
                    stage=0,
                    tp=0,
                    ep=0,
                    layers=(0, 0),
                    experts=(0, 0),
                    holds="a whole copy of the model (data parallel)",
                )
                for g in range(self.world)
            ],
            measured=True,
            attached=attached,
        ).model_dump_json()
        self._hello_cache[can_control] = text
        return text

    def _publish_step(self, step: int, got: dict[int, RankStep]) -> None:
        if self._hello_since is not None and not self._hello_sent:
            self._send_hello()  # the page cannot draw a step of a job it has not been shown
        self._topo()
        trace = step_trace(got, self.world, self._links)
        ordered = [got[r] for r in sorted(got)]
        losses = [r.loss for r in ordered if r.loss is not None]
        if losses:
            self.loss = sum(losses) / len(losses)
        nbytes = max(r.allreduce_bytes for r in ordered)
        elements = max(r.allreduce_elements for r in ordered)
        ring = ring_figures(nbytes, elements, self.world, self._links)
        self.tokens_total = sum(r.tokens_total for r in ordered) or self.tokens_total + sum(
            r.tokens for r in ordered
        )
        grad_norms = [r.grad_norm for r in ordered if r.grad_norm is not None]
        lrs = [r.lr for r in ordered if r.lr is not None]
        data_s = sum(r.data_s for r in ordered) / len(ordered)
        self._seq += 1
        msg = StepMsg(
            seq=self._seq,
            sent_at=round(time.time(), 6),
            step=step,
            epoch=0,
            loss=self.loss if self.loss is not None else 0.0,
            gpu_losses=[r.loss if r.loss is not None else 0.0 for r in ordered],
            grad_norm=grad_norms[0] if grad_norms else 0.0,
            lr=lrs[0] if lrs else 0.0,
            tokens=sum(r.tokens for r in ordered),
            tokens_total=self.tokens_total,
            trace=trace,
            sim_step_s=trace.step_s,
            wall_step_s=max(r.step_s for r in ordered),
            ring=ring,
            loader=LoaderMsg(
                workers=0,
                queue_depth=0,
                queue_capacity=0,
                waited=False,
                wait_s=data_s,
                epoch=0,
                batch_in_epoch=step,
                batches_per_epoch=0,
                samples_per_epoch=0,
            ),
            memory=self._memory(),
            plan_stats=PlanStatsMsg(
                bubble_fraction=0.0,
                peak_activation_bytes=max((m.activations for m in self._memory()), default=0),
                stage_activation_bytes=[],
                traffic_bytes={"allreduce": ring.bytes_total} if ring.bytes_total else {},
            ),
        )
        text = msg.model_dump_json()
        figures = {
            "step": step,
            "epoch": 0,
            "loss": msg.loss,
            "grad_norm": msg.grad_norm,
            "lr": msg.lr,
            "tokens_total": msg.tokens_total,
            "sim_step_s": msg.sim_step_s,
            "wall_step_s": msg.wall_step_s,
        }
        packed = zlib.compress(trace.model_dump_json().encode(), 6)
        self._record(
            self.history.add_step if self.history else None,
            self._seq,
            self.view.run_id,
            figures,
            [],
            packed,
        )
        self.view.step = step
        self.steps_shown += 1
        self.points.append((self._seq, step, msg.loss))
        self._last_frame = text
        self.hub.publish(Frame(text, is_step=True))

    def _memory(self) -> list[MemoryMsg]:
        out = []
        for g in sorted(self.ranks):
            r = self.ranks[g]
            held = r.weights_bytes + r.grads_bytes + r.optimizer_bytes
            activations = max(0, r.peak_memory_bytes - held)
            out.append(
                MemoryMsg(
                    gpu=g,
                    weights=r.weights_bytes,
                    grads=r.grads_bytes,
                    optimizer=r.optimizer_bytes,
                    activations=activations,
                    total=held + activations,
                    capacity=r.device_memory_bytes,
                )
            )
        return out

    def _emit(self, e: EventMsg) -> None:
        self.events.append(e)
        self.hub.publish(Frame(e.model_dump_json()))

    def _publish_state(self) -> None:
        self.hub.publish(Frame(self.status_msg().model_dump_json()))
        self.hub.publish(Frame(self.snapshot_text()))

    def status_msg(self) -> AttachStatusMsg:
        if not self.world:
            message = WAITING_MESSAGE.format(url=self.url)
        elif self.state == "waiting":
            message = (
                f"Run {self.view.run_id} has not reported for {QUIET_S:g} s; showing its last "
                f"step. {WAITING_MESSAGE.format(url=self.url)}"
            )
        else:
            message = (
                f"Run {self.view.run_id}: {len(self.ranks)} of {self.world} ranks reporting, "
                f"every number {MEASURED_LABEL}"
            )
        return AttachStatusMsg(
            waiting=self.state == "waiting",
            message=message,
            run_id=self.view.run_id,
            world_size=self.world,
            ranks_seen=len(self.ranks),
            steps_shown=self.steps_shown,
            dropped=sum(self.dropped.values()),
        )

    def status(self) -> RunStatus:
        return RunStatus(
            state=self.state,
            speed=self.speed,
            step=self.view.step,
            epoch=0,
            loss=self.loss,
            tokens_total=self.tokens_total,
            restarts=0,
            viewers=self.hub.count,
            run_id=self.view.run_id,
        )

    def snapshot_text(self) -> str:
        shown = downsample(self.points.to_list(), HISTORY_POINTS)
        history = [HistoryPoint(seq=s, step=st, loss=lo) for s, st, lo in shown]
        return snapshot_text(self.status(), self._last_frame, history, list(self.events), [])

    # --- what the routes ask of a run --------------------------------------------------------

    @property
    def worker_pid(self) -> int | None:
        return None

    @property
    def worker_alive(self) -> bool:
        return True

    def problem(self) -> str | None:
        # Waiting for a job is not a fault; steps that cannot be recorded are.
        if self._record_error is not None:
            return f"steps are not being recorded: {self._record_error}"
        return None

    async def control(self, ctl: Control) -> dict[str, Any]:
        raise ControlError(
            "attached_run",
            "this is a real job reporting to the server; its own script drives it, so it "
            "cannot be paused or changed from here",
            409,
        )
