"""Playing a recording (app/run/recording.py) as a run: a worker process that speaks the
training worker's pipe (app/run/pipe.py) but sends recorded steps instead of computing them.

The runner, the record, the hub and the page cannot tell a played step from a computed one,
except that the hello says the run is a recording (RunInfo.source), which the page shows. It
plays at the runner's pace (never faster than `MIN_INTERVAL_S` a step, so "as fast as it
goes" stays watchable), pauses, steps once, and starts over from its first step on a reset of
the same config. What a recording cannot do (fail a GPU, inject a fault, save a checkpoint,
a run of another config) is refused with a reason. At its last step it stops, and says so.
"""

from __future__ import annotations

import dataclasses
import json
import time
from multiprocessing.connection import Connection
from typing import Any

from app.engine.config import RunConfig
from app.protocol import EventMsg
from app.run import pipe
from app.run.pipe import RunInfo, StepReady, WorkerSpec, WorkerState
from app.run.recording import Recording, read_recording
from app.run.worker import PacedServer, run_guarded

MIN_INTERVAL_S = 0.2  # at most five played steps a second


def recording_ended(step: int, last: int) -> EventMsg:
    return EventMsg(
        kind="recording_ended",
        step=step,
        message=f"The recording ends here, at step {last}: reset the run to play it again",
        detail={"last_step": last},
    )


class Replayer(PacedServer):
    ANSWERED = (ValueError,)

    def __init__(self, conn: Connection, spec: WorkerSpec, rec: Recording) -> None:
        super().__init__(conn, spec.run_id, interval=1.0)
        self.rec = rec
        self.wanted = False  # the runner's pace says run (the end of the recording stops it)
        # Where to start: the step the record reached (a restart), else the beginning.
        done = 0 if spec.fresh else (spec.resume_at_most or 0)
        self.pos = sum(1 for s in rec.steps if s.figures.step <= done)

    @property
    def step(self) -> int:
        """The step the run stands at: the last one played, or where the recording opened."""
        return self.rec.steps[self.pos - 1].figures.step if self.pos else self.rec.info.step

    def hello(self) -> RunInfo:
        return self.info()

    def info(self) -> RunInfo:
        first = self.pos == 0
        return dataclasses.replace(
            self.rec.info,
            run_id=self.run_id,
            step=self.step,
            startup_events=self.rec.info.startup_events if first else [],
            checkpoints=[],  # the recorded run's checkpoints are not on this disk
            source={"kind": "recording", **self.rec.meta.describe()},
            last_body=self.rec.steps[self.pos - 1].body if self.pos else None,
        )

    def state(self, events: list[EventMsg] | None = None) -> WorkerState:
        return WorkerState(events=events or [], step=self.step, restarts=0, checkpoints=[])

    def tick(self) -> bool:
        self.play()
        return True

    def play(self) -> None:
        self.last_start = time.monotonic()
        if self.pos >= len(self.rec.steps):
            self.running = False
            return
        msg = self.rec.steps[self.pos]
        self.pos += 1
        events, body = list(msg.events), msg.body
        if self.pos == len(self.rec.steps):
            end = recording_ended(msg.figures.step, msg.figures.step)
            events.append(end)
            # A step's events travel in its body too (StepFields.events).
            fields = json.loads(body)
            fields["events"] = [*fields.get("events", []), end.model_dump()]
            body = json.dumps(fields, separators=(",", ":"))
            self.running = False
        self.conn.send(
            StepReady(
                run_id=self.run_id,
                body=body,
                figures=msg.figures,
                trace=msg.trace,
                events=events,
                checkpoints=None,
                probe=msg.probe,
            )
        )

    def pace(self, running: bool, interval_s: float) -> None:
        self.wanted = running
        self.running = running and self.pos < len(self.rec.steps)
        self.interval = max(MIN_INTERVAL_S, interval_s)

    def answer(self, ask: Any) -> RunInfo | WorkerState | None:
        match ask:
            case pipe.Hold():
                self.running = self.wanted = False
                return None
            case pipe.StepOnce():
                if self.pos >= len(self.rec.steps):
                    raise ValueError(
                        f"the recording ends at step {self.step}: reset the run to play it again"
                    )
                self.play()
                return None
            case pipe.Reset(config=config, run_id=run_id):
                same = RunConfig.from_dict(config).to_dict() == self.rec.meta.config
                if not same:
                    raise ValueError(
                        "this run plays a recording: it can start over, but not as another run"
                    )
                self.run_id, self.pos = run_id, 0
                self.running = self.wanted
                # The first step a pace after the answer: the runner takes the new run first.
                self.last_start = time.monotonic()
                return self.info()
            case pipe.Close():
                self.closing = True
                return self.state()
            case pipe.FailGpu() | pipe.InjectFault() | pipe.CheckpointNow():
                raise ValueError(
                    "this run plays a recording of a real run: what happened in it cannot be "
                    "changed (the class run can fail a GPU)"
                )
        raise TypeError(f"not a request: {ask!r}")


def replay_main(
    path: str, conn: Connection, spec: WorkerSpec, parent_pid: int | None = None
) -> None:
    """The replay process's entry point (functools.partial(replay_main, path) is the
    runner's worker target)."""
    run_guarded(conn, parent_pid, lambda: Replayer(conn, spec, read_recording(path)).serve())
