"""A real runner in the test's own event loop, with a real (tiny) worker process, a hub that
keeps every frame, and worker entry points that misbehave on purpose.

The entry points are module-level so a spawned worker process can import them by name.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.config import RunConfig
from app.run.choice import RunnerOptions
from app.run.pipe import Close, Ready, Reply, Request, RunInfo, StepFigures, StepReady, WorkerSpec
from app.run.worker import Worker
from app.web.hub import Frame, Hub

# Small enough that opening the run and a step take a fraction of a second.
TINY = RunConfig(
    gpus=2,
    servers=1,
    batch_size=4,
    corpus_stories=40,
    n_layer=1,
    n_head=2,
    n_embd=16,
    checkpoint_every=0,
)


def options(run_dir: Path, config: RunConfig = TINY, speed: str | float = 50.0) -> RunnerOptions:
    return RunnerOptions(
        run_dir=run_dir,
        config=config,
        explicit=frozenset(),
        fresh=False,
        speed=speed,
        paused=False,
        lesson_interval_s=2.0,
        rest_after_s=0,
    )


class RecordingHub(Hub):
    """Keeps every frame published, with the time it came."""

    def __init__(self) -> None:
        super().__init__(max_fps=20, queue_limit=64, send_timeout_s=5)
        self.frames: list[tuple[float, dict[str, Any]]] = []

    def publish(self, frame: Frame) -> None:
        self.frames.append((time.monotonic(), json.loads(frame.text)))
        for ev in frame.events:
            self.frames.append((time.monotonic(), json.loads(ev.text)))

    def steps(self) -> list[dict[str, Any]]:
        return [m for _, m in self.frames if m["type"] == "step"]

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [m for _, m in self.frames if m["type"] == "event" and m["kind"] == kind]

    def timed_events(self, kind: str) -> list[tuple[float, dict[str, Any]]]:
        return [(t, m) for t, m in self.frames if m["type"] == "event" and m["kind"] == kind]


async def until(pred: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    """Poll `pred` in the event loop until it is truthy; its value, or AssertionError."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = pred()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what or pred}")


# --- worker entry points ------------------------------------------------------------------


class PoisonedWorker(Worker):
    """A worker whose weights are not-a-number from the start: every step diverges until a
    reset opens a fresh trainer."""

    def __init__(self, conn: Connection, spec: WorkerSpec, parent_pid: int | None = None) -> None:
        super().__init__(conn, spec, parent_pid)
        for arr in self.trainer.engine.params.values():
            arr[...] = np.nan


def poisoned_worker_main(conn: Connection, spec: WorkerSpec, parent_pid: int | None = None) -> None:
    PoisonedWorker(conn, spec, parent_pid).serve()


def fake_step(run_id: str, step: int) -> StepReady:
    figures = StepFigures(
        step=step,
        epoch=0,
        loss=2.0,
        grad_norm=1.0,
        lr=0.01,
        tokens_total=step * 8,
        sim_step_s=0.1,
        wall_step_s=0.01,
        restarts=0,
    )
    return StepReady(run_id=run_id, body="{}", figures=figures, trace=b"")


def scripted_worker_main(conn: Connection, spec: WorkerSpec, parent_pid: int | None = None) -> None:
    """Opens nothing: says it is ready, then sends a step, bytes that are no pickle, an object
    that is no message, two more steps, and answers Close."""
    info = RunInfo(
        run_id=spec.run_id,
        config=spec.config,
        topology={},
        preset={},
        n_params=0,
        vocab_size=0,
        step=0,
        restarts=0,
        startup_events=[],
        checkpoints=[],
    )
    conn.send(Ready(info))
    conn.send(fake_step(spec.run_id, 1))
    conn.send_bytes(b"\x80\x05not a pickle")
    conn.send({"not": "a message"})
    conn.send(fake_step(spec.run_id, 2))
    conn.send(fake_step(spec.run_id, 3))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if isinstance(msg, Request) and isinstance(msg.ask, Close):
            conn.send(Reply(msg.req_id))
            return
