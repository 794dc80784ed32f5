"""The runner: owns the training run, paces it, applies controls, records and publishes it.

The Trainer lives in a worker process (bottom of this file) so numpy never competes with the
event loop for the interpreter lock, even with hundreds of viewers. The server side keeps the
run's visible state (status, loss history, recent events, checkpoints, the latest step) and is
the one place that decides pacing: running, paused or resting (no viewer for a while).

Worker protocol over a pipe. To the worker: ("pace", running, interval_s);
("step_once" | "checkpoint_now" | "close", req_id); ("fail_gpu", req_id, gpu);
("reset", req_id, config, run_id). From the worker: ("ready", info); ("step", run_id,
body_json, figures, events, checkpoints | None); ("reply", req_id, ok, payload);
("fatal", traceback). Steps arrive already serialised; the server adds `seq` and `sent_at`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import multiprocessing as mp
import os
import secrets
import signal
import threading
import time
import traceback
from collections import deque
from dataclasses import asdict
from multiprocessing.connection import Connection
from typing import Any

from app.engine.config import RunConfig
from app.engine.report import Event
from app.engine.timing import PRESETS, preset_info
from app.engine.trainer import Trainer
from app.history import History
from app.hub import Frame, Hub
from app.protocol import (
    LESSON,
    MAX,
    HelloMsg,
    RunStatus,
    StepFields,
)
from app.settings import Settings

log = logging.getLogger("trainingrun.runner")

HISTORY_POINTS = 2000  # most loss points a snapshot carries
RECENT_EVENTS = 200
READY_TIMEOUT_S = 300.0  # building the data lake on a slow machine takes a while
REPLY_TIMEOUT_S = 120.0
CLOSE_TIMEOUT_S = 60.0
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class ControlError(Exception):
    """A control that cannot be applied; `code` goes on the wire, `status` over REST."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def downsample(points: list[tuple[int, int, float]], limit: int) -> list[tuple[int, int, float]]:
    """Evenly spaced points, always keeping the first and the latest."""
    n = len(points)
    if n <= limit:
        return points
    idx = sorted({round(i * (n - 1) / (limit - 1)) for i in range(limit)})
    return [points[i] for i in idx]


def speed_interval(speed: str | float, lesson_s: float) -> float:
    if speed == LESSON:
        return lesson_s
    if speed == MAX:
        return 0.0
    return 1.0 / float(speed)


class Runner:
    def __init__(self, settings: Settings, hub: Hub, history: History) -> None:
        self.settings = settings
        self.hub = hub
        self.history = history
        self.state = "running"
        self.speed: str | float = settings.speed
        self.run_id = ""
        self.info: dict[str, Any] = {}
        self.step = 0
        self.epoch = 0
        self.loss: float | None = None
        self.tokens_total = 0
        self.restarts = 0
        self.points: list[tuple[int, int, float]] = []
        self.events: deque[dict[str, Any]] = deque(maxlen=RECENT_EVENTS)
        self.checkpoints: list[dict[str, Any]] = []
        self.last_frame: str | None = None
        self.steps_published = 0
        self._seq = 0
        self._version = 0
        self._snapshot_cache: tuple[int, str] | None = None
        self._hello_cache: dict[bool, str] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proc: mp.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._reader: threading.Thread | None = None
        self._replies: dict[int, asyncio.Future[tuple[bool, Any]]] = {}
        self._req_ids = itertools.count(1)
        self._ready: asyncio.Future[dict[str, Any]] | None = None
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
        self._send_pace()
        self._arm_rest_timer()

    def _choose_run(self) -> tuple[RunConfig, str, bool]:
        """Resume the current run unless the settings describe a different one.

        A reset may have changed the seed or preset; those stick across restarts unless
        the command line names them again.
        """
        s = self.settings
        current = None if s.fresh else self.history.current_run()
        config = s.run_config()
        if current is not None:
            stored = RunConfig.from_dict(current.config)
            keep = {
                k: getattr(stored, k) for k in ("seed", "preset") if k not in s.model_fields_set
            }
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
        assert self._loop is not None
        # The model's matrices are small: a BLAS spreading each product over threads only
        # fights the server and the other processes for cores (measured 1 vs 28 steps/s on a
        # busy 2-core machine). The spawned worker inherits these; an explicit setting wins.
        for var in BLAS_THREAD_VARS:
            os.environ.setdefault(var, "1")
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe(duplex=True)
        spec = {
            "config": config.to_dict(),
            "run_dir": str(self.settings.run_dir),
            "fresh": fresh,
            "run_id": run_id,
        }
        self._ready = self._loop.create_future()
        self._proc = ctx.Process(target=worker_main, args=(child, spec), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        self._reader = threading.Thread(target=self._read, args=(parent,), daemon=True)
        self._reader.start()
        info = await asyncio.wait_for(self._ready, READY_TIMEOUT_S)
        self._adopt(info, reset=False)

    async def stop(self) -> None:
        """Stop the worker after a final checkpoint, and remember the latest step frame."""
        self._stopping = True
        if self._rest_timer:
            self._rest_timer.cancel()
        if self._respawn_task:
            self._respawn_task.cancel()
        if self._proc is not None and self._proc.is_alive():
            try:
                self._post(("pace", False, 0.0))
                ok, payload = await self._request(("close",), timeout=CLOSE_TIMEOUT_S)
                if ok:
                    self._record_state(payload, publish=False)
            except Exception:
                log.exception("worker did not close cleanly")
            await asyncio.to_thread(self._proc.join, 10)
            if self._proc.is_alive():
                self._proc.terminate()
        if self.run_id:
            self.history.set_last_frame(self.run_id, self.last_frame)

    # --- reading the worker (a thread: a blocking pipe read never touches the loop) ------

    def _read(self, conn: Connection) -> None:
        loop = self._loop
        assert loop is not None
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                loop.call_soon_threadsafe(self._worker_gone, conn)
                return
            kind = msg[0]
            if kind == "step":
                self._take_step(*msg[1:])
            elif kind == "reply":
                loop.call_soon_threadsafe(self._resolve, msg[1], msg[2], msg[3])
            elif kind == "ready":
                loop.call_soon_threadsafe(self._ready_arrived, msg[1])
            elif kind == "fatal":
                log.error("training worker failed:\n%s", msg[1])

    def _take_step(
        self,
        run_id: str,
        body: str,
        figures: dict[str, Any],
        events: list[dict[str, Any]],
        ckpts: list[dict[str, Any]] | None,
    ) -> None:
        """Record first, then publish: anything a viewer sees is already in runs.sqlite."""
        self._seq += 1
        seq = self._seq
        self.history.add_step(seq, run_id, figures, events)
        head = f'{{"type":"step","seq":{seq},"sent_at":{time.time():.6f},'
        frame = Frame(
            head + body[1:],
            is_step=True,
            events=[Frame(json.dumps(e, separators=(",", ":"))) for e in events],
        )
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._on_step, run_id, seq, frame, figures, events, ckpts)

    def _on_step(
        self,
        run_id: str,
        seq: int,
        frame: Frame,
        figures: dict[str, Any],
        events: list[dict[str, Any]],
        ckpts: list[dict[str, Any]] | None,
    ) -> None:
        if run_id != self.run_id:
            return  # a step of a run that was just reset: recorded, not shown
        self.step = figures["step"]
        self.epoch = figures["epoch"]
        self.loss = figures["loss"]
        self.tokens_total = figures["tokens_total"]
        self.restarts = figures["restarts"]
        self.points.append((seq, figures["step"], figures["loss"]))
        self.events.extend(events)
        if ckpts is not None:
            self.checkpoints = ckpts
        self.last_frame = frame.text
        self.steps_published += 1
        self._changed()
        self.hub.publish(frame)

    def _resolve(self, req_id: int, ok: bool, payload: Any) -> None:
        fut = self._replies.pop(req_id, None)
        if fut is not None and not fut.done():
            fut.set_result((ok, payload))

    def _ready_arrived(self, info: dict[str, Any]) -> None:
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(info)

    def _worker_gone(self, conn: Connection) -> None:
        if conn is not self._conn:
            return
        for fut in self._replies.values():
            if not fut.done():
                fut.set_result((False, "the training worker stopped"))
        self._replies.clear()
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(RuntimeError("the training worker stopped while starting"))
        if not self._stopping:
            log.error("training worker stopped unexpectedly; restarting from the last checkpoint")
            self._respawn_task = asyncio.ensure_future(self._respawn())

    async def _respawn(self) -> None:
        await asyncio.sleep(1.0)
        config = RunConfig.from_dict(self.info["config"])
        try:
            await self._spawn(config, self.run_id, fresh=False)
        except Exception:
            log.exception("could not restart the training worker")
            return
        self._send_pace()

    # --- talking to the worker ------------------------------------------------------------

    def _post(self, msg: tuple[Any, ...]) -> None:
        if self._conn is None:
            raise ControlError("unavailable", "the training worker is not running", 503)
        try:
            self._conn.send(msg)
        except (OSError, ValueError) as exc:
            raise ControlError("unavailable", "the training worker is not running", 503) from exc

    async def _request(
        self, msg: tuple[Any, ...], timeout: float = REPLY_TIMEOUT_S
    ) -> tuple[bool, Any]:
        assert self._loop is not None
        req_id = next(self._req_ids)
        fut: asyncio.Future[tuple[bool, Any]] = self._loop.create_future()
        self._replies[req_id] = fut
        self._post((msg[0], req_id, *msg[1:]))
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._replies.pop(req_id, None)

    def _send_pace(self) -> None:
        running = self.state == "running"
        with contextlib.suppress(ControlError):
            self._post(
                ("pace", running, speed_interval(self.speed, self.settings.lesson_interval_s))
            )

    # --- state kept for viewers -----------------------------------------------------------

    def _adopt(self, info: dict[str, Any], *, reset: bool) -> None:
        """Take on a run the worker has just opened (at start, after a crash, on reset)."""
        self.info = info
        self.run_id = info["run_id"]
        self.step = info["step"]
        self.restarts = info["restarts"]
        self.checkpoints = info["checkpoints"]
        self._hello_cache.clear()
        if reset:
            self.points, self.last_frame = [], None
            self.events.clear()
            self.epoch, self.loss, self.tokens_total = 0, None, 0
        else:
            self.points = self.history.loss_points(self.run_id)
            self.events = deque(self.history.events(self.run_id, RECENT_EVENTS), RECENT_EVENTS)
            current = self.history.current_run()
            if self.last_frame is None and current and current.run_id == self.run_id:
                self.last_frame = current.last_frame
            self._restore_figures()
        recorded = self.history.last_step(self.run_id)
        for e in info["startup_events"]:
            if e["kind"] == "restored" and recorded is not None and recorded > self.step:
                # The process stopped without a final checkpoint: say how much is redone.
                e["detail"].update(
                    failed_step=recorded, steps_lost=recorded - self.step, reason="crash"
                )
                e["message"] = (
                    f"Resumed from the checkpoint at step {self.step} after an unclean stop: "
                    f"{recorded - self.step} steps to redo"
                )
            self._emit_event(e)
        kinds = {e["kind"] for e in info["startup_events"]}
        if "restored" not in kinds and recorded is not None and recorded > self.step:
            self._emit_event(
                {
                    "type": "event",
                    "kind": "restored",
                    "step": self.step,
                    "message": f"Restarted from step {self.step} after an unclean stop: "
                    f"{recorded - self.step} steps to redo",
                    "detail": {
                        "failed_step": recorded,
                        "restored_step": self.step,
                        "steps_lost": recorded - self.step,
                        "reason": "crash",
                    },
                }
            )
        self._changed()

    def _restore_figures(self) -> None:
        if not self.last_frame:
            return
        try:
            last = json.loads(self.last_frame)
        except ValueError:
            self.last_frame = None
            return
        if last.get("step") == self.step:
            self.epoch = last["epoch"]
            self.loss = last["loss"]
            self.tokens_total = last["tokens_total"]

    def _changed(self) -> None:
        self._version += 1

    def _emit_event(self, e: dict[str, Any]) -> None:
        """An event raised outside a step: record it, keep it, send it as its own frame."""
        self.history.add_event(self.run_id, e)
        self.events.append(e)
        self._changed()
        self.hub.publish(Frame(json.dumps(e, separators=(",", ":"))))

    def _control_event(self, kind: str, message: str, **detail: Any) -> dict[str, Any]:
        e = {"type": "event", "kind": kind, "step": self.step, "message": message, "detail": detail}
        self._emit_event(e)
        return e

    def _record_state(self, payload: dict[str, Any], *, publish: bool = True) -> None:
        self.step = payload["step"]
        self.restarts = payload["restarts"]
        self.checkpoints = payload["checkpoints"]
        for e in payload["events"]:
            if publish:
                self._emit_event(e)
            else:
                self.history.add_event(self.run_id, e)
                self.events.append(e)
        self._changed()

    # --- what viewers are sent ------------------------------------------------------------

    @property
    def worker_alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    @property
    def n_gpus(self) -> int:
        return int(self.info["config"]["gpus"])

    def status(self) -> RunStatus:
        return RunStatus(
            state=self.state,  # type: ignore[arg-type]
            speed=self.speed,
            step=self.step,
            epoch=self.epoch,
            loss=self.loss,
            tokens_total=self.tokens_total,
            restarts=self.restarts,
            viewers=self.hub.count,
            run_id=self.run_id,
        )

    def hello_text(self, can_control: bool) -> str:
        text = self._hello_cache.get(can_control)
        if text is None:
            i = self.info
            text = HelloMsg(
                run_id=self.run_id,
                can_control=can_control,
                config=i["config"],
                topology=i["topology"],
                preset=i["preset"],
                n_params=i["n_params"],
                vocab_size=i["vocab_size"],
            ).model_dump_json()
            self._hello_cache[can_control] = text
        return text

    def snapshot_text(self) -> str:
        """Built at most once per change, however many viewers join in between."""
        key = (self._version, self.hub.count)
        cached = self._snapshot_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        history = [
            {"seq": s, "step": st, "loss": lo}
            for s, st, lo in downsample(self.points, HISTORY_POINTS)
        ]
        dumps = json.dumps
        text = (
            '{"type":"snapshot","status":'
            + self.status().model_dump_json()
            + ',"last_step":'
            + (self.last_frame or "null")
            + ',"history":'
            + dumps(history, separators=(",", ":"))
            + ',"events":'
            + dumps(list(self.events), separators=(",", ":"))
            + ',"checkpoints":'
            + dumps(self.checkpoints, separators=(",", ":"))
            + "}"
        )
        self._snapshot_cache = (key, text)  # type: ignore[assignment]
        return text

    # --- resting while nobody watches -----------------------------------------------------

    def _viewers_changed(self, count: int) -> None:
        self._changed()
        if count > 0 and self.state == "resting":
            self.state = "running"
            self._send_pace()
        if count == 0:
            self._arm_rest_timer()

    def _arm_rest_timer(self) -> None:
        if self._rest_timer:
            self._rest_timer.cancel()
        if self.settings.rest_after_s > 0 and self._loop is not None:
            self._rest_timer = self._loop.call_later(self.settings.rest_after_s, self._maybe_rest)

    def _maybe_rest(self) -> None:
        if self.hub.count == 0 and self.state == "running" and not self._stopping:
            self.state = "resting"
            self._changed()
            self._send_pace()

    # --- controls -------------------------------------------------------------------------

    async def control(self, ctl: Any) -> dict[str, Any]:
        """Apply a validated protocol Control. Raises ControlError with a clear message."""
        async with self._lock:
            if self._stopping:
                raise ControlError("unavailable", "the server is shutting down", 503)
            action = ctl.action
            if self.state == "resting" and action != "pause":
                # Someone is driving the run: wake it (it rests again if nobody watches).
                self.state = "running"
                self._send_pace()
                self._arm_rest_timer()
            events: list[dict[str, Any]] = []
            if action == "pause":
                if self.state != "paused":
                    self.state = "paused"
                    # Wait for a step in flight, so "paused at step N" is the last step seen.
                    await self._checked(("hold",))
                    events.append(self._control_event("paused", f"Paused at step {self.step}"))
            elif action == "resume":
                if self.state != "running":
                    self.state = "running"
                    self._send_pace()
                    events.append(self._control_event("resumed", f"Resumed at step {self.step}"))
            elif action == "speed":
                self.speed = ctl.value
                self._send_pace()
                label = ctl.value if isinstance(ctl.value, str) else f"{ctl.value:g} steps/s"
                events.append(
                    self._control_event("speed_changed", f"Speed set to {label}", speed=ctl.value)
                )
            elif action == "step":
                if self.state == "running":
                    raise ControlError("not_paused", "single steps work while paused", 409)
                await self._checked(("step_once",))
            elif action == "fail_gpu":
                if not 0 <= ctl.gpu < self.n_gpus:
                    raise ControlError(
                        "bad_gpu", f"gpu must be between 0 and {self.n_gpus - 1}, got {ctl.gpu}"
                    )
                payload = await self._checked(("fail_gpu", ctl.gpu))
                self._record_state(payload)
                events += payload["events"]
            elif action == "checkpoint_now":
                payload = await self._checked(("checkpoint_now",))
                self._record_state(payload)
                events += payload["events"]
            elif action == "reset":
                events.append(await self._reset(ctl.seed, ctl.preset))
            self._changed()
            return {"ok": True, "status": self.status().model_dump(), "events": events}

    async def _checked(self, msg: tuple[Any, ...]) -> dict[str, Any]:
        ok, payload = await self._request(msg)
        if not ok:
            raise ControlError("engine_error", str(payload), 500)
        return payload

    async def _reset(self, seed: int | None, preset: str | None) -> dict[str, Any]:
        if preset is not None and preset not in PRESETS:
            known = ", ".join(sorted(PRESETS))
            raise ControlError("bad_preset", f"unknown preset {preset!r} (known: {known})")
        old = RunConfig.from_dict(self.info["config"])
        changes: dict[str, Any] = {}
        if seed is not None:
            changes["seed"] = seed
        if preset is not None:
            changes["preset"] = preset
        config = old.with_(**changes)
        run_id = new_run_id()
        self.history.start_run(run_id, config.to_dict())
        info = await self._checked(("reset", config.to_dict(), run_id))
        old_run = self.run_id
        self._adopt(info, reset=True)
        event = self._control_event(
            "run_reset",
            f"Started a fresh run (seed {config.seed}, {config.preset})",
            run_id=run_id,
            previous_run_id=old_run,
            seed=config.seed,
            preset=config.preset,
        )
        # Everyone starts over together: a new hello (the preset may differ) and snapshot.
        snapshot = self.snapshot_text()
        self.hub.publish_each(lambda v: [self.hello_text(v.can_control), snapshot])
        return event


# --- the worker process ---------------------------------------------------------------------
# Runs in its own interpreter: nothing below touches the event loop or the hub.

# Events after which the list of checkpoints on disk has changed.
CHECKPOINT_KINDS = {"checkpoint_saved", "checkpoint_skipped", "restored"}


def event_dict(e: Event) -> dict[str, Any]:
    return {"type": "event", **asdict(e)}


def run_info(trainer: Trainer, run_id: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "config": trainer.config.to_dict(),
        "topology": trainer.topology.to_dict(),
        "preset": preset_info(trainer.config.preset),
        "n_params": int(trainer.n_params),
        "vocab_size": len(trainer.vocab),
        "step": int(trainer.step),
        "restarts": int(trainer.restarts),
        "startup_events": [event_dict(e) for e in trainer.startup_events],
        "checkpoints": trainer.checkpoints(),
    }


class Worker:
    def __init__(self, conn: Connection, spec: dict[str, Any]) -> None:
        self.conn = conn
        self.run_id: str = spec["run_id"]
        self.run_dir: str = spec["run_dir"]
        self.trainer = Trainer(
            RunConfig.from_dict(spec["config"]), self.run_dir, fresh=spec["fresh"]
        )
        self.running = False
        self.interval = 0.0
        self.last_start = 0.0
        self.closing = False

    def serve(self) -> None:
        self.conn.send(("ready", run_info(self.trainer, self.run_id)))
        while not self.closing:
            timeout: float | None = None
            if self.running:
                timeout = max(0.0, self.last_start + self.interval - time.monotonic())
            if self.conn.poll(timeout):
                self.handle(self.conn.recv())
                continue
            if self.running:
                self.do_step()

    def do_step(self) -> None:
        self.last_start = time.monotonic()
        report = self.trainer.train_step()
        body = StepFields.model_validate(report).model_dump_json()
        events = [event_dict(e) for e in report.events]
        figures = {
            "step": report.step,
            "epoch": report.epoch,
            "loss": report.loss,
            "grad_norm": report.grad_norm,
            "lr": report.lr,
            "tokens_total": report.tokens_total,
            "sim_step_s": report.sim_step_s,
            "wall_step_s": report.wall_step_s,
            "restarts": self.trainer.restarts,
        }
        ckpts = (
            self.trainer.checkpoints()
            if any(e.kind in CHECKPOINT_KINDS for e in report.events)
            else None
        )
        self.conn.send(("step", self.run_id, body, figures, events, ckpts))

    def handle(self, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "pace":
            self.running, self.interval = bool(msg[1]), float(msg[2])
            return
        req_id = msg[1]
        try:
            payload = self.request(kind, msg[2:])
        except Exception as exc:
            self.conn.send(("reply", req_id, False, str(exc) or exc.__class__.__name__))
            return
        self.conn.send(("reply", req_id, True, payload))

    def request(self, kind: str, args: tuple[Any, ...]) -> dict[str, Any]:
        t = self.trainer
        if kind == "hold":
            self.running = False
            return {"step": int(t.step)}
        if kind == "step_once":
            self.do_step()
            return {}
        if kind == "fail_gpu":
            events = t.fail_gpu(int(args[0]))
            return self.state([event_dict(e) for e in events])
        if kind == "checkpoint_now":
            return self.state([event_dict(t.checkpoint_now())])
        if kind == "reset":
            config, run_id = args
            t.close(final_checkpoint=False)
            # fresh=True: the old run's checkpoints must not leak into the new timeline.
            self.trainer = Trainer(RunConfig.from_dict(config), self.run_dir, fresh=True)
            self.run_id = run_id
            return run_info(self.trainer, run_id)
        if kind == "close":
            self.closing = True
            ev = t.close(final_checkpoint=True)
            return self.state([event_dict(ev)] if ev else [])
        raise ValueError(f"unknown request {kind!r}")

    def state(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        t = self.trainer
        return {
            "events": events,
            "step": int(t.step),
            "restarts": int(t.restarts),
            "checkpoints": t.checkpoints(),
        }


def worker_main(conn: Connection, spec: dict[str, Any]) -> None:
    # Ctrl+C reaches the whole process group; the server shuts the worker down itself,
    # after a final checkpoint, so the worker must not die first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        Worker(conn, spec).serve()
    except (EOFError, BrokenPipeError):
        pass  # the server went away; nothing left to tell
    except Exception:
        try:
            conn.send(("fatal", traceback.format_exc()))
        except Exception:
            pass
        raise
