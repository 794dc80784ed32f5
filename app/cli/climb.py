"""`trainingrun climb`: train the tiny model for real, far past a lesson's live run, with a
checkpoint and a look at every tenfold of steps; the story's "Again, and again" plays it.

    trainingrun climb                                  100,000 steps, about 5 to 10 minutes
    trainingrun climb --steps 1000 --out my-climb.json

The checkpoints stay in --run-dir; the summary (each tenfold's loss, writing and how far the
weights moved) goes to --out, by default the copy the app ships (scenes/climb/tiny.json).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from app.cli.parser import CommandParser
from app.run.climb import DEFAULT_STEPS, SHIPPED, run_climb


def build_parser() -> CommandParser:
    p = CommandParser(
        prog="trainingrun climb",
        description="Train the tiny model for many steps, a checkpoint at every tenfold, and "
        "write what it says at each one (the story's 'Again, and again').",
    )
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="train until this step")
    p.add_argument("--seed", type=int, default=0, help="the run's seed (default 0)")
    p.add_argument("--out", type=Path, default=SHIPPED, help=f"the summary (default {SHIPPED})")
    p.add_argument("--run-dir", type=Path, help="keep the checkpoints here (default: a temp dir)")
    return p


def climb_main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if not 1 <= args.steps <= 10_000_000:
        print("trainingrun climb: --steps must be between 1 and 10,000,000", file=sys.stderr)
        return 2

    def progress(step: int, seconds: float) -> None:
        rate = step / seconds if seconds else 0.0
        print(f"\rstep {step:,} of {args.steps:,}  {rate:,.0f} steps/s", end="", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="trainingrun-climb-") as tmp:
        run_dir = args.run_dir or Path(tmp)
        climb = run_climb(run_dir, args.steps, seed=args.seed, progress=progress)
    print(file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(climb.to_json())
    for d in climb.decades:
        print(f"step {d.step:>9,}  loss {d.loss_avg:6.3f}  moved {d.moved:6.3f}  {d.writing}")
    print(f"{climb.steps:,} steps in {climb.seconds:,.0f} s; written to {args.out}")
    return 0
