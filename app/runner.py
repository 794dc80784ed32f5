"""The runner: starts the training worker, paces it, applies controls, records and publishes.

The Trainer lives in a worker process (app/worker.py), reached through `WorkerLink`
(app/worker_link.py; the messages are described in app/pipe.py). The runner is the one
place that decides pacing: running, paused or resting (no viewer for a while). Every step
is in runs.sqlite before any viewer sees it; what viewers see of the run is kept, and turned
into text, by `RunView` (app/run_view.py). The runner takes plain values (`RunnerOptions`),
never the web server's settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.controls import HANDLERS, ControlError
from app.engine.config import RunConfig
from app.history import History, new_run_id
from app.hub import Frame, Hub
from app.pipe import Ask, Pace, RunInfo, StepReady, WorkerSpec, WorkerState
from app.protocol import LESSON, MAX, Control, EventMsg, RunState, RunStatus
from app.run_view import RunView, step_frame_text
from app.worker_link import WorkerLink, WorkerUnavailable

log = logging.getLogger("trainingrun.runner")

# Config fields a stored run keeps across restarts unless they are named again: a reset
# may have changed them.
STICKY_FIELDS = ("seed", "preset")


@dataclass(frozen=True)
class RunnerOptions:
    """What the runner needs to start, as plain values."""

    run_dir: Path  # data lake, checkpoints
    config: RunConfig  # the run to start (or to resume, when it is the stored one)
    explicit: frozenset[str]  # RunConfig fields named explicitly rather than defaulted
    fresh: bool  # start a new run even when the stored one matches
    speed: str | float  # "lesson", "max" or steps per second
    lesson_interval_s: float  # seconds between steps at lesson speed
    rest_after_s: float  # stop stepping after this long with no viewer; 0 never rests


def speed_interval(speed: str | float, lesson_s: float) -> float:
    if speed == LESSON:
        return lesson_s
    if speed == MAX:
        return 0.0
    return 1.0 / float(speed)


class Runner:
    def __init__(self, options: RunnerOptions, hub: Hub, history: History) -> None:
        self.options = options
        self.hub = hub
        self.history = history
        self.view = RunView(history)
        self.state: RunState = "running"
        self.speed: str | float = options.speed
        self._worker = WorkerLink(on_step=self._take_step, on_gone=self._worker_gone)
        self._seq = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self._rest_timer: asyncio.TimerHandle | None = None
        self._lock = asyncio.Lock()  # one control request at a time
        self._respawn_task: asyncio.Task[None] | None = None

    # --- life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._seq = self.history.next_seq() - 1
        config, run_id, fresh = self._choose_run()
        await self._spawn(config, run_id, fresh)
        self.hub.on_count_change = self._viewers_changed
        self.send_pace()
        self._arm_rest_timer()

    def _choose_run(self) -> tuple[RunConfig, str, bool]:
        """Resume the current run unless the options describe a different one.

        A reset may have changed the seed or preset; those stick across restarts unless
        they are named again.
        """
        o = self.options
        current = None if o.fresh else self.history.current_run()
        config = o.config
        if current is not None:
            stored = RunConfig.from_dict(current.config)
            keep = {k: getattr(stored, k) for k in STICKY_FIELDS if k not in o.explicit}
            config = config.with_(**keep)
            if config.identity() == stored.identity():
                if config.to_dict() != stored.to_dict():
                    self.history.update_config(current.run_id, config.to_dict())
                return config, current.run_id, False
        run_id = new_run_id()
        self.history.start_run(run_id, config.to_dict())
        # A new run never inherits checkpoints left by another one in the same folder.
        return config, run_id, True

    async def _spawn(self, config: RunConfig, run_id: str, fresh: bool) -> None:
        spec = WorkerSpec(
            config=config.to_dict(), run_dir=str(self.options.run_dir), fresh=fresh, run_id=run_id
        )
        self.adopt(await self._worker.start(spec), reset=False)

    async def stop(self) -> None:
        """Stop the worker after a final checkpoint, and remember the latest step frame."""
        self._stopping = True
        if self._rest_timer:
            self._rest_timer.cancel()
        if self._respawn_task:
            self._respawn_task.cancel()
        state = await self._worker.close()
        if state is not None:
            self.take_state(state, publish=False)
        if self.view.run_id:
            self.history.set_last_frame(self.view.run_id, self.view.last_frame)

    # --- what the worker sends -----------------------------------------------------------

    def _take_step(self, msg: StepReady) -> None:
        """Record first, then publish: anything a viewer sees is already in runs.sqlite."""
        self._seq += 1
        seq = self._seq
        events = msg.events
        self.history.add_step(
            seq, msg.run_id, asdict(msg.figures), [e.model_dump() for e in events], msg.trace
        )
        frame = Frame(
            step_frame_text(msg.body, seq, round(time.time(), 6)),
            is_step=True,
            events=[Frame(e.model_dump_json()) for e in events],
        )
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._on_step, seq, msg, frame)

    def _on_step(self, seq: int, msg: StepReady, frame: Frame) -> None:
        if self.view.take_step(seq, msg, frame.text):
            self.hub.publish(frame)
        # else: a step of a run that was just reset: recorded, not shown

    def _worker_gone(self) -> None:
        if not self._stopping:
            log.error("training worker stopped unexpectedly; restarting from the last checkpoint")
            self._respawn_task = asyncio.ensure_future(self._respawn())

    async def _respawn(self) -> None:
        await asyncio.sleep(1.0)
        try:
            await self._spawn(self.view.config, self.view.run_id, fresh=False)
        except Exception:
            log.exception("could not restart the training worker")
            return
        self.send_pace()

    # --- talking to the worker ------------------------------------------------------------

    async def ask(self, ask: Ask) -> RunInfo | WorkerState | None:
        try:
            reply = await self._worker.request(ask)
        except WorkerUnavailable as exc:
            raise ControlError("unavailable", str(exc), 503) from exc
        if reply.error is not None:
            raise ControlError("engine_error", reply.error, 500)
        return reply.result

    def send_pace(self) -> None:
        interval = speed_interval(self.speed, self.options.lesson_interval_s)
        with contextlib.suppress(WorkerUnavailable):
            self._worker.post(Pace(running=self.state == "running", interval_s=interval))

    # --- the run's state ------------------------------------------------------------------

    def adopt(self, info: RunInfo, *, reset: bool) -> None:
        """Take on a run the worker has just opened (at start, after a crash, on reset)."""
        for e in self.view.adopt(info, reset=reset):
            self.emit(e)

    def emit(self, e: EventMsg) -> EventMsg:
        """An event raised outside a step: record it, keep it, send it as its own frame."""
        self.view.record_event(e)
        self.hub.publish(Frame(e.model_dump_json()))
        return e

    def take_state(self, state: WorkerState, *, publish: bool = True) -> None:
        self.view.take_state(state)
        for e in state.events:
            if publish:
                self.emit(e)
            else:
                self.view.record_event(e)

    # --- what viewers are sent ------------------------------------------------------------

    @property
    def worker_alive(self) -> bool:
        return self._worker.alive

    def status(self) -> RunStatus:
        return self.view.status(self.state, self.speed, self.hub.count)

    def hello_text(self, can_control: bool) -> str:
        return self.view.hello_text(can_control)

    def snapshot_text(self) -> str:
        return self.view.snapshot_text(self.status())

    # --- resting while nobody watches -----------------------------------------------------

    def _viewers_changed(self, count: int) -> None:
        self.view.changed()
        if count > 0 and self.state == "resting":
            self.state = "running"
            self.send_pace()
        if count == 0:
            self._arm_rest_timer()

    def _arm_rest_timer(self) -> None:
        if self._rest_timer:
            self._rest_timer.cancel()
        rest_after_s = self.options.rest_after_s
        if rest_after_s > 0 and self._loop is not None:
            self._rest_timer = self._loop.call_later(rest_after_s, self._maybe_rest)

    def _maybe_rest(self) -> None:
        if self.hub.count == 0 and self.state == "running" and not self._stopping:
            self.state = "resting"
            self.view.changed()
            self.send_pace()

    # --- controls: one handler per action (app/controls.py) --------------------------------

    async def control(self, ctl: Control) -> dict[str, Any]:
        """Apply a validated protocol Control. Raises ControlError with a clear message."""
        async with self._lock:
            if self._stopping:
                raise ControlError("unavailable", "the server is shutting down", 503)
            if self.state == "resting" and ctl.action != "pause":
                # Someone is driving the run: wake it (it rests again if nobody watches).
                self.state = "running"
                self.send_pace()
                self._arm_rest_timer()
            events = await HANDLERS[ctl.action](self, ctl)
            self.view.changed()
            return {
                "ok": True,
                "status": self.status().model_dump(),
                "events": [e.model_dump() for e in events],
            }
