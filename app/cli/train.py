"""`trainingrun train`: the run headless, with a progress bar on stderr or JSON lines on stdout."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.parser import CommandParser
from app.engine import backend
from app.engine.backend import BACKENDS, DEVICES
from app.engine.config import RunConfig
from app.engine.lake import DataError
from app.engine.plan import SCHEDULES, plan_problems
from app.engine.report import Diverged, json_number
from app.engine.steptrace import FAULT_KINDS
from app.engine.timing import PRESETS
from app.engine.trace import bytes_by_kind
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


# The plan's rules (app/engine/plan.py) say the options' names here.
OPTION_NAMES = {
    "gpus": "--gpus",
    "batch_size": "--batch-size",
    "n_layer": "--layers",
    "experts": "--experts",
    "top_k": "--top-k",
    "tp": "--tp",
    "pp": "--pp",
    "ep": "--ep",
    "microbatches": "--microbatches",
    "schedule": "--schedule",
    "n_head": "the model's heads",
}


def build_parser() -> argparse.ArgumentParser:
    d = RunConfig()
    p = CommandParser(
        prog="trainingrun train",
        description="Train the tiny language model on the simulated cluster, without a browser. "
        "An existing run dir is resumed from its latest checkpoint unless --fresh is given.",
    )
    p.add_argument("--steps", type=int, default=1000, help="train until this step (default 1000)")
    p.add_argument("--gpus", type=int, default=d.gpus, help=f"GPUs in all (default {d.gpus})")
    p.add_argument(
        "--servers",
        type=int,
        default=d.servers,
        help=f"servers the GPUs are spread evenly over (default {d.servers})",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=d.seed,
        help=f"the run's seed; same seed, same run (default {d.seed})",
    )
    p.add_argument(
        "--preset",
        default=d.preset,
        choices=sorted(PRESETS),
        help=f"simulated hardware the step times are for (default {d.preset})",
    )
    p.add_argument(
        "--run-dir", default="runs/train", help="data lake and checkpoints (default runs/train)"
    )
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=d.checkpoint_every,
        help=f"steps between checkpoints, 0 for none (default {d.checkpoint_every})",
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help=f"global batch in sequences, a multiple of --gpus (default {d.batch_size}, "
        "or one per GPU)",
    )
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
        "--layers",
        type=int,
        default=d.n_layer,
        help=f"transformer layers of the model (default {d.n_layer})",
    )
    p.add_argument(
        "--experts",
        type=int,
        default=d.experts,
        help="experts per layer: each layer's MLP becomes a mixture of experts "
        f"(default {d.experts}: a dense MLP)",
    )
    p.add_argument(
        "--top-k",
        type=int,
        default=d.top_k,
        help=f"experts each token is routed to, with --experts (default {d.top_k})",
    )
    p.add_argument(
        "--tp",
        type=int,
        default=d.tp,
        help="tensor parallel: GPUs that split each layer (by attention heads and MLP "
        f"columns), inside one server (default {d.tp})",
    )
    p.add_argument(
        "--pp",
        type=int,
        default=d.pp,
        help=f"pipeline parallel: stages the layers are split into (default {d.pp})",
    )
    p.add_argument(
        "--ep",
        type=int,
        default=d.ep,
        help="expert parallel: GPUs that share out each layer's experts, needs --experts "
        f"(default {d.ep})",
    )
    p.add_argument(
        "--microbatches",
        type=int,
        default=d.microbatches,
        help="microbatches each data-parallel replica's batch is cut into; gradients add "
        f"up over them (default {d.microbatches})",
    )
    p.add_argument(
        "--schedule",
        default=d.schedule,
        choices=list(SCHEDULES),
        help=f"pipeline schedule: all forwards then all backwards, or one forward one "
        f"backward (default {d.schedule})",
    )
    add_backend_options(p)
    p.add_argument("--fresh", action="store_true", help="ignore and delete old checkpoints")
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


def add_backend_options(p: argparse.ArgumentParser) -> None:
    """--backend and --device: which array library runs the model, and on what."""
    p.add_argument(
        "--backend",
        default="numpy",
        choices=list(BACKENDS),
        help="array library the model's maths runs in: numpy (default) or torch "
        "(PyTorch tensors, same numbers within float32 rounding; pip install 'trainingrun[torch]')",
    )
    p.add_argument(
        "--device",
        default="cpu",
        choices=list(DEVICES),
        help="where the torch backend computes: cpu (default) or cuda (a GPU; falls back to the "
        "CPU with a message when CUDA is absent)",
    )


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


def config_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> RunConfig:
    """The run's config, or a one-line error (exit 2) naming the option that is wrong."""
    if args.steps < 0:
        parser.error(f"--steps must be 0 or more, got {args.steps}")
    if args.gpus < 1:
        parser.error(f"--gpus must be at least 1, got {args.gpus}")
    if args.servers < 1:
        parser.error(f"--servers must be at least 1, got {args.servers}")
    if args.gpus % args.servers:
        parser.error(f"--gpus ({args.gpus}) must divide evenly over --servers ({args.servers})")
    if args.seed < 0:
        parser.error(f"--seed must be 0 or more, got {args.seed}")
    if args.checkpoint_every < 0:
        parser.error(f"--checkpoint-every must be 0 (off) or more, got {args.checkpoint_every}")
    if args.batch_size is not None and args.batch_size < 1:
        parser.error(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.layers < 1:
        parser.error(f"--layers must be at least 1, got {args.layers}")
    problems = plan_problems(
        gpus=args.gpus,
        servers=args.servers,
        n_layer=args.layers,
        n_head=RunConfig.n_head,
        n_embd=RunConfig.n_embd,
        batch_size=args.batch_size or RunConfig.batch_for(args.gpus),
        tp=args.tp,
        pp=args.pp,
        ep=args.ep,
        microbatches=args.microbatches,
        schedule=args.schedule,
        experts=args.experts,
        top_k=args.top_k,
        names=OPTION_NAMES,
    )
    if problems:
        parser.error("; ".join(problems))
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
            seed=args.seed,
            gpus=args.gpus,
            servers=args.servers,
            preset=args.preset,
            checkpoint_every=args.checkpoint_every,
            batch_size=args.batch_size or RunConfig.batch_for(args.gpus),
            data=str(Path(args.data).resolve()) if args.data else None,
            dtype=args.dtype,
            n_layer=args.layers,
            experts=args.experts,
            top_k=args.top_k,
            tp=args.tp,
            pp=args.pp,
            ep=args.ep,
            microbatches=args.microbatches,
            schedule=args.schedule,
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


def _opening_note(trainer: Trainer, run_dir: str, steps: int) -> str | None:
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
