"""Recordings of real runs of this engine, kept to be played back (app/run/replay.py).

A heavy run (the story's 64-GPU team) takes a 2-core laptop seconds a step; played back from a
recording of a real run of the same config it goes at the pace a page needs, and every number
it shows is one the engine really computed. A recording is one gzip file of JSON lines:

    {"format": 1, "meta": {...}, "info": {...}}      what it is, and the run as it opened
    {"run_id": ..., "body": ..., "figures": ..., "trace": <base64>, "events": [...], ...}
    ...                                               one line per step, in order

It lives in `<run dir>/recordings/<ref>-<key>.rec.gz`, where `ref` names the run
("one-gpu.team64") and `key` is a hash of its full config, so a recording is only ever
played for the config it was made with. Written whole, to a temporary file renamed into
place: a recording is either complete or absent.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import gzip
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app import __version__
from app.protocol import CheckpointMsg, EventMsg
from app.run.pipe import RunInfo, StepFigures, StepReady

FORMAT = 1
RECORDINGS_DIR = "recordings"
SUFFIX = ".rec.gz"


class RecordingError(Exception):
    """A recording that cannot be read: missing, damaged, or of another format."""


@dataclass(frozen=True)
class RecordingMeta:
    ref: str  # the run it is of: "<story>.<run>"
    config: dict[str, Any]  # RunConfig.to_dict() of the recorded run
    steps: int  # steps recorded
    first_step: int  # the step the first recorded step brought the run to
    made_at: str  # ISO date and time (UTC)
    made_with: str  # how: "trainingrun record", or "recorded while it was first watched"
    version: str = __version__  # the version of this program that recorded it

    def describe(self) -> dict[str, Any]:
        """What a page is told of it (protocol RecordingMsg)."""
        return {
            "ref": self.ref,
            "steps": self.steps,
            "first_step": self.first_step,
            "last_step": self.first_step + self.steps - 1,
            "made_at": self.made_at,
            "made_with": self.made_with,
        }


@dataclass(frozen=True)
class Recording:
    meta: RecordingMeta
    info: RunInfo
    steps: list[StepReady]


def config_key(config: dict[str, Any]) -> str:
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def recording_path(run_dir: Path, ref: str, config: dict[str, Any]) -> Path:
    return Path(run_dir) / RECORDINGS_DIR / f"{ref}-{config_key(config)}{SUFFIX}"


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


# --- to and from JSON --------------------------------------------------------------------


def info_to_json(info: RunInfo) -> dict[str, Any]:
    out = {f.name: getattr(info, f.name) for f in dataclasses.fields(info)}
    out["startup_events"] = [e.model_dump() for e in info.startup_events]
    out["checkpoints"] = [c.model_dump() for c in info.checkpoints]
    return out


def info_from_json(d: dict[str, Any]) -> RunInfo:
    d = dict(d)
    d["startup_events"] = [EventMsg.model_validate(e) for e in d["startup_events"]]
    d["checkpoints"] = [CheckpointMsg.model_validate(c) for c in d["checkpoints"]]
    return RunInfo(**d)


def step_to_json(msg: StepReady) -> dict[str, Any]:
    return {
        "run_id": msg.run_id,
        "body": msg.body,
        "figures": dataclasses.asdict(msg.figures),
        "trace": base64.b64encode(msg.trace).decode("ascii"),
        "events": [e.model_dump() for e in msg.events],
        "checkpoints": None
        if msg.checkpoints is None
        else [c.model_dump() for c in msg.checkpoints],
        "probe": msg.probe,
    }


def step_from_json(d: dict[str, Any]) -> StepReady:
    return StepReady(
        run_id=d["run_id"],
        body=d["body"],
        figures=StepFigures(**d["figures"]),
        trace=base64.b64decode(d["trace"]),
        events=[EventMsg.model_validate(e) for e in d["events"]],
        checkpoints=None
        if d["checkpoints"] is None
        else [CheckpointMsg.model_validate(c) for c in d["checkpoints"]],
        probe=d["probe"],
    )


# --- writing and reading -----------------------------------------------------------------


def write_recording(path: Path, rec: Recording) -> Path:
    """Write `rec` to `path` whole: a temporary file, flushed, then renamed into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    head = {"format": FORMAT, "meta": dataclasses.asdict(rec.meta), "info": info_to_json(rec.info)}
    try:
        with open(tmp, "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz:
                gz.write(json.dumps(head).encode() + b"\n")
                for msg in rec.steps:
                    gz.write(json.dumps(step_to_json(msg)).encode() + b"\n")
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _head(line: bytes, path: Path) -> tuple[RecordingMeta, RunInfo]:
    try:
        head = json.loads(line)
    except ValueError as exc:
        raise RecordingError(f"{path.name}: not a recording ({exc})") from None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise RecordingError(f"{path.name}: not a recording of format {FORMAT}")
    try:
        return RecordingMeta(**head["meta"]), info_from_json(head["info"])
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"{path.name}: a damaged head ({exc})") from None


def read_meta(path: Path) -> RecordingMeta:
    """The recording's head only (cheap): what it is a recording of."""
    path = Path(path)
    try:
        with gzip.open(path, "rb") as gz:
            return _head(gz.readline(), path)[0]
    except (OSError, EOFError) as exc:
        raise RecordingError(f"{path.name}: {exc}") from None


def read_recording(path: Path) -> Recording:
    """The whole recording, every step checked; RecordingError when any part is damaged."""
    path = Path(path)
    try:
        with gzip.open(path, "rb") as gz:
            meta, info = _head(gz.readline(), path)
            steps = [step_from_json(json.loads(line)) for line in gz if line.strip()]
    except RecordingError:
        raise
    except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:
        raise RecordingError(f"{path.name}: damaged ({exc.__class__.__name__}: {exc})") from None
    if len(steps) != meta.steps:
        raise RecordingError(f"{path.name}: {len(steps)} steps where the head says {meta.steps}")
    numbers = [s.figures.step for s in steps]
    if numbers != list(range(meta.first_step, meta.first_step + meta.steps)):
        raise RecordingError(f"{path.name}: the steps are not {meta.first_step} onwards in order")
    return Recording(meta, info, steps)


def find_recording(run_dir: Path, ref: str, config: dict[str, Any]) -> RecordingMeta | None:
    """The recording of `ref` on exactly `config` in `run_dir`, when one is there and its
    head reads; None otherwise (a damaged one is played by nobody)."""
    path = recording_path(run_dir, ref, config)
    if not path.is_file():
        return None
    try:
        meta = read_meta(path)
    except RecordingError:
        return None
    return meta if meta.config == config and meta.ref == ref and meta.steps > 0 else None


# --- recording a live run as it goes ------------------------------------------------------

# Kinds of event after which a run is no longer a plain run of its config: not recorded.
NOT_PLAIN = frozenset({"gpu_failed", "restored", "fault_injected", "diverged", "gpu_replaced"})


class Recorder:
    """Keeps the first `steps` steps a live run sends and then writes them as its recording,
    in a thread of its own, so the next time the run is wanted it is played. A run that is
    reset starts the recording over; one that fails a GPU or takes a fault is not recorded
    (a recording is of the config, plainly trained). Fed from the worker's reader thread."""

    def __init__(self, path: Path, ref: str, steps: int, made_with: str) -> None:
        self.path = Path(path)
        self.ref = ref
        self.want = steps
        self.made_with = made_with
        self.info: RunInfo | None = None
        self.steps: list[StepReady] = []
        self.state = "recording"  # then "writing", "written", "abandoned" or "failed"
        self.error: str | None = None
        self.writer: threading.Thread | None = None

    def opened(self, info: RunInfo) -> None:
        """The run opened (at start, or a reset): record from here."""
        if self.state == "recording":
            self.info, self.steps = info, []

    def saw(self, events: list[EventMsg]) -> None:
        """Events of the run, in a step or outside one (a failure a viewer caused)."""
        if self.state == "recording" and any(e.kind in NOT_PLAIN for e in events):
            self.state, self.steps = "abandoned", []

    def take(self, msg: StepReady) -> None:
        if self.state != "recording" or self.info is None or msg.run_id != self.info.run_id:
            return
        self.saw(msg.events)
        if self.state != "recording":
            return
        self.steps.append(msg)
        if len(self.steps) >= self.want:
            self.state = "writing"
            self.writer = threading.Thread(target=self._write, name="recorder", daemon=True)
            self.writer.start()

    def _write(self) -> None:
        assert self.info is not None
        meta = RecordingMeta(
            ref=self.ref,
            config=self.info.config,
            steps=len(self.steps),
            first_step=self.steps[0].figures.step,
            made_at=now_iso(),
            made_with=self.made_with,
        )
        try:
            write_recording(self.path, Recording(meta, self.info, self.steps))
        except Exception as exc:  # a full disk: the run goes on, unrecorded
            self.state, self.error = "failed", f"{exc.__class__.__name__}: {exc}"
        else:
            self.state = "written"
        self.steps = []
