"""`trainingrun record`: train a story's heavy runs now, for real, and keep every step, so a
server on the same run dir and settings plays them at a page's pace (app/run/replay.py).

    trainingrun record                       the story runs marked "recorded" (the 64-GPU team)
    trainingrun record one-gpu.dp2 --steps 20
    trainingrun record --run-dir class-run --gpus 8   (the settings the server will run with)

A recording belongs to one config: the story's run on the server's other settings. Record
with the settings you serve with, or the server will not find it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from app.cli.flags import add_settings, read_settings
from app.cli.parser import CommandParser
from app.routes.story import STORY_IDS, load_story, side_run
from app.run.pipe import StepDiverged, StepReady, WorkerSpec
from app.run.recording import Recording, RecordingMeta, now_iso, recording_path, write_recording
from app.run.worker import Worker, run_info
from app.settings import Settings

DEFAULT_STEPS = 50
MADE_WITH = "trainingrun record"


class Tape:
    """Stands where the worker's pipe would be: keeps what the worker sends."""

    def __init__(self) -> None:
        self.sent: list[object] = []

    def send(self, msg: object) -> None:
        self.sent.append(msg)


def record(ref: str, settings: Settings, steps: int, *, made_with: str = MADE_WITH) -> Path:
    """Train the run `ref` for `steps` steps with the worker the server uses, and write every
    step it would have sent; the recording's path."""
    found = side_run(ref, settings.run_config())
    if found is None:
        raise ValueError(f"no story run {ref!r}")
    config, _label = found
    with tempfile.TemporaryDirectory(prefix="trainingrun-record-") as tmp:
        tape = Tape()
        spec = WorkerSpec(config=config.to_dict(), run_dir=tmp, fresh=True, run_id=ref)
        worker = Worker(tape, spec)  # type: ignore[arg-type]
        info = run_info(worker.trainer, ref)
        started = time.monotonic()
        for n in range(1, steps + 1):
            worker.do_step()
            msg = tape.sent[-1]
            if isinstance(msg, StepDiverged):
                raise ValueError(f"{ref}: step {n} diverged: {msg.event.message}")
            assert isinstance(msg, StepReady)
            rate = n / max(1e-9, time.monotonic() - started)
            print(
                f"\r{ref}: step {msg.figures.step}/{steps}  loss {msg.figures.loss:.3f}  "
                f"{rate:.2f} steps/s ",
                end="",
                file=sys.stderr,
                flush=True,
            )
        print(file=sys.stderr)
        worker.trainer.close(final_checkpoint=False)
    played = [m for m in tape.sent if isinstance(m, StepReady)]
    meta = RecordingMeta(
        ref=ref,
        config=config.to_dict(),
        steps=len(played),
        first_step=played[0].figures.step,
        made_at=now_iso(),
        made_with=made_with,
    )
    path = recording_path(settings.run_dir, ref, config.to_dict())
    return write_recording(path, Recording(meta, info, played))


def default_refs() -> list[str]:
    return [f"{sid}.{name}" for sid in STORY_IDS for name in load_story(sid).recorded]


def known_refs() -> list[str]:
    return [f"{sid}.{name}" for sid in STORY_IDS for name in load_story(sid).runs]


def build_parser(table: type[Settings] = Settings) -> argparse.ArgumentParser:
    p = CommandParser(
        prog="trainingrun record",
        description="Train a story's heavy runs now and keep every step, so the server plays "
        "them at a page's pace. Give the settings the server runs with (the same --run-dir, "
        "--gpus, ...): a recording is found only for the config it was made with.",
    )
    p.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="story runs to record, e.g. one-gpu.team64 (default: "
        + (", ".join(default_refs()) or "none")
        + ")",
    )
    p.add_argument(
        "--steps",
        type=int,
        default=DEFAULT_STEPS,
        help=f"steps to record of each (default {DEFAULT_STEPS})",
    )
    add_settings(p, "serve", table)
    return p


def record_main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be 1 or more, got {args.steps}")
    settings, _where = read_settings(parser, "serve", Settings, args)
    refs = args.runs or default_refs()
    try:
        base = settings.run_config()
    except ValueError as exc:
        parser.error(str(exc))
    for ref in refs:
        if side_run(ref, base) is None:
            parser.error(f"{ref!r} is not a story run (known: {', '.join(known_refs())})")
    for ref in refs:
        started = time.monotonic()
        path = record(ref, settings, args.steps)
        print(f"{ref}: {args.steps} steps in {time.monotonic() - started:.0f} s -> {path}")
    return 0
