"""The server's end of the pipe to the training worker: start it, talk to it, stop it.

`WorkerLink` spawns the worker process (app/worker.py), reads its messages in a thread of its
own (a blocking pipe read never touches the event loop) and hands each `Reply` to the request
waiting for it. What a step means and what to do when the worker dies are the runner's
business: it passes callbacks. The messages are described in app/pipe.py.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing as mp
import os
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection

from app.pipe import (
    Ask,
    Close,
    Fatal,
    Pace,
    Ready,
    Reply,
    Request,
    RunInfo,
    StepReady,
    WorkerSpec,
    WorkerState,
)
from app.worker import worker_main

log = logging.getLogger("trainingrun.runner")

READY_TIMEOUT_S = 300.0  # building the data lake on a slow machine takes a while
REPLY_TIMEOUT_S = 120.0
CLOSE_TIMEOUT_S = 60.0
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class WorkerUnavailable(ConnectionError):
    """The worker is not running, so nothing can be sent to it."""


class WorkerLink:
    """One worker process at a time; `start` again after it died to replace it."""

    def __init__(
        self, *, on_step: Callable[[StepReady], None], on_gone: Callable[[], None]
    ) -> None:
        self._on_step = on_step  # called in the reader thread, in the order steps arrive
        self._on_gone = on_gone  # called in the event loop when the worker's pipe closes
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proc: mp.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._replies: dict[int, asyncio.Future[Reply]] = {}
        self._req_ids = itertools.count(1)
        self._ready: asyncio.Future[RunInfo] | None = None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    async def start(self, spec: WorkerSpec) -> RunInfo:
        """Spawn a worker on `spec` and wait until it has opened the run."""
        self._loop = loop = asyncio.get_running_loop()
        # The model's matrices are small: a BLAS spreading each product over threads only
        # fights the server and the other processes for cores (measured 1 vs 28 steps/s on a
        # busy 2-core machine). The spawned worker inherits these; an explicit setting wins.
        for var in BLAS_THREAD_VARS:
            os.environ.setdefault(var, "1")
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe(duplex=True)
        self._ready = loop.create_future()
        self._proc = ctx.Process(target=worker_main, args=(child, spec), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        threading.Thread(target=self._read, args=(parent,), daemon=True).start()
        return await asyncio.wait_for(self._ready, READY_TIMEOUT_S)

    def post(self, msg: Pace | Request) -> None:
        if self._conn is None:
            raise WorkerUnavailable("the training worker is not running")
        try:
            self._conn.send(msg)
        except (OSError, ValueError) as exc:
            raise WorkerUnavailable("the training worker is not running") from exc

    async def request(self, ask: Ask, timeout: float = REPLY_TIMEOUT_S) -> Reply:
        assert self._loop is not None
        req_id = next(self._req_ids)
        fut: asyncio.Future[Reply] = self._loop.create_future()
        self._replies[req_id] = fut
        self.post(Request(req_id, ask))
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._replies.pop(req_id, None)

    async def close(self) -> WorkerState | None:
        """A final checkpoint, then the worker exits; returns where the run stands then."""
        if self._proc is None or not self._proc.is_alive():
            return None
        state = None
        try:
            self.post(Pace(running=False, interval_s=0.0))
            reply = await self.request(Close(), timeout=CLOSE_TIMEOUT_S)
            if isinstance(reply.result, WorkerState):
                state = reply.result
        except Exception:
            log.exception("worker did not close cleanly")
        await asyncio.to_thread(self._proc.join, 10)
        if self._proc.is_alive():
            self._proc.terminate()
        return state

    # --- the reader thread and what it hands to the event loop ----------------------------

    def _read(self, conn: Connection) -> None:
        loop = self._loop
        assert loop is not None
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                loop.call_soon_threadsafe(self._gone, conn)
                return
            match msg:
                case StepReady():
                    self._on_step(msg)
                case Reply():
                    loop.call_soon_threadsafe(self._resolve, msg)
                case Ready(info=info):
                    loop.call_soon_threadsafe(self._ready_arrived, info)
                case Fatal(traceback=tb):
                    log.error("training worker failed:\n%s", tb)
                case _:
                    log.error("unexpected message from the training worker: %r", msg)

    def _resolve(self, reply: Reply) -> None:
        fut = self._replies.pop(reply.req_id, None)
        if fut is not None and not fut.done():
            fut.set_result(reply)

    def _ready_arrived(self, info: RunInfo) -> None:
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(info)

    def _gone(self, conn: Connection) -> None:
        if conn is not self._conn:
            return  # a worker that was already replaced
        for req_id, fut in self._replies.items():
            if not fut.done():
                fut.set_result(Reply(req_id, error="the training worker stopped"))
        self._replies.clear()
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(RuntimeError("the training worker stopped while starting"))
        self._on_gone()
