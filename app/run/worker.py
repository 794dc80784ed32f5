"""The training worker: a process of its own that owns the Trainer, steps it and reports.

It runs in its own interpreter so numpy never competes with the server's event loop for the
interpreter lock, even with hundreds of viewers. It steps at the pace the runner sets,
answers requests between steps, and sends every step already serialised. Its only link to
the server is the pipe; the messages are described in app/run/pipe.py.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
import traceback
import zlib
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, ClassVar

from app.engine import backend
from app.engine.config import RunConfig
from app.engine.report import Event
from app.engine.timing import REROUTE, preset_info
from app.engine.trainer import Diverged, Trainer
from app.protocol import CheckpointMsg, EventMsg, ProbeMsg, StepFields, TraceMsg
from app.run.events import fault_injected
from app.run.pipe import (
    Ask,
    CheckpointNow,
    Close,
    FailGpu,
    Fatal,
    Hold,
    InjectFault,
    Pace,
    Ready,
    Reply,
    Request,
    Reset,
    RunInfo,
    StepDiverged,
    StepFigures,
    StepOnce,
    StepReady,
    WorkerSpec,
    WorkerState,
)

# Events after which the list of checkpoints on disk has changed.
CHECKPOINT_KINDS = {"checkpoint_saved", "checkpoint_skipped", "restored"}
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def event_msg(e: Event) -> EventMsg:
    return EventMsg.model_validate(e)


def checkpoint_msgs(trainer: Trainer) -> list[CheckpointMsg]:
    return [CheckpointMsg.model_validate(c) for c in trainer.checkpoints()]


def run_info(trainer: Trainer, run_id: str) -> RunInfo:
    return RunInfo(
        run_id=run_id,
        config=trainer.config.to_dict(),
        topology=trainer.topology.to_dict(),
        preset=preset_info(trainer.config.preset),
        n_params=int(trainer.n_params),
        vocab_size=len(trainer.vocab),
        step=int(trainer.step),
        restarts=int(trainer.restarts),
        startup_events=[event_msg(e) for e in trainer.startup_events],
        checkpoints=checkpoint_msgs(trainer),
        plan=plan_info(trainer),
        roles=roles(trainer),
    )


def plan_info(trainer: Trainer) -> dict[str, Any]:
    c = trainer.config
    return {**trainer.plan.to_dict(), "experts": c.experts, "top_k": c.top_k}


def roles(trainer: Trainer) -> list[dict[str, Any]]:
    """What each GPU does under the plan: its copy, stage, tensor and expert rank, the
    layers of its stage and the experts it holds (expert parallelism gives ep rank r the
    experts [r * experts / ep, (r + 1) * experts / ep) of every MoE layer)."""
    plan, c = trainer.plan, trainer.config
    per_stage = c.n_layer // plan.pp
    per_rank = c.experts // plan.ep
    out = []
    for g in range(plan.gpus):
        d, s, t = plan.coords(g)
        e = plan.ep_rank(g)
        out.append(
            {
                "gpu": g,
                "dp": d,
                "stage": s,
                "tp": t,
                "ep": e,
                "layers": (s * per_stage, (s + 1) * per_stage),
                "experts": (e * per_rank, (e + 1) * per_rank),
                "holds": plan.describe(g),
            }
        )
    return out


def die_with_parent(parent_pid: int | None) -> bool:
    """Ask Linux to kill this process when its parent dies; False if the parent is gone.

    A worker that outlives its server would train steps nobody records, save checkpoints
    ahead of the record and overlap a restarted server on the same folder.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the check before every step still applies
    # The parent may have died before the request above: then nobody sends the signal.
    return parent_pid is None or os.getppid() == parent_pid


def open_trainer(
    config: dict[str, Any],
    run_dir: str,
    *,
    fresh: bool,
    run_id: str,
    resume_at_most: int | None = None,
) -> Trainer:
    # run_id: a checkpoint left by another run in the same folder is never loaded;
    # resume_at_most: nor one of steps the server never recorded (see pipe.WorkerSpec).
    return Trainer(
        RunConfig.from_dict(config),
        run_dir,
        fresh=fresh,
        run_id=run_id,
        resume_at_most=resume_at_most,
    )


class PacedServer:
    """What every worker process does with its end of the pipe: it sends its run's hello,
    steps at the pace the runner sets, and answers requests between steps. A subclass says
    what the hello is (`hello`), what one step is (`tick`), how it takes a pace (`pace`) and
    what each request does (`answer`)."""

    # The errors of `answer` that are sent back to the runner as the request's answer;
    # any other ends the process (run_guarded tells the runner why).
    ANSWERED: ClassVar[tuple[type[Exception], ...]] = (Exception,)

    def __init__(self, conn: Connection, run_id: str, interval: float) -> None:
        self.conn = conn
        self.run_id = run_id
        self.running = False
        self.interval = interval
        self.last_start = 0.0
        self.closing = False

    def hello(self) -> RunInfo:
        raise NotImplementedError

    def tick(self) -> bool:
        """One step while running; False: stop serving."""
        raise NotImplementedError

    def pace(self, running: bool, interval_s: float) -> None:
        self.running, self.interval = running, interval_s

    def answer(self, ask: Any) -> RunInfo | WorkerState | None:
        raise NotImplementedError

    def serve(self) -> None:
        self.conn.send(Ready(self.hello()))
        while not self.closing:
            timeout: float | None = None
            if self.running:
                timeout = max(0.0, self.last_start + self.interval - time.monotonic())
            if self.conn.poll(timeout):
                self.handle(self.conn.recv())
                continue
            if self.running and not self.tick():
                return

    def handle(self, msg: Pace | Request) -> None:
        match msg:
            case Pace(running=running, interval_s=interval_s):
                self.pace(running, interval_s)
            case Request(req_id=req_id, ask=ask):
                try:
                    result = self.answer(ask)
                except self.ANSWERED as exc:
                    self.conn.send(Reply(req_id, error=str(exc) or exc.__class__.__name__))
                    return
                self.conn.send(Reply(req_id, result=result))
            case _:
                raise TypeError(f"not a message for the worker: {msg!r}")


class Worker(PacedServer):
    def __init__(self, conn: Connection, spec: WorkerSpec, parent_pid: int | None = None) -> None:
        super().__init__(conn, spec.run_id, interval=0.0)
        self.run_dir = spec.run_dir
        self.parent_pid = parent_pid
        self.trainer = open_trainer(
            spec.config,
            self.run_dir,
            fresh=spec.fresh,
            run_id=self.run_id,
            resume_at_most=spec.resume_at_most,
        )

    def parent_alive(self) -> bool:
        # Where the parent-death signal is not available, a changed parent pid is the sign.
        return self.parent_pid is None or os.getppid() == self.parent_pid

    def hello(self) -> RunInfo:
        return run_info(self.trainer, self.run_id)

    def tick(self) -> bool:
        if not self.parent_alive():
            return False  # nobody would record the step
        self.do_step()
        return True

    def do_step(self) -> None:
        self.last_start = time.monotonic()
        try:
            report = self.trainer.train_step()
        except Diverged as d:
            # The update was not applied. Stepping on would only diverge again: wait,
            # paused at the last good step, for a viewer to reset or to try again.
            self.running = False
            self.conn.send(
                StepDiverged(
                    run_id=self.run_id, event=event_msg(d.event()), state=self.state(d.events)
                )
            )
            return
        figures = StepFigures(
            step=report.step,
            epoch=report.epoch,
            loss=report.loss,
            grad_norm=report.grad_norm,
            lr=report.lr,
            tokens_total=report.tokens_total,
            sim_step_s=report.sim_step_s,
            wall_step_s=report.wall_step_s,
            restarts=self.trainer.restarts,
        )
        changed = any(e.kind in CHECKPOINT_KINDS for e in report.events)
        self.conn.send(
            StepReady(
                run_id=self.run_id,
                body=StepFields.model_validate(report).model_dump_json(),
                figures=figures,
                # Compressed here, off the server's event loop: the history keeps every step.
                trace=zlib.compress(
                    TraceMsg.model_validate(report.trace).model_dump_json().encode(), 6
                ),
                events=[event_msg(e) for e in report.events],
                checkpoints=checkpoint_msgs(self.trainer) if changed else None,
                probe=ProbeMsg.model_validate(report.probe).model_dump_json()
                if report.probe is not None
                else None,
            )
        )

    def answer(self, ask: Any) -> RunInfo | WorkerState | None:
        return self._ASKS[type(ask)](self, ask)

    # --- requests: one method per kind of Ask ---------------------------------------------

    def _hold(self, ask: Hold) -> None:
        self.running = False

    def _step_once(self, ask: StepOnce) -> None:
        self.do_step()

    def _fail_gpu(self, ask: FailGpu) -> WorkerState:
        return self.state(self.trainer.fail_gpu(ask.gpu))

    def _checkpoint_now(self, ask: CheckpointNow) -> WorkerState:
        return self.state([self.trainer.checkpoint_now()])

    def _inject_fault(self, ask: InjectFault) -> WorkerState:
        t = self.trainer
        fault = t.inject(ask.kind, ask.target, ask.steps)
        link = None
        if fault.kind == "link":
            ring = t.topology.ring
            hop = t.topology.ring_links[ring.index(fault.target)]
            link = {"src": hop.src, "dst": hop.dst, "link": hop.kind}
            link["via"] = REROUTE.get(hop.kind, hop.kind)
        event = fault_injected(
            int(t.step),
            kind=fault.kind,
            target=fault.target,
            start=fault.start,
            steps=fault.steps,
            factor=fault.factor,
            link=link,
        )
        return WorkerState(
            events=[event],
            step=int(t.step),
            restarts=int(t.restarts),
            checkpoints=checkpoint_msgs(t),
        )

    def _reset(self, ask: Reset) -> RunInfo:
        self.trainer.close(final_checkpoint=False)
        # fresh=True: the old run's checkpoints must not leak into the new timeline.
        self.trainer = open_trainer(ask.config, self.run_dir, fresh=True, run_id=ask.run_id)
        self.run_id = ask.run_id
        return run_info(self.trainer, ask.run_id)

    def _close(self, ask: Close) -> WorkerState:
        self.closing = True
        ev = self.trainer.close(final_checkpoint=True)
        return self.state([ev] if ev else [])

    _ASKS: ClassVar[dict[type[Ask], Callable[[Worker, Any], RunInfo | WorkerState | None]]] = {
        Hold: _hold,
        StepOnce: _step_once,
        FailGpu: _fail_gpu,
        CheckpointNow: _checkpoint_now,
        InjectFault: _inject_fault,
        Reset: _reset,
        Close: _close,
    }

    def state(self, events: list[Event]) -> WorkerState:
        t = self.trainer
        return WorkerState(
            events=[event_msg(e) for e in events],
            step=int(t.step),
            restarts=int(t.restarts),
            checkpoints=checkpoint_msgs(t),
        )


def run_guarded(conn: Connection, parent_pid: int | None, serve: Callable[[], None]) -> None:
    """A worker process's life (the training worker's, or a replay's, app/run/replay.py): it
    exits with its server, leaves Ctrl+C to the server (which shuts it down after a final
    checkpoint), and says why when it dies of an unexpected error."""
    if not die_with_parent(parent_pid):
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        serve()
    except (EOFError, BrokenPipeError):
        pass  # the server went away; nothing left to tell
    except Exception:
        try:
            conn.send(Fatal(traceback.format_exc()))
        except Exception:
            pass
        raise


def worker_main(conn: Connection, spec: WorkerSpec, parent_pid: int | None = None) -> None:
    """The worker process's entry point. `parent_pid`: the server's pid; the worker exits
    when its server is gone."""

    def serve() -> None:
        # The array library the server was told to use (serve --backend / --device).
        chosen = backend.use(
            os.environ.get("TRAININGRUN_BACKEND", "numpy"),
            os.environ.get("TRAININGRUN_DEVICE", "cpu"),
        )
        if chosen.name != "numpy":
            print(
                f"worker: the model computes with {chosen.name} on {chosen.device}", file=sys.stderr
            )
        Worker(conn, spec, parent_pid).serve()

    run_guarded(conn, parent_pid, serve)
