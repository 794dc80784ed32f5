"""Messages between the server and its training worker process: one dataclass per kind.

The runner (app/run/runner.py) starts the worker (app/run/worker.py) with a `WorkerSpec` and the two
talk over one duplex multiprocessing pipe. Everything that crosses it is one of the classes
below, so both sides construct and match on types, and a misspelt field is an error rather
than a silently wrong position. They must stay picklable: the worker is a spawned process.

To the worker:

    Pace(running, interval_s)   step on your own, one step every interval_s (0: as fast as
                                you can), or stop stepping; no answer
    Request(req_id, ask)        do `ask` between two steps, then answer Reply(req_id, ...)

    where ask is one of
    Hold()                      stop stepping; the answer comes after any step in flight
    StepOnce()                  one step now (while paused)
    FailGpu(gpu)                fail a GPU: the run rolls back to its last good checkpoint
    CheckpointNow()             save a checkpoint now
    InjectFault(kind, target, steps)  a fault at scale from the next step (Trainer.inject)
    Reset(config, run_id)       drop the run and open a fresh one with this config
    Close()                     final checkpoint, then the worker exits

From the worker:

    Ready(info)                 the run is open (sent once, at start)
    StepReady(...)              one step: its body already serialised as `StepFields` JSON
                                (once, here, however many viewers there are; the runner adds
                                `StepMsg`'s own fields, seq and sent_at), its key figures and
                                compressed trace for the history, its events, and the
                                checkpoints on disk when they changed
    Reply(req_id, result, error)  the answer to a Request: RunInfo for Reset, WorkerState for
                                FailGpu, CheckpointNow, InjectFault and Close, None otherwise;
                                or an error
    StepDiverged(run_id, event, state)  a step's loss or gradient norm was not finite: the
                                update was not applied and the worker stopped stepping (it
                                waits at its last good step); the engine's `diverged` event
                                and where the run stands
    Fatal(traceback)            the worker is dying of an unexpected error
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.protocol import CheckpointMsg, EventMsg

# --- starting the worker ----------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerSpec:
    config: dict[str, Any]  # RunConfig.to_dict()
    run_dir: str
    fresh: bool  # start over, deleting the folder's checkpoints
    run_id: str
    # Resume from no checkpoint past the last step the history recorded (None: no limit).
    resume_at_most: int | None = None


@dataclass(frozen=True)
class RunInfo:
    """A run the worker has just opened: what a `hello` says, and where the run stands."""

    run_id: str
    config: dict[str, Any]  # RunConfig.to_dict()
    topology: dict[str, Any]
    preset: dict[str, Any]
    n_params: int
    vocab_size: int
    step: int
    restarts: int
    startup_events: list[EventMsg]
    checkpoints: list[CheckpointMsg]
    # The parallel plan ({dp, tp, pp, ep, microbatches, schedule, experts, top_k}) and what
    # each GPU does under it (protocol.RoleMsg), as the engine's Plan says.
    plan: dict[str, Any] | None = None
    roles: list[dict[str, Any]] = field(default_factory=list)
    # Where the steps come from when they are not computed now: a recording's description
    # (app/run/recording.py RecordingMeta.describe, with "kind": "recording"); None: live.
    source: dict[str, Any] | None = None
    # The body (StepFields JSON) of the step the run stands at, when the worker holds it and
    # no new step may come to show it: a recording reopened at its last played step.
    last_body: str | None = None


@dataclass(frozen=True)
class WorkerState:
    """Where the run stands after a request that may move it (a failure, a checkpoint)."""

    events: list[EventMsg]
    step: int
    restarts: int
    checkpoints: list[CheckpointMsg]


@dataclass(frozen=True)
class StepFigures:
    """A step's key figures, as the history records them."""

    step: int
    epoch: int
    loss: float
    grad_norm: float
    lr: float
    tokens_total: int
    sim_step_s: float
    wall_step_s: float
    restarts: int


# --- to the worker ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pace:
    running: bool
    interval_s: float


@dataclass(frozen=True)
class Hold:
    pass


@dataclass(frozen=True)
class StepOnce:
    pass


@dataclass(frozen=True)
class FailGpu:
    gpu: int


@dataclass(frozen=True)
class CheckpointNow:
    pass


@dataclass(frozen=True)
class InjectFault:
    kind: str  # steptrace.FAULT_KINDS
    target: int  # a GPU, or a data stall's milliseconds
    steps: int


@dataclass(frozen=True)
class Reset:
    config: dict[str, Any]  # RunConfig.to_dict()
    run_id: str


@dataclass(frozen=True)
class Close:
    pass


Ask = Hold | StepOnce | FailGpu | CheckpointNow | InjectFault | Reset | Close


@dataclass(frozen=True)
class Request:
    req_id: int
    ask: Ask


ToWorker = Pace | Request

# --- from the worker --------------------------------------------------------------------------


@dataclass(frozen=True)
class Ready:
    info: RunInfo


@dataclass(frozen=True)
class StepReady:
    run_id: str
    body: str  # StepFields JSON
    figures: StepFigures
    trace: bytes  # the step's trace (TraceMsg JSON), zlib-compressed, for the history
    events: list[EventMsg] = field(default_factory=list)
    checkpoints: list[CheckpointMsg] | None = None  # None: unchanged since the last report
    probe: str | None = None  # the step's probe (ProbeMsg JSON) when it computed one


@dataclass(frozen=True)
class Reply:
    req_id: int
    result: RunInfo | WorkerState | None = None
    error: str | None = None  # set when the request failed


@dataclass(frozen=True)
class StepDiverged:
    run_id: str
    event: EventMsg  # the engine's `diverged` event: the step, loss, gradient norm, reason
    state: WorkerState  # where the run stands, and events the step raised before it diverged


@dataclass(frozen=True)
class Fatal:
    traceback: str


FromWorker = Ready | StepReady | Reply | StepDiverged | Fatal
