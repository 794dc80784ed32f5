"""What viewers see of the run, and the texts that show it to them: hello, snapshot, step.

`RunView` keeps the run's visible state (its figures, loss history, recent events,
checkpoints and latest step frame) and builds the `hello` and `snapshot` texts at most once
per change, however many viewers join in between. Every text comes from the protocol's
models (app/protocol.py), the one serialiser. Two fast paths only splice texts those models
made: a step's body, serialised once in the worker, gets `StepMsg`'s own fields (seq,
sent_at) put in front, and a snapshot carries the latest step frame as it was sent.

Nothing here grows with the length of the run: the loss history is thinned to at most
`POINTS_KEPT` points (`LossPoints`), the events to the latest `RECENT_EVENTS`.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Iterable, Iterator

from pydantic import TypeAdapter

from app.engine.config import RunConfig
from app.protocol import (
    CLASS_RUN,
    CheckpointMsg,
    EventMsg,
    HelloMsg,
    HistoryPoint,
    RunState,
    RunStatus,
    SnapshotMsg,
    StepFields,
    StepMsg,
)
from app.run.events import restored_after_unclean_stop
from app.run.history import History
from app.run.pipe import RunInfo, StepReady, WorkerState

HISTORY_POINTS = 2000  # most loss points a snapshot carries
RECENT_EVENTS = 200
POINTS_KEPT = 20_000  # most loss points kept in memory (about 4 MB), spanning the whole run

log = logging.getLogger("trainingrun.runner")

# The fields a `step` frame has beyond the body the worker serialised (type, seq, sent_at).
STEP_OWN_FIELDS = frozenset(StepMsg.model_fields) - frozenset(StepFields.model_fields)
# Where a snapshot built for no viewers says so (the first "viewers" key: the status's).
_NO_VIEWERS = '"viewers":0'
# How a snapshot without a step says so; no other key in a snapshot is named last_step.
_NO_LAST_STEP = '"last_step":null'
_HISTORY = TypeAdapter(list[HistoryPoint])  # twice as fast as a model per point


def downsample(points: list[tuple[int, int, float]], limit: int) -> list[tuple[int, int, float]]:
    """Evenly spaced points, always keeping the first and the latest."""
    n = len(points)
    if n <= limit:
        return points
    idx = sorted({round(i * (n - 1) / (limit - 1)) for i in range(limit)})
    return [points[i] for i in idx]


Point = tuple[int, int, float]  # (seq, step, loss)


class LossPoints:
    """A run's loss points in seq order, at most `cap` of them, evenly spread over the run.

    Every `stride`-th point is kept, counting from the run's first; when more than `cap` are
    kept, every other one goes and the stride doubles. The latest point is always there too,
    so the history spans from the first step to the latest, and a rollback's branch (steps
    going down while seq goes up) thins like the rest instead of vanishing.
    """

    def __init__(self, points: Iterable[Point] = (), cap: int | None = None) -> None:
        self.cap = POINTS_KEPT if cap is None else cap
        if self.cap < 3:
            raise ValueError("keep at least three points")
        self._kept: list[Point] = []
        self._stride = 1
        self._count = 0  # points seen
        self._latest: Point | None = None  # the newest, when it is not a kept one
        for p in points:
            self.append(p)

    def append(self, point: Point) -> None:
        if self._count % self._stride == 0:
            self._kept.append(point)
            # One slot stays free for the latest point.
            if len(self._kept) > self.cap - 1:
                self._kept = self._kept[::2]
                self._stride *= 2
        self._latest = None if self._kept[-1] is point else point
        self._count += 1

    def __len__(self) -> int:
        return len(self._kept) + (self._latest is not None)

    def __iter__(self) -> Iterator[Point]:
        yield from self._kept
        if self._latest is not None:
            yield self._latest

    def __bool__(self) -> bool:
        return self._count > 0

    def last(self) -> Point | None:
        if self._latest is not None:
            return self._latest
        return self._kept[-1] if self._kept else None

    def to_list(self) -> list[Point]:
        return list(self)


def step_frame_text(body: str, seq: int, sent_at: float) -> str:
    """A `step` frame from the worker's `StepFields` JSON: StepMsg's own fields go in front."""
    head = StepMsg.model_construct(seq=seq, sent_at=sent_at).model_dump_json(
        include=STEP_OWN_FIELDS
    )
    return head[:-1] + "," + body[1:]


def snapshot_text(
    status: RunStatus,
    last_step: str | None,
    history: list[HistoryPoint],
    events: list[EventMsg],
    checkpoints: list[CheckpointMsg],
) -> str:
    """A `snapshot`, with `last_step` (a step frame's text, or None) carried as it is."""
    text = SnapshotMsg(
        status=status, last_step=None, history=history, events=events, checkpoints=checkpoints
    ).model_dump_json()
    if last_step is None:
        return text
    head, _, tail = text.partition(_NO_LAST_STEP)
    return f'{head}"last_step":{last_step}{tail}'


class RunView:
    """The run as viewers see it; the runner feeds it, in the event loop only."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.watching = CLASS_RUN  # which of the server's runs this is (app/web/runs.py)
        self.info: RunInfo | None = None
        self.run_id = ""
        self.step = 0
        self.epoch = 0
        self.loss: float | None = None
        self.tokens_total = 0
        self.restarts = 0
        self.points = LossPoints()
        self.events: deque[EventMsg] = deque(maxlen=RECENT_EVENTS)
        self.checkpoints: list[CheckpointMsg] = []
        self.last_frame: str | None = None
        self._version = 0
        # (version and status without its count of viewers, text before and after the
        # count, the text for the latest count)
        self._snapshot_cache: tuple[tuple[int, RunStatus], str, str, dict[int, str]] | None = None
        self._history_cache: tuple[tuple[int, int, float] | None, list[HistoryPoint]] = (None, [])
        self._hello_cache: dict[bool, str] = {}

    @property
    def config(self) -> RunConfig:
        assert self.info is not None, "no run adopted yet"
        return RunConfig.from_dict(self.info.config)

    def changed(self) -> None:
        self._version += 1

    def adopt(
        self, info: RunInfo, *, reset: bool, unclean: bool = False, seq: int = 0
    ) -> list[EventMsg]:
        """Take on a run the worker has just opened (at start, after a crash, on reset).

        `unclean`: the run's last process did not stop cleanly (a kill, a crash). `seq`: the
        record's latest, for a step the worker hands over with the run (`info.last_body`).
        Returns the run's startup events, to be recorded and announced.
        """
        self.info = info
        self.run_id = info.run_id
        self.step = info.step
        self.restarts = info.restarts
        self.checkpoints = info.checkpoints
        self._hello_cache.clear()
        if reset:
            self.points, self.last_frame = LossPoints(), None
            self.events.clear()
            self.epoch, self.loss, self.tokens_total = 0, None, 0
        else:
            self.points = LossPoints(self.history.each_loss_point(self.run_id))
            self.events = deque(
                (
                    EventMsg.model_validate(e)
                    for e in self.history.events(self.run_id, RECENT_EVENTS)
                ),
                RECENT_EVENTS,
            )
            current = self.history.current_run()
            if self.last_frame is None and current and current.run_id == self.run_id:
                self.last_frame = current.last_frame
            if self.last_frame is None and info.last_body is not None:
                self.last_frame = step_frame_text(info.last_body, seq, round(time.time(), 6))
            self._restore_figures()
        self.changed()
        events = list(info.startup_events)
        recorded = self.history.last_step(self.run_id)
        if recorded is None or reset or (recorded <= self.step and not unclean):
            return events
        # The process stopped without finishing cleanly: say so, and how much is redone
        # (nothing, when it happened to die just after a checkpoint it had recorded).
        recorded = max(recorded, self.step)
        if any(e.kind == "restored" for e in events):
            crash = restored_after_unclean_stop(self.step, recorded, from_checkpoint=True)
            return [crash if e.kind == "restored" else e for e in events]
        return [*events, restored_after_unclean_stop(self.step, recorded, from_checkpoint=False)]

    def _restore_figures(self) -> None:
        """Epoch, loss and tokens of the step the run resumes at, from its last frame."""
        if not self.last_frame:
            return
        # Only the figures are read: a frame stored by an older version still shows.
        try:
            last = json.loads(self.last_frame)
        except ValueError:
            self.last_frame = None
            return
        if last.get("step") == self.step:
            self.epoch, self.loss, self.tokens_total = (
                last["epoch"],
                last["loss"],
                last["tokens_total"],
            )

    def take_step(self, seq: int, msg: StepReady, frame_text: str) -> bool:
        """Show a recorded step; False when it belongs to a run that was just reset."""
        if msg.run_id != self.run_id:
            return False
        f = msg.figures
        self.step, self.epoch, self.loss = f.step, f.epoch, f.loss
        self.tokens_total, self.restarts = f.tokens_total, f.restarts
        self.points.append((seq, f.step, f.loss))
        self.events.extend(msg.events)
        if msg.checkpoints is not None:
            self.checkpoints = msg.checkpoints
        self.last_frame = frame_text
        self.changed()
        return True

    def take_state(self, state: WorkerState) -> None:
        self.step, self.restarts, self.checkpoints = state.step, state.restarts, state.checkpoints
        self.changed()

    def record_event(self, e: EventMsg) -> None:
        """An event raised outside a step: record it in the history and keep it.

        Viewers still hear of it when the history cannot store it (a full disk is often
        what the event is about)."""
        try:
            self.history.add_event(self.run_id, e.model_dump())
        except Exception as exc:
            log.error("could not record the %s event: %s: %s", e.kind, exc.__class__.__name__, exc)
        self.events.append(e)
        self.changed()

    # --- texts ----------------------------------------------------------------------------

    def status(self, state: RunState, speed: str | float, viewers: int) -> RunStatus:
        return RunStatus(
            state=state,
            speed=speed,
            step=self.step,
            epoch=self.epoch,
            loss=self.loss,
            tokens_total=self.tokens_total,
            restarts=self.restarts,
            viewers=viewers,
            run_id=self.run_id,
        )

    def hello_text(self, can_control: bool) -> str:
        text = self._hello_cache.get(can_control)
        if text is None:
            i = self.info
            assert i is not None, "no run adopted yet"
            text = HelloMsg(
                run_id=self.run_id,
                watching=self.watching,
                can_control=can_control,
                config=i.config,
                topology=i.topology,
                preset=i.preset,
                n_params=i.n_params,
                vocab_size=i.vocab_size,
                plan=i.plan,
                roles=i.roles,
                recording=i.source,
            ).model_dump_json()
            self._hello_cache[can_control] = text
        return text

    def snapshot_text(self, status: RunStatus) -> str:
        """Built at most once per change, however many viewers join in between: the count
        of viewers, which every join and leave changes, is spliced into the text built."""
        key = (self._version, status.model_copy(update={"viewers": 0}))
        cached = self._snapshot_cache
        if cached is None or cached[0] != key:
            text = snapshot_text(
                key[1], self.last_frame, self._history(), list(self.events), self.checkpoints
            )
            # The status comes first in a snapshot, so this is its count, not an event's.
            head, found, tail = text.partition(_NO_VIEWERS)
            assert found, "a snapshot's status carries the count of viewers"
            cached = self._snapshot_cache = (key, head, tail, {})
        _, head, tail, by_count = cached
        text = by_count.get(status.viewers)
        if text is None:
            by_count.clear()  # only the latest count is asked for again
            text = by_count[status.viewers] = f'{head}"viewers":{status.viewers}{tail}'
        return text

    def _history(self) -> list[HistoryPoint]:
        """The downsampled loss history, rebuilt only when a step came in: every viewer who
        joins changes the status, not the history."""
        # seq only ever goes up, so the latest point tells whether anything changed.
        latest = self.points.last()
        if self._history_cache[0] != latest:
            shown = downsample(self.points.to_list(), HISTORY_POINTS)
            points = [{"seq": s, "step": st, "loss": lo} for s, st, lo in shown]
            self._history_cache = (latest, _HISTORY.validate_python(points))
        return self._history_cache[1]
