"""The server's end of the pipe to the training worker: start it, talk to it, stop it.

`WorkerLink` spawns the worker process (app/run/worker.py), reads its messages in a thread of its
own (a blocking pipe read never touches the event loop) and hands each `Reply` to the request
waiting for it. What a step means and what to do when the worker dies are the runner's
business: it passes callbacks. The messages are described in app/run/pipe.py.

The reader thread is the run's only way in: one message it cannot read or one callback that
fails is logged and skipped, never allowed to end the thread.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing as mp
import os
import re
import signal
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from app.run.pipe import (
    Ask,
    Close,
    Fatal,
    Pace,
    Ready,
    Reply,
    Request,
    RunInfo,
    StepDiverged,
    StepReady,
    WorkerSpec,
    WorkerState,
)
from app.run.worker import worker_main

log = logging.getLogger("trainingrun.runner")

READY_TIMEOUT_S = 300.0  # building the data lake on a slow machine takes a while
REPLY_TIMEOUT_S = 120.0
CLOSE_TIMEOUT_S = 60.0
EXIT_WAIT_S = 2.0  # after the pipe closed, how long to wait for the worker's exit status
REASON_CHARS = 300
_MODULE_PATH = re.compile(r"^(?:\w+\.)+(?=\w+(?::|$))")
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class WorkerUnavailable(ConnectionError):
    """The worker is not running, so nothing can be sent to it."""


def last_line(text: str) -> str:
    """The last non-empty line of a traceback (the exception and its message), shortened,
    with the exception's module path left out: `RunDirError: run dir ... is not a folder`."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = _MODULE_PATH.sub("", lines[-1]) if lines else "unknown error"
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 3] + "..."


def exit_reason(exitcode: int | None) -> str:
    if exitcode is None:
        return "the training worker closed its pipe"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"the training worker was killed by {name}"
    return f"the training worker exited with code {exitcode}"


class WorkerLink:
    """One worker process at a time; `start` again after it died to replace it."""

    def __init__(
        self,
        *,
        on_step: Callable[[StepReady], None],
        on_gone: Callable[[], None],
        on_diverged: Callable[[StepDiverged], None] | None = None,
        target: Callable[..., Any] = worker_main,
    ) -> None:
        self._on_step = on_step  # called in the reader thread, in the order steps arrive
        self._on_gone = on_gone  # called in the event loop when the worker's pipe closes
        self._on_diverged = on_diverged  # called in the event loop
        self._target = target  # the worker process's entry point: (conn, spec, parent_pid)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proc: mp.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._reader: threading.Thread | None = None
        self._replies: dict[int, asyncio.Future[Reply]] = {}
        self._req_ids = itertools.count(1)
        self._ready: asyncio.Future[RunInfo] | None = None
        self._bad_messages = 0
        self.last_failure = ""  # why the latest worker stopped, in one line
        # What the reader saw as it ended (its pipe, the reason), before the event loop has
        # taken it in: health may ask in between.
        self._ended: tuple[Connection, str] | None = None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def down_reason(self) -> str:
        """Why the worker is not running (or cannot be heard), in one line: what its reader
        saw when it stopped, else (the reader has not seen the end yet) how the process
        exited."""
        if self.last_failure:
            return self.last_failure
        ended = self._ended
        if ended is not None and ended[0] is self._conn:
            return ended[1]
        if self._proc is not None and self._proc.exitcode is not None:
            return exit_reason(self._proc.exitcode)
        if self.alive and not self.reader_alive:
            return "the thread that reads from the training worker has stopped"
        return "the training worker is not running"

    @property
    def reader_alive(self) -> bool:
        """Whether the thread that reads the worker's messages is still running."""
        return self._reader is not None and self._reader.is_alive()

    @property
    def pid(self) -> int | None:
        """The worker process's id while it runs."""
        return self._proc.pid if self.alive and self._proc is not None else None

    async def start(self, spec: WorkerSpec) -> RunInfo:
        """Spawn a worker on `spec` and wait until it has opened the run."""
        self._loop = loop = asyncio.get_running_loop()
        old = self._proc
        if old is not None and old.is_alive():
            old.kill()  # one that never got ready: two workers must never share the folder
        # The model's matrices are small: a BLAS spreading each product over threads only
        # fights the server and the other processes for cores (measured 1 vs 28 steps/s on a
        # busy 2-core machine). The spawned worker inherits these; an explicit setting wins.
        for var in BLAS_THREAD_VARS:
            os.environ.setdefault(var, "1")
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe(duplex=True)
        self._ready = loop.create_future()
        # The worker asks to die with this process (Linux: the parent-death signal, sent when
        # the thread that started it ends; this runs in the event loop's thread, which lives
        # as long as the server).
        self._proc = proc = ctx.Process(
            target=self._target, args=(child, spec, os.getpid()), daemon=True
        )
        proc.start()
        child.close()
        self._conn = parent
        self._reader = threading.Thread(
            target=self._read, args=(parent, proc), name="worker-reader", daemon=True
        )
        self._reader.start()
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
        if not self.reader_alive:
            # Nobody would ever read the answer.
            raise WorkerUnavailable("the link to the training worker is broken")
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
            if self.reader_alive:
                reply = await self.request(Close(), timeout=CLOSE_TIMEOUT_S)
                if isinstance(reply.result, WorkerState):
                    state = reply.result
            else:
                # The answer cannot be read, but the worker still saves and exits.
                self.post(Request(next(self._req_ids), Close()))
                await asyncio.to_thread(self._proc.join, CLOSE_TIMEOUT_S)
        except Exception:
            log.exception("worker did not close cleanly")
        await asyncio.to_thread(self._proc.join, 10)
        if self._proc.is_alive():
            self._proc.terminate()
        return state

    # --- the reader thread and what it hands to the event loop ----------------------------

    def _read(self, conn: Connection, proc: mp.process.BaseProcess) -> None:
        loop = self._loop
        assert loop is not None
        fatal = ""
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                break
            except Exception:  # a message that does not unpickle; the next one may
                self._bad_message("could not read a message from the training worker")
                continue
            try:
                match msg:
                    case StepReady():
                        self._on_step(msg)
                    case Reply():
                        loop.call_soon_threadsafe(self._resolve, msg)
                    case Ready(info=info):
                        loop.call_soon_threadsafe(self._ready_arrived, info)
                    case StepDiverged():
                        if self._on_diverged is not None:
                            loop.call_soon_threadsafe(self._on_diverged, msg)
                    case Fatal(traceback=tb):
                        fatal = last_line(tb)
                        log.error("training worker failed:\n%s", tb)
                    case _:
                        raise TypeError(f"not a message from the worker: {msg!r}"[:REASON_CHARS])
            except Exception:
                self._bad_message("could not handle a message from the training worker")
        proc.join(EXIT_WAIT_S)
        reason = fatal or exit_reason(proc.exitcode)
        self._ended = (conn, reason)
        try:
            loop.call_soon_threadsafe(self._gone, conn, reason)
        except RuntimeError:
            pass  # the event loop is closed: the server has stopped

    def _bad_message(self, what: str) -> None:
        # Logged at the 1st, 2nd, 4th, 8th ... time: a flood of bad messages cannot flood the log.
        self._bad_messages += 1
        n = self._bad_messages
        if n & (n - 1) == 0:
            log.exception("%s (%d so far; the run goes on)", what, n)

    def _resolve(self, reply: Reply) -> None:
        fut = self._replies.pop(reply.req_id, None)
        if fut is not None and not fut.done():
            fut.set_result(reply)

    def _ready_arrived(self, info: RunInfo) -> None:
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(info)

    def _gone(self, conn: Connection, reason: str) -> None:
        if conn is not self._conn:
            return  # a worker that was already replaced
        self.last_failure = reason
        for req_id, fut in self._replies.items():
            if not fut.done():
                fut.set_result(Reply(req_id, error="the training worker stopped"))
        self._replies.clear()
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(
                RuntimeError(f"the training worker stopped while starting: {reason}")
            )
        self._on_gone()
