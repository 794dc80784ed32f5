"""The runner: starts the training worker, paces it, applies controls, records and publishes.

The Trainer lives in a worker process (app/run/worker.py), reached through `WorkerLink`
(app/run/worker_link.py; the messages are described in app/run/pipe.py). The runner is the one
place that decides pacing: running, paused or resting (no viewer for a while). Every step
is in runs.sqlite before any viewer sees it; what viewers see of the run is kept, and turned
into text, by `RunView` (app/run/view.py). The runner takes plain values (`RunnerOptions`),
never the web server's settings.

Nothing that goes wrong around the run stops it silently: a step that diverges pauses the
run (`diverged`), a worker that dies is restarted with growing pauses between tries
(`worker_failed`), and a step the history cannot store is still shown (`record_failed`);
each is an event to every viewer, and `problem()` says in one line what is wrong now.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from app.engine.config import RunConfig
from app.protocol import LESSON, MAX, Control, EventMsg, RunState, RunStatus
from app.run import events as run_events
from app.run.choice import RunnerOptions, choose_run
from app.run.controls import HANDLERS, ControlError
from app.run.history import History
from app.run.pipe import Ask, Pace, RunInfo, StepDiverged, StepReady, WorkerSpec, WorkerState
from app.run.recording import Recorder
from app.run.view import RunView, step_frame_text
from app.run.worker import worker_main
from app.run.worker_link import WorkerLink, WorkerUnavailable, last_line
from app.web.hub import Frame, Hub

log = logging.getLogger("trainingrun.runner")

# Restarting a worker that keeps failing: wait 1, 2, 4, ... seconds, at most a minute. A
# worker that ran this long before it stopped counts as having worked: start again at 1 s.
RESPAWN_FIRST_S = 1.0
RESPAWN_MAX_S = 60.0
WORKED_AFTER_S = 60.0
# Seconds between tries of the writes the record refused (app/run/history.py holds them).
RECORD_RETRY_S = 5.0


def respawn_delay(attempt: int) -> float:
    """Seconds to wait before restart `attempt` (1, 2, 3, ...)."""
    return min(RESPAWN_MAX_S, RESPAWN_FIRST_S * 2 ** min(attempt - 1, 30))


def speed_interval(speed: str | float, lesson_s: float) -> float:
    if speed == LESSON:
        return lesson_s
    if speed == MAX:
        return 0.0
    return 1.0 / float(speed)


class Runner:
    def __init__(
        self,
        options: RunnerOptions,
        hub: Hub,
        history: History,
        *,
        worker_target: Callable[..., Any] = worker_main,
    ) -> None:
        self.options = options
        self.hub = hub
        self.history = history
        self.view = RunView(history)
        self.state: RunState = "paused" if options.paused else "running"
        self.speed: str | float = options.speed
        self._worker = WorkerLink(
            on_step=self._take_step,
            on_gone=self._worker_gone,
            on_diverged=self._diverged,
            target=worker_target,
        )
        self._seq = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self._rest_timer: asyncio.TimerHandle | None = None
        self._lock = asyncio.Lock()  # one control request at a time
        self._respawn_task: asyncio.Task[None] | None = None
        self._up_since: float | None = None  # when the current worker opened its run
        self._started = False  # a worker has been started once (later ones are restarts)
        self._failures = 0  # worker stops in a row, each without a good run in between
        self._respawn_note = ""  # why the worker is being restarted, while it is
        self._record_error: str | None = None  # set while steps cannot be recorded
        self._record_failures = 0
        self._stuck: str | None = None  # set while no checkpoint is left that trains on
        self._record_retry: asyncio.Future[None] | None = None
        # Set for a heavy story run computed live: its first steps become its recording.
        self.recorder: Recorder | None = None

    # --- life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._seq = self.history.next_seq() - 1
        config, run_id, fresh = choose_run(self.options, self.history)
        await self._spawn(config, run_id, fresh)
        aside = self.history.set_aside
        if aside is not None:  # the record was damaged: said once, and kept in the new one
            self.emit(
                run_events.record_set_aside(
                    self.view.step, moved_to=aside.moved_to.name, reason=aside.reason, why=aside.why
                )
            )
        self.hub.on_count_change = self._viewers_changed
        self.send_pace()
        self._arm_rest_timer()
        self._record_retry = asyncio.ensure_future(self._retry_record())

    async def _retry_record(self) -> None:
        """Writes the record refused are tried again every few seconds, so a paused run
        (nothing new to write) is not left with a health problem after storage is back."""
        assert self._loop is not None
        while not self._stopping:
            await asyncio.sleep(RECORD_RETRY_S)
            if self._record_error is None and self.history.write_problem is None:
                continue
            caught_up = False
            with contextlib.suppress(Exception):
                caught_up = await self._loop.run_in_executor(None, self.history.retry)
            if caught_up and self.history.write_problem is None and self._record_error:
                log.warning("the run record caught up after %d failed steps", self._record_failures)
                self._record_error, self._record_failures = None, 0

    async def _spawn(self, config: RunConfig, run_id: str, fresh: bool) -> None:
        # The record is the truth about what happened: resume from no checkpoint of steps it
        # never got (a kill between the worker's save and the server's write), or it would
        # have a hole; those steps are redone instead, and the restart says so.
        recorded = None if fresh else self.history.last_step(run_id)
        spec = WorkerSpec(
            config=config.to_dict(),
            run_dir=str(self.options.run_dir),
            fresh=fresh,
            run_id=run_id,
            resume_at_most=recorded,
        )
        clean = self.history.take_clean_stop(run_id) if not self._started else False
        self._started = True
        self.adopt(await self._worker.start(spec), reset=False, unclean=not clean)
        self._up_since = time.monotonic()

    async def stop(self) -> None:
        """Stop the worker after a final checkpoint, and remember the latest step frame."""
        self._stopping = True
        if self._rest_timer:
            self._rest_timer.cancel()
        if self._record_retry is not None:
            self._record_retry.cancel()
        if self._respawn_task:
            self._respawn_task.cancel()
        state = await self._worker.close()
        if state is not None:
            self.take_state(state, publish=False)
        if self.view.run_id:
            self.history.mark_clean_stop(self.view.run_id, self.view.last_frame)

    # --- what the worker sends -----------------------------------------------------------

    def _take_step(self, msg: StepReady) -> None:
        """Record first, then publish: anything a viewer sees is already in runs.sqlite.

        Called in the link's reader thread. When the history cannot store a step (disk full,
        a broken database), the step is still shown, and viewers are told once.
        """
        self._seq += 1
        seq = self._seq
        events = msg.events
        try:
            self.history.add_step(
                seq,
                msg.run_id,
                asdict(msg.figures),
                [e.model_dump() for e in events],
                msg.trace,
                probe=msg.probe,
            )
        except Exception as exc:
            self._record_failed(seq, msg, exc)
        else:
            if self._record_error is not None:
                log.warning(
                    "recording steps again at seq %d after %d failed", seq, self._record_failures
                )
                self._record_error, self._record_failures = None, 0
        if self.recorder is not None:
            self.recorder.take(msg)
        frame = Frame(
            step_frame_text(msg.body, seq, round(time.time(), 6)),
            is_step=True,
            events=[Frame(e.model_dump_json()) for e in events],
        )
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._on_step, seq, msg, frame)

    def _record_failed(self, seq: int, msg: StepReady, exc: Exception) -> None:
        self._record_failures += 1
        if self._record_error is not None:
            return  # said once per spell of failures, not once per step
        reason = last_line(f"{exc.__class__.__name__}: {exc}")
        self._record_error = reason
        log.error("could not record step %d (seq %d): %s", msg.figures.step, seq, reason)
        event = run_events.record_failed(msg.figures.step, seq=seq, reason=reason)
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self.emit, event)

    def _on_step(self, seq: int, msg: StepReady, frame: Frame) -> None:
        self._stuck = None
        if self.view.take_step(seq, msg, frame.text):
            self.hub.publish(frame)
        # else: a step of a run that was just reset: recorded, not shown

    def _diverged(self, msg: StepDiverged) -> None:
        """The worker stopped at its last good step; the run is paused until a viewer acts."""
        if msg.run_id != self.view.run_id:
            return  # the run was reset meanwhile
        self.take_state(msg.state)  # and the events the step raised before it diverged
        if msg.event.detail.get("exhausted"):
            # Every checkpoint it fell back to diverged at once: trying again cannot help.
            self._stuck = "no checkpoint is left that trains on; reset the run"
        if self.state != "paused":
            self.state = "paused"
            self.view.changed()
        log.warning("%s", msg.event.message)
        self.emit(run_events.diverged(msg.event))

    def _worker_gone(self) -> None:
        if self._stopping:
            return
        if self._respawn_task is not None and not self._respawn_task.done():
            return  # a restart in progress failed; the restart loop tries again itself
        if self._up_since is not None and time.monotonic() - self._up_since >= WORKED_AFTER_S:
            self._failures = 0
        self._up_since = None
        self._respawn_task = asyncio.ensure_future(self._respawn())

    async def _respawn(self) -> None:
        """Restart the worker from the last checkpoint, waiting longer after each failure."""
        while not self._stopping:
            reason = self._worker.last_failure or "the training worker stopped"
            self._failures += 1
            attempt = self._failures
            delay = respawn_delay(attempt)
            log.error("%s; restart %d in %g s from the last checkpoint", reason, attempt, delay)
            self._respawn_note = f"{reason}; restart {attempt} in {delay:g} s"
            self.emit(
                run_events.worker_failed(
                    self.view.step, reason=reason, attempt=attempt, retry_in_s=delay
                )
            )
            await asyncio.sleep(delay)
            self._respawn_note = f"{reason}; restart {attempt} in progress"
            self._worker.last_failure = ""
            try:
                await self._spawn(self.view.config, self.view.run_id, fresh=False)
            except Exception as exc:
                # A worker that died while starting has said why (the last line of its
                # traceback); otherwise the start itself failed.
                if not self._worker.last_failure:
                    self._worker.last_failure = last_line(f"{exc.__class__.__name__}: {exc}")
                continue
            self._respawn_note = ""
            self.send_pace()
            return

    # --- talking to the worker ------------------------------------------------------------

    async def ask(self, ask: Ask) -> RunInfo | WorkerState | None:
        try:
            reply = await self._worker.request(ask)
        except WorkerUnavailable as exc:
            raise ControlError("unavailable", str(exc), 503) from exc
        if reply.error is not None:
            if self.recording is not None:  # what a played recording cannot do: a refusal
                raise ControlError("recording", reply.error, 409)
            raise ControlError("engine_error", reply.error, 500)
        return reply.result

    def send_pace(self) -> None:
        interval = speed_interval(self.speed, self.options.lesson_interval_s)
        with contextlib.suppress(WorkerUnavailable):
            self._worker.post(Pace(running=self.state == "running", interval_s=interval))

    # --- the run's state ------------------------------------------------------------------

    @property
    def recording(self) -> dict[str, Any] | None:
        """The recording this run plays (RunInfo.source), or None for a live run."""
        info = self.view.info
        return info.source if info is not None else None

    def adopt(self, info: RunInfo, *, reset: bool, unclean: bool = False) -> None:
        """Take on a run the worker has just opened (at start, after a crash, on reset)."""
        if reset:
            self._stuck = None
        if self.recorder is not None:
            self.recorder.opened(info)
        for e in self.view.adopt(info, reset=reset, unclean=unclean, seq=self._seq):
            self.emit(e)

    def emit(self, e: EventMsg) -> EventMsg:
        """An event raised outside a step: record it, keep it, send it as its own frame."""
        self.view.record_event(e)
        self.hub.publish(Frame(e.model_dump_json()))
        return e

    def take_state(self, state: WorkerState, *, publish: bool = True) -> None:
        self.view.take_state(state)
        if self.recorder is not None:
            self.recorder.saw(state.events)
        for e in state.events:
            if publish:
                self.emit(e)
            else:
                self.view.record_event(e)

    # --- what viewers are sent ------------------------------------------------------------

    @property
    def worker_alive(self) -> bool:
        return self._worker.alive

    @property
    def worker_pid(self) -> int | None:
        return self._worker.pid

    def problem(self) -> str | None:
        """What is wrong with the run right now, in one line; None when all is well."""
        if self._stopping:
            return "the server is shutting down"
        if self._respawn_note:
            return self._respawn_note
        if not self._worker.alive or not self._worker.reader_alive:
            return self._worker.down_reason()
        if self.history.write_problem is not None:
            return f"the run record cannot be written: {self.history.write_problem}"
        if self._record_error is not None:
            return f"steps are not being recorded: {self._record_error}"
        if self._stuck is not None:
            return self._stuck
        return None

    def status(self) -> RunStatus:
        return self.view.status(self.state, self.speed, self.hub.count)

    def hello_text(self, can_control: bool) -> str:
        return self.view.hello_text(can_control)

    def snapshot_text(self) -> str:
        return self.view.snapshot_text(self.status())

    # --- resting while nobody watches -----------------------------------------------------

    def _viewers_changed(self, count: int) -> None:
        # Nothing the snapshot is built from changed: its count of viewers is spliced in.
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

    # --- controls: one handler per action (app/run/controls.py) --------------------------------

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
