"""`trainingrun train`: the run headless, with a progress bar on stderr or JSON lines on stdout."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from app.engine.config import RunConfig
from app.engine.lake import DataError
from app.engine.timing import PRESETS


def _fail_at(text: str) -> tuple[int, int]:
    try:
        step, gpu = text.split(":")
        step_i, gpu_i = int(step), int(gpu)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected STEP:GPU, e.g. 75:3, got {text!r}") from None
    if step_i < 1 or gpu_i < 0:
        raise argparse.ArgumentTypeError(f"STEP must be >= 1 and GPU >= 0, got {text!r}")
    return step_i, gpu_i


def build_parser() -> argparse.ArgumentParser:
    d = RunConfig()
    p = argparse.ArgumentParser(
        prog="trainingrun train",
        description="Train the tiny language model on the simulated cluster, without a browser.",
    )
    p.add_argument("--steps", type=int, default=1000, help="train until this step (default 1000)")
    p.add_argument("--gpus", type=int, default=d.gpus, help=f"GPUs in all (default {d.gpus})")
    p.add_argument("--servers", type=int, default=d.servers, help=f"default {d.servers}")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--preset", default=d.preset, choices=sorted(PRESETS))
    p.add_argument("--run-dir", default="runs/train", help="default runs/train")
    p.add_argument("--checkpoint-every", type=int, default=d.checkpoint_every)
    p.add_argument("--batch-size", type=int, default=None, help="global batch in sequences")
    p.add_argument(
        "--fail-at",
        type=_fail_at,
        action="append",
        default=[],
        metavar="STEP:GPU",
        help="fail GPU during STEP (repeatable)",
    )
    p.add_argument("--data", default=None, help="a text file or folder to train on instead")
    p.add_argument("--dtype", default=d.dtype, choices=["float32", "float64"])
    p.add_argument("--fresh", action="store_true", help="ignore and delete old checkpoints")
    p.add_argument("--json", action="store_true", help="one JSON object per step on stdout")
    return p


def _bar(step: int, start: int, end: int, loss: float, rate: float) -> str:
    span = max(1, end - start)
    done = (step - start) / span
    width = 30
    fill = int(done * width)
    return (
        f"\r[{'#' * fill}{'.' * (width - fill)}] step {step}/{end}  "
        f"loss {loss:.3f}  {rate:.1f} steps/s "
    )


def train_main(argv: list[str] | None = None) -> int:
    from app.engine.trainer import Trainer  # heavy import after argument errors

    args = build_parser().parse_args(argv)
    batch = args.batch_size or RunConfig.batch_for(max(1, args.gpus))
    try:
        config = RunConfig(
            seed=args.seed,
            gpus=args.gpus,
            servers=args.servers,
            preset=args.preset,
            checkpoint_every=args.checkpoint_every,
            batch_size=batch,
            data=str(Path(args.data).resolve()) if args.data else None,
            dtype=args.dtype,
        )
    except ValueError as e:
        print(f"trainingrun train: {e}", file=sys.stderr)
        return 2
    log = (
        (lambda m: print(f"\n{m}", file=sys.stderr))
        if not args.json
        else (lambda m: print(m, file=sys.stderr))
    )
    try:
        trainer = Trainer(config, args.run_dir, fresh=args.fresh, log=log)
    except DataError as e:
        print(f"trainingrun train: {e}", file=sys.stderr)
        return 2
    try:
        for step, gpu in args.fail_at:
            trainer.schedule_failure(step, gpu)
    except ValueError as e:
        print(f"trainingrun train: --fail-at: {e}", file=sys.stderr)
        trainer.close(final_checkpoint=False)
        return 2

    start = trainer.step
    initial_loss = None
    last = None
    t0 = time.perf_counter()
    steps_done = 0
    try:
        while trainer.step < args.steps:
            report = trainer.train_step()
            steps_done += 1
            if initial_loss is None:
                initial_loss = report.loss
            last = report
            rate = steps_done / max(1e-9, time.perf_counter() - t0)
            if args.json:
                print(json.dumps({"type": "step", **report.to_dict()}), flush=True)
            elif sys.stderr.isatty() or steps_done % 10 == 0 or trainer.step >= args.steps:
                print(
                    _bar(trainer.step, start, args.steps, report.loss, rate),
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
    except KeyboardInterrupt:
        print("\ninterrupted: saving a checkpoint", file=sys.stderr)
    finally:
        elapsed = time.perf_counter() - t0
        trainer.close(final_checkpoint=True)
    if not args.json:
        print(file=sys.stderr)
    probe = trainer.probe()
    summary = {
        "type": "summary",
        "initial_loss": initial_loss,
        "final_loss": last.loss if last else None,
        "steps": trainer.step,
        "steps_run": steps_done,
        "restarts": trainer.restarts,
        "steps_per_s": steps_done / elapsed if elapsed > 0 else 0.0,
        "tokens_per_s": (steps_done * config.batch_size * config.block_size) / elapsed
        if elapsed > 0
        else 0.0,
        "params_sha256": trainer.params_sha256(),
        "n_params": trainer.n_params,
        "gpus": config.gpus,
        "probe": {"prompt": probe.prompt, "top": [{"token": t.token, "p": t.p} for t in probe.top]},
    }
    if args.json:
        print(json.dumps(summary), flush=True)
    else:
        top = ", ".join(f"{t.token!r} {t.p:.0%}" for t in probe.top)
        print(
            f"step {summary['steps']}: loss {summary['initial_loss']} -> {summary['final_loss']}"
            f"; '{probe.prompt} ___' -> {top}; restarts {summary['restarts']}",
            file=sys.stderr,
        )
    return 0
