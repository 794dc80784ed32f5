"""Fan-out to viewers: each message is serialised once and the same text goes to everyone.

Every viewer has its own small queue and its own sender task, so a slow or stalled viewer
only ever delays itself. Steps are coalesced: a viewer holds at most one unsent step, and
when a newer one arrives the older one is dropped but the events it carried are kept as
separate `event` frames, so a viewer sees the latest state plus every event in between.
Steps go out at most `max_fps` times a second per viewer, and all viewers together share a
budget of `budget_fps` step frames a second (with 500 viewers each still gets several a
second), so the cost of fan-out stays bounded however many people watch and never eats the
trainer's share of the machine. Events and errors go at once.
A viewer whose queue still overflows (it has not read for a long time) is disconnected; it
reconnects and gets a fresh snapshot, which is cheaper than an unbounded backlog.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger("trainingrun.hub")


@dataclass(eq=False)
class Frame:
    """A message serialised once. A step frame remembers its events as ready-made frames."""

    text: str
    is_step: bool = False
    events: list[Frame] = field(default_factory=list)


Send = Callable[[str], Awaitable[None]]


class Viewer:
    def __init__(
        self,
        send: Send,
        *,
        can_control: bool,
        min_gap: Callable[[], float],
        queue_limit: int,
        send_timeout_s: float,
    ) -> None:
        self._send = send
        self.can_control = can_control
        self.key: str | None = None  # the page's own key (a run of its own, app/web/runs.py)
        self._min_gap = min_gap
        self._queue_limit = queue_limit
        self._send_timeout_s = send_timeout_s
        self._queue: deque[Frame] = deque()
        self._wake = asyncio.Event()
        self._last_step_at = 0.0
        self.closed = asyncio.Event()  # set when the viewer is dropped or its sender fails
        self.close_reason = ""
        self.frames_sent = 0
        self.steps_dropped = 0
        self._task: asyncio.Task[None] | None = None

    # Called from the event loop only (the hub), never concurrently.
    def push(self, frame: Frame) -> None:
        if self.closed.is_set():
            return
        if frame.is_step:
            self._drop_pending_step()
        self._queue.append(frame)
        if len(self._queue) > self._queue_limit:
            self.drop("too slow: the viewer stopped reading")
            return
        self._wake.set()

    def _drop_pending_step(self) -> None:
        # At most one step waits; it is usually at or near the tail.
        for i in range(len(self._queue) - 1, -1, -1):
            old = self._queue[i]
            if old.is_step:
                del self._queue[i]
                for j, ev in enumerate(old.events):
                    self._queue.insert(i + j, ev)
                self.steps_dropped += 1
                return

    def forget_queued(self) -> None:
        """Drop whatever is still queued (the run it came from is no longer watched)."""
        self._queue.clear()

    def retarget(self, min_gap: Callable[[], float]) -> None:
        self._min_gap = min_gap

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    def drop(self, reason: str) -> None:
        if not self.closed.is_set():
            self.close_reason = reason
            self.closed.set()
            self._queue.clear()
            self._wake.set()

    async def stop(self) -> None:
        self.drop(self.close_reason or "closed")
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _run(self) -> None:
        try:
            while not self.closed.is_set():
                await self._wake.wait()
                self._wake.clear()
                while self._queue and not self.closed.is_set():
                    head = self._queue[0]
                    if head.is_step:
                        wait = self._last_step_at + self._min_gap() - time.monotonic()
                        if wait > 0:
                            # While we wait, a newer step may replace this one: look again.
                            await asyncio.sleep(wait)
                            continue
                        self._last_step_at = time.monotonic()
                    self._queue.popleft()
                    # asyncio.timeout is a timer, not a task per send as wait_for would be.
                    async with asyncio.timeout(self._send_timeout_s):
                        await self._send(head.text)
                    self.frames_sent += 1
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            self.drop("too slow: a send did not complete in time")
        except Exception as exc:  # the socket went away under us
            self.drop(f"send failed: {exc.__class__.__name__}")


class Hub:
    def __init__(
        self,
        *,
        max_fps: float,
        queue_limit: int,
        send_timeout_s: float,
        budget_fps: float = 3000.0,
    ) -> None:
        self.max_fps = max_fps
        self.budget_fps = budget_fps
        self.queue_limit = queue_limit
        self.send_timeout_s = send_timeout_s
        self._viewers: set[Viewer] = set()
        self.frames_published = 0
        self.on_count_change: Callable[[int], None] | None = None

    def may_control(self, viewer: Viewer) -> bool:
        """May this viewer control this hub's run (what its hello says)? A page's own run
        lets its owner too (app/web/runs.py sets that hub's rule)."""
        return viewer.can_control

    def step_gap(self) -> float:
        """Seconds between two step frames to one viewer, now."""
        return max(1.0 / self.max_fps, len(self._viewers) / self.budget_fps)

    @property
    def count(self) -> int:
        return len(self._viewers)

    def viewers(self) -> list[Viewer]:
        """The viewers connected now (a copy: safe to iterate while they come and go)."""
        return list(self._viewers)

    def add(self, send: Send, *, can_control: bool, first: Callable[[], list[str]]) -> Viewer:
        """Register a viewer; `first()` (hello, snapshot) is queued before anything else.

        Runs without awaiting, so no step can slip in between the snapshot and the stream;
        `first` is called after the viewer is counted, so the snapshot counts it too.
        """
        viewer = Viewer(
            send,
            can_control=can_control,
            min_gap=self.step_gap,
            queue_limit=self.queue_limit,
            send_timeout_s=self.send_timeout_s,
        )
        self._viewers.add(viewer)
        if self.on_count_change:
            self.on_count_change(len(self._viewers))
        for text in first():
            viewer.push(Frame(text))
        viewer.start()
        return viewer

    def hand_over(self, viewer: Viewer, to: Hub, first: Callable[[], list[str]]) -> None:
        """Move a viewer to another hub (the page now watches another run) without closing
        it: what it had not been sent of this hub's run is dropped, then `first()` (the new
        run's hello and snapshot) leads everything the other hub publishes."""
        if to is self or viewer not in self._viewers:
            return
        self._viewers.discard(viewer)
        if self.on_count_change:
            self.on_count_change(len(self._viewers))
        viewer.forget_queued()
        viewer.retarget(to.step_gap)
        to._viewers.add(viewer)
        if to.on_count_change:
            to.on_count_change(len(to._viewers))
        for text in first():
            viewer.push(Frame(text))

    async def remove(self, viewer: Viewer) -> None:
        if viewer in self._viewers:
            self._viewers.discard(viewer)
            if self.on_count_change:
                self.on_count_change(len(self._viewers))
        await viewer.stop()

    def publish(self, frame: Frame) -> None:
        self.frames_published += 1
        for v in self._viewers:
            v.push(frame)

    def publish_each(self, make: Callable[[Viewer], list[str]]) -> None:
        """Send frames that differ per viewer (a new hello says whether it may control)."""
        for v in self._viewers:
            for text in make(v):
                v.push(Frame(text))

    async def close_all(self) -> None:
        for v in list(self._viewers):
            await self.remove(v)
