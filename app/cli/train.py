"""`trainingrun train`: the run headless, with a progress bar on stderr or JSON lines on stdout."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.flags import add_settings, options_of
from app.cli.parser import CommandParser
from app.engine import backend
from app.engine.config import RunConfig
from app.engine.lake import DataError
from app.engine.report import Diverged, json_number
from app.engine.steptrace import FAULT_KINDS
from app.engine.trace import bytes_by_kind
from app.options import Options, config_values, plan_check, plan_names, problems
from app.run.rundir import check_run_dir

if TYPE_CHECKING:
    from app.engine.report import StepReport
    from app.engine.trainer import Trainer


def _fail_at(text: str) -> tuple[int, int]:
    try:
        step, gpu = text.split(":")
        step_i, gpu_i = int(step), int(gpu)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected STEP:GPU, e.g. 75:3, got {text!r}") from None
    if step_i < 1 or gpu_i < 0:
        raise argparse.ArgumentTypeError(f"STEP must be >= 1 and GPU >= 0, got {text!r}")
    return step_i, gpu_i


def _fault(text: str) -> tuple[str, int, int]:
    try:
        kind, step, target = text.split(":")
        step_i, target_i = int(step), int(target)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected KIND:STEP:TARGET, e.g. straggler:40:3, got {text!r}"
        ) from None
    if kind not in FAULT_KINDS:
        raise argparse.ArgumentTypeError(
            f"KIND must be one of {', '.join(FAULT_KINDS)}, got {kind!r}"
        )
    if step_i < 1 or target_i < 0:
        raise argparse.ArgumentTypeError(f"STEP must be >= 1 and TARGET >= 0, got {text!r}")
    return kind, step_i, target_i


def build_parser(table: type[Options] = Options) -> argparse.ArgumentParser:
    d = RunConfig()
    p = CommandParser(
        prog="trainingrun train",
        description="Train the tiny language model on the simulated cluster, without a browser. "
        "An existing run dir is resumed from its latest checkpoint unless --fresh is given.",
    )
    p.add_argument("--steps", type=int, default=1000, help="train until this step (default 1000)")
    add_settings(p, "train", table, with_defaults=True)
    # What only a headless run has: faults on a timetable, its own data, its precision, its
    # output.
    p.add_argument(
        "--fail-at",
        type=_fail_at,
        action="append",
        default=[],
        metavar="STEP:GPU",
        help="fail GPU during STEP (repeatable)",
    )
    p.add_argument(
        "--fault",
        type=_fault,
        action="append",
        default=[],
        metavar="KIND:STEP:TARGET",
        help="a fault at scale during STEP (repeatable): dead:STEP:GPU, straggler:STEP:GPU "
        "(its compute twice as slow), data_stall:STEP:MS (the loader keeps every GPU "
        "waiting MS simulated milliseconds) or link:STEP:GPU (the ring hop out of GPU is "
        "cut and goes the long way); only the simulated time changes",
    )
    p.add_argument("--data", default=None, help="a text file or folder to train on instead")
    p.add_argument(
        "--dtype",
        default=d.dtype,
        choices=["float32", "float64"],
        help=f"precision of the arithmetic (default {d.dtype})",
    )
    p.add_argument(
        "--json", action="store_true", help="one JSON object per step on stdout, then a summary"
    )
    p.add_argument(
        "--trace-out",
        metavar="FILE",
        default=None,
        help="write the last step's trace to FILE in the Chrome Trace Event format "
        "(open it in https://ui.perfetto.dev): one process per server, one thread per GPU",
    )
    return p


def choose_backend(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    """Switch the engine to --backend on --device; a one-line note on stderr if it falls back.
    Returns what runs, e.g. "torch on cuda"."""
    try:
        chosen = backend.use(args.backend, args.device)
    except backend.BackendError as e:
        parser.error(f"--backend {args.backend}: {e}")
    if chosen.note:
        print(f"{parser.prog}: --device {args.device}: {chosen.note}", file=sys.stderr, flush=True)
    return f"{chosen.name} on {chosen.device}"


def config_from_args(
    args: argparse.Namespace, parser: argparse.ArgumentParser, table: type[Options] = Options
) -> RunConfig:
    """The run's config, or a one-line error (exit 2) naming the option that is wrong."""
    if args.steps < 0:
        parser.error(f"--steps must be 0 or more, got {args.steps}")
    values = {name: getattr(args, name) for name in options_of(table, "train")}
    names = options_of(table, "train")
    # The plan's rules first: they say the most about the plan's own options (an expert
    # count below 0 is "a dense MLP or more"); they check nothing that needs a sane --gpus.
    batch = args.batch_size or (RunConfig.batch_for(args.gpus) if args.gpus >= 1 else 0)
    found = plan_check(args, batch, plan_names(table, names)) or problems(table, values, names)
    if found:
        parser.error("; ".join(found))
    if args.gpus % args.servers:
        parser.error(f"--gpus ({args.gpus}) must divide evenly over --servers ({args.servers})")
    for step, gpu in args.fail_at:
        if gpu >= args.gpus:
            parser.error(f"--fail-at {step}:{gpu}: GPU must be between 0 and {args.gpus - 1}")
        if step > args.steps:
            parser.error(f"--fail-at {step}:{gpu}: step {step} is after --steps {args.steps}")
    if args.data and not Path(args.data).exists():
        parser.error(f"--data: {args.data!r} does not exist")
    problem = check_run_dir(args.run_dir)
    if problem:
        parser.error(f"--run-dir: {problem}")
    if args.trace_out is not None:
        out = Path(args.trace_out)
        if out.is_dir() or not out.parent.is_dir():
            parser.error(f"--trace-out: {args.trace_out!r} is not a file in an existing folder")
    try:
        return RunConfig(
            **config_values(table, values)
            | {
                "batch_size": args.batch_size or RunConfig.batch_for(args.gpus),
                "data": str(Path(args.data).resolve()) if args.data else None,
                "dtype": args.dtype,
            }
        )
    except ValueError as e:  # anything the checks above do not name
        parser.error(str(e))


def _bar(step: int, start: int, end: int, loss: float, rate: float) -> str:
    span = max(1, end - start)
    done = (step - start) / span
    width = 30
    fill = int(done * width)
    return (
        f"\r[{'#' * fill}{'.' * (width - fill)}] step {step}/{end}  "
        f"loss {loss:.3f}  {rate:.1f} steps/s "
    )


def _opening_note(trainer: Trainer, run_dir: Path, steps: int) -> str | None:
    """What the user should know before the first step: an old run is being continued, or
    there is nothing left to do. None for a new run."""
    if trainer.step >= steps:
        return (
            f"{run_dir} is already at step {trainer.step}; nothing to do "
            "(use --fresh to start over, or a higher --steps)"
        )
    if any(e.kind == "restored" for e in trainer.startup_events):
        return (
            f"resuming {run_dir} from its checkpoint at step {trainer.step}, "
            f"on to step {steps} (use --fresh to start over)"
        )
    return None


def write_trace(trainer: Trainer, last: StepReport | None, path: str) -> bool:
    """The last step's trace as a Chrome trace file; False (with a message) when there is
    none to write."""
    from app.engine.chrometrace import TraceTooLarge, chrome_trace

    if last is None:
        message = f"no step was run, so {path} was not written"
        print(f"trainingrun train: --trace-out: {message}", file=sys.stderr)
        return False
    server_of = [g.server for g in trainer.topology.gpus]
    try:
        doc = chrome_trace(
            last.trace,
            server_of,
            label=f"Training Run step {last.step} (simulated {trainer.config.preset} cluster)",
            meta={"step": last.step, "preset": trainer.config.preset},
        )
    except TraceTooLarge as e:
        print(f"trainingrun train: --trace-out: {e}; {path} was not written", file=sys.stderr)
        return False
    Path(path).write_text(json.dumps(doc, separators=(",", ":")))
    print(f"wrote the trace of step {last.step} to {path}", file=sys.stderr)
    return True


def _report_divergence(e: Diverged, trainer: Trainer, as_json: bool) -> int:
    """One line on stderr (and a last JSON line with --json); exit status 1."""
    print(f"trainingrun train: {e.message}", file=sys.stderr, flush=True)
    if as_json:
        line = {
            "type": "diverged",
            "step": e.step,
            "loss": json_number(e.loss),
            "grad_norm": json_number(e.grad_norm),
            "reason": e.reason,
            "message": e.message,
            "steps": trainer.step,
        }
        print(json.dumps(line, allow_nan=False), flush=True)
    return 1


def train_main(argv: list[str] | None = None) -> int:
    from app.engine.trainer import Trainer  # heavy import after argument errors

    parser = build_parser()
    args = parser.parse_args(argv)
    config = config_from_args(args, parser)
    runs_on = choose_backend(args, parser)
    opened = False

    def log(message: str) -> None:
        # The events of opening the run dir are reported below, with what to do about them;
        # later ones go out as they come, on a line of their own below the progress bar.
        if opened:
            print(message if args.json else f"\n{message}", file=sys.stderr)

    try:
        trainer = Trainer(config, args.run_dir, fresh=args.fresh, log=log)
    except DataError as e:
        parser.error(f"--data: {e}" if args.data else str(e))
    except OSError as e:
        parser.error(f"--run-dir: {e}")
    opened = True
    for e in trainer.startup_events:
        if e.kind != "restored":  # the note below says it, with what to do about it
            print(e.message, file=sys.stderr)
    note = _opening_note(trainer, args.run_dir, args.steps)
    if note:
        print(note, file=sys.stderr)
    for kind, step, target in args.fault:
        try:
            trainer.inject(kind, target, start=step)
        except ValueError as e:
            trainer.close(final_checkpoint=False)
            parser.error(f"--fault {kind}:{step}:{target}: {e}")
    for step, gpu in args.fail_at:
        if step <= trainer.step:
            print(
                f"--fail-at {step}:{gpu}: {args.run_dir} is already past step {step}, "
                "so that failure will not happen (use --fresh to start over)",
                file=sys.stderr,
            )
        trainer.schedule_failure(step, gpu)

    start = trainer.step
    initial_loss: float | None = None
    last = None
    t0 = time.perf_counter()
    steps_done = 0
    diverged: Diverged | None = None
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
    except Diverged as e:
        diverged = e
    finally:
        elapsed = time.perf_counter() - t0
        # A diverged run saves nothing new: its last checkpoint is its last good state.
        trainer.close(final_checkpoint=diverged is None)
    if not args.json and steps_done:
        print(file=sys.stderr)
    if diverged is not None:
        return _report_divergence(diverged, trainer, args.json)
    probe = trainer.probe()
    summary = {
        "type": "summary",
        "initial_loss": initial_loss,
        "final_loss": last.loss if last else None,
        "steps": trainer.step,
        "steps_run": steps_done,
        "resumed_from": start if start else None,
        "restarts": trainer.restarts,
        "steps_per_s": steps_done / elapsed if steps_done and elapsed > 0 else 0.0,
        "tokens_per_s": (steps_done * config.batch_size * config.block_size) / elapsed
        if steps_done and elapsed > 0
        else 0.0,
        "params_sha256": trainer.params_sha256(),
        "n_params": trainer.n_params,
        "params_l2": trainer.params_l2(),
        "gpus": config.gpus,
        "backend": runs_on,
        "plan": trainer.plan.to_dict(),
        # Measured over the last step: idle stage time in the pipeline's span, the largest
        # activation memory of any GPU, and the bytes each kind of traffic moved.
        "bubble_fraction": trainer.last_stats.bubble_fraction,
        "peak_activation_bytes": max(trainer.last_stats.activation_bytes, default=0),
        "traffic_bytes": bytes_by_kind(last.trace) if last else {},
        "probe": {"prompt": probe.prompt, "top": [{"token": t.token, "p": t.p} for t in probe.top]},
    }
    if args.trace_out is not None:
        if not write_trace(trainer, last, args.trace_out):
            return 1
        summary["trace_out"] = args.trace_out
    if args.json:
        print(json.dumps(summary), flush=True)
    else:
        top = ", ".join(f"{t.token!r} {t.p:.0%}" for t in probe.top)
        loss = (
            f"loss {initial_loss:.4f} -> {last.loss:.4f}; "
            if initial_loss is not None and last is not None
            else ""
        )
        print(
            f"step {summary['steps']}: {loss}'{probe.prompt} ___' -> {top}; "
            f"restarts {summary['restarts']}",
            file=sys.stderr,
        )
    return 0
