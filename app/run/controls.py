"""Run controls: what each protocol action does to the run, one small handler each.

The runner looks a control's handler up by its action in `HANDLERS` (a test checks that
every action of `app.protocol.Control` has one). Handlers run one at a time, under the
runner's lock, and reach the run only through the runner's public methods.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from app.engine.config import RunConfig
from app.engine.timing import PRESETS
from app.protocol import (
    PLAN_FIELDS,
    RUN_FIELDS,
    CheckpointControl,
    EventMsg,
    FailGpuControl,
    InjectFaultControl,
    PauseControl,
    ResetControl,
    ResumeControl,
    RunState,
    SpeedControl,
    StepControl,
)
from app.run import events as run_events
from app.run.history import History, new_run_id
from app.run.pipe import (
    Ask,
    CheckpointNow,
    FailGpu,
    Hold,
    InjectFault,
    Reset,
    RunInfo,
    StepOnce,
    WorkerState,
)
from app.run.view import RunView
from app.web.hub import Hub


class Runner(Protocol):
    """What a handler may use of the run (app/run/runner.py's `Runner` is one)."""

    state: RunState
    speed: str | float
    view: RunView
    history: History
    hub: Hub

    async def ask(self, ask: Ask) -> RunInfo | WorkerState | None: ...
    def send_pace(self) -> None: ...
    def adopt(self, info: RunInfo, *, reset: bool, unclean: bool = False) -> None: ...
    def emit(self, e: EventMsg) -> EventMsg: ...
    def take_state(self, state: WorkerState, *, publish: bool = True) -> None: ...
    def hello_text(self, can_control: bool) -> str: ...
    def snapshot_text(self) -> str: ...


class ControlError(Exception):
    """A control that cannot be applied; `code` goes on the wire, `status` over REST."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


async def pause(r: Runner, ctl: PauseControl) -> list[EventMsg]:
    if r.state == "paused":
        return []
    r.state = "paused"
    # Wait for a step in flight, so "paused at step N" is the last step seen.
    await r.ask(Hold())
    return [r.emit(run_events.paused(r.view.step))]


async def resume(r: Runner, ctl: ResumeControl) -> list[EventMsg]:
    if r.state == "running":
        return []
    r.state = "running"
    r.send_pace()
    return [r.emit(run_events.resumed(r.view.step))]


async def speed(r: Runner, ctl: SpeedControl) -> list[EventMsg]:
    r.speed = ctl.value
    r.send_pace()
    return [r.emit(run_events.speed_changed(r.view.step, ctl.value))]


async def step(r: Runner, ctl: StepControl) -> list[EventMsg]:
    if r.state == "running":
        raise ControlError("not_paused", "single steps work while paused", 409)
    await r.ask(StepOnce())
    return []


async def fail_gpu(r: Runner, ctl: FailGpuControl) -> list[EventMsg]:
    gpus = r.view.config.gpus
    if not 0 <= ctl.gpu < gpus:
        raise ControlError("bad_gpu", f"gpu must be between 0 and {gpus - 1}, got {ctl.gpu}")
    return state_events(r, await r.ask(FailGpu(ctl.gpu)))


async def inject_fault(r: Runner, ctl: InjectFaultControl) -> list[EventMsg]:
    """A fault at scale from the next step; the engine's rules, checked here first so that a
    viewer hears which one a request breaks (the run is never touched by a refused one)."""
    c = r.view.config
    if ctl.kind == "data_stall":
        if ctl.target < 1:
            why = f"a data stall's target is its milliseconds, 1 or more, got {ctl.target}"
            raise ControlError("bad_fault", why)
    elif not 0 <= ctl.target < c.gpus:
        raise ControlError("bad_gpu", f"gpu must be between 0 and {c.gpus - 1}, got {ctl.target}")
    if ctl.kind != "dead" and not (c.tp == 1 and c.pp == 1 and c.experts == 0):
        raise ControlError(
            "bad_fault",
            f"a {ctl.kind} fault is simulated for data-parallel runs of a dense model only; "
            f"this run has tp {c.tp}, pp {c.pp}, {c.experts} experts",
            409,
        )
    return state_events(r, await r.ask(InjectFault(ctl.kind, ctl.target, ctl.steps)))


async def checkpoint_now(r: Runner, ctl: CheckpointControl) -> list[EventMsg]:
    return state_events(r, await r.ask(CheckpointNow()))


def state_events(r: Runner, state: RunInfo | WorkerState | None) -> list[EventMsg]:
    assert isinstance(state, WorkerState), f"expected the run's state, got {state!r}"
    r.take_state(state)
    return state.events


def new_cluster(current: RunConfig, gpus: int | None, servers: int | None) -> dict[str, int]:
    """The cluster fields of a new run's config: GPUs, servers and the global batch.

    The batch follows `RunConfig.batch_for`: the current batch is kept when it still shares
    out evenly (data parallelism does not change the maths, so the same seed then gives the
    same loss curve on a different cluster), else the default batch for that many GPUs.
    Raises ControlError("bad_config") naming the rule that a combination breaks.
    """
    g = current.gpus if gpus is None else gpus
    s = current.servers if servers is None else servers
    if g < 1 or s < 1:
        raise ControlError("bad_config", f"gpus and servers must be at least 1, got {g} and {s}")
    if s > g:
        raise ControlError("bad_config", f"servers ({s}) cannot outnumber gpus ({g})")
    if g % s:
        raise ControlError(
            "bad_config", f"gpus ({g}) must divide evenly over servers ({s}): {g} % {s} = {g % s}"
        )
    kept = current.batch_size if current.batch_size % g == 0 else None
    return {"gpus": g, "servers": s, "batch_size": RunConfig.batch_for(g, kept)}


def new_plan(ctl: ResetControl) -> dict[str, Any]:
    """The plan fields a reset names (the rest stay as they are). Whether they fit the
    cluster and the model is RunConfig's to say (app/engine/plan.py `plan_problems`): a
    changed model layout means a fresh run, which is what a reset starts."""
    return {k: v for k in PLAN_FIELDS if (v := getattr(ctl, k)) is not None}


def reset_config(current: RunConfig, ctl: Any) -> RunConfig:
    """The run a reset (or a page's own run, app/web/runs.py) asks for: `current` with the
    choices `ctl` names. Raises ControlError naming the rule a choice breaks."""
    if ctl.preset is not None and ctl.preset not in PRESETS:
        known = ", ".join(sorted(PRESETS))
        raise ControlError("bad_preset", f"unknown preset {ctl.preset!r} (known: {known})")
    changes: dict[str, Any] = {}
    if ctl.gpus is not None or ctl.servers is not None:
        changes |= new_cluster(current, ctl.gpus, ctl.servers)
    # Seed, preset, batch and learning rate, as named (a batch named wins over the cluster's).
    changes |= {k: v for k in RUN_FIELDS if (v := getattr(ctl, k)) is not None}
    changes |= new_plan(ctl)
    try:
        return current.with_(**changes)
    except ValueError as exc:  # RunConfig's own rules: the batch's, the plan's
        raise ControlError("bad_config", str(exc)) from None


async def reset(r: Runner, ctl: ResetControl) -> list[EventMsg]:
    config = reset_config(r.view.config, ctl)
    run_id = new_run_id()
    r.history.start_run(run_id, config.to_dict())
    info = await r.ask(Reset(config.to_dict(), run_id))
    assert isinstance(info, RunInfo), f"expected the new run, got {info!r}"
    old_run = r.view.run_id
    r.adopt(info, reset=True)
    event = r.emit(
        run_events.run_reset(
            r.view.step,
            run_id=run_id,
            previous_run_id=old_run,
            seed=config.seed,
            preset=config.preset,
        )
    )
    # Everyone starts over together: a new hello (the preset or the cluster may differ) and
    # snapshot.
    snapshot = r.snapshot_text()
    r.hub.publish_each(lambda v: [r.hello_text(r.hub.may_control(v)), snapshot])
    return [event]


HANDLERS: dict[str, Callable[[Runner, Any], Awaitable[list[EventMsg]]]] = {
    "pause": pause,
    "resume": resume,
    "speed": speed,
    "step": step,
    "fail_gpu": fail_gpu,
    "checkpoint_now": checkpoint_now,
    "inject_fault": inject_fault,
    "reset": reset,
}
