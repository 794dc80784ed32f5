"""`trainingrun memory`: the GPU memory calculator on the command line.

trainingrun memory --params 70B --precision bf16 --gpu h100-80gb [--json]
                   [--shape llama3-70b | --layers L --kv-heads H --head-dim D]
                   [--context TOKENS --batch REQUESTS]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from app.cli.parser import CommandParser
from app.engine import activations
from app.labs.hardware import GPUS, PRECISIONS
from app.labs.memory import (
    MODEL_SHAPES,
    FieldError,
    MemoryResult,
    compute_memory,
    format_bytes,
    format_count,
    serving_from,
)


class LabResult(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=LabResult)


def _parser() -> argparse.ArgumentParser:
    p = CommandParser(
        prog="trainingrun memory",
        description="How much GPU memory a model needs to serve and to train.",
    )
    p.add_argument(
        "--params", default="70B", help="model size, e.g. 7B, 70B, 1T or 7e9 (default 70B)"
    )
    p.add_argument(
        "--precision",
        default="bf16",
        choices=list(PRECISIONS),
        help="number format of the weights (default bf16)",
    )
    p.add_argument(
        "--gpu", default="h100-80gb", choices=list(GPUS), help="GPU model (default h100-80gb)"
    )
    p.add_argument(
        "--shape",
        choices=list(MODEL_SHAPES),
        default=None,
        help="a published model's layers, KV heads and head size (with --context, --batch)",
    )
    for flag, what in (
        ("--layers", "layers"),
        ("--kv-heads", "key/value heads"),
        ("--head-dim", "numbers in each head"),
        ("--context", "tokens each request holds"),
        ("--batch", "requests served at once"),
    ):
        p.add_argument(flag, type=int, default=None, help=f"serving: {what}")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    return p


def _serving_row(r: MemoryResult) -> tuple[str, str]:
    if r.kv_cache_bytes is None or r.serving is None:
        return ("Serving (weights + 20%)", format_bytes(r.serve_bytes))
    s = r.serving
    return (
        "Serving (weights + KV cache)",
        f"{format_bytes(r.serve_bytes)}: {format_bytes(r.kv_cache_bytes)} of keys and values "
        f"for {s.batch:,} x {s.context:,} tokens",
    )


def render_table(r: MemoryResult) -> str:
    usable = format_bytes(r.usable_bytes_per_gpu)
    rows = [
        ("Model", f"{format_count(r.params)} parameters"),
        ("Precision", f"{r.precision} ({r.bytes_per_param:g} bytes per number)"),
        ("GPU", f"{r.gpu_label} ({usable} usable, {r.usable_fraction:.0%})"),
        ("Weights", format_bytes(r.weights_bytes)),
        _serving_row(r),
        ("GPUs to serve", str(r.gpus_to_serve)),
        (f"Training ({r.training_bytes_per_param:g} B/param)", format_bytes(r.training_bytes)),
    ]
    rows += [(f"  {p.label}", format_bytes(p.bytes)) for p in r.training_parts]
    rows += [
        ("GPUs just to fit training", str(r.gpus_to_fit_training)),
        (
            "  with fp32 gradients (18 B/param)",
            f"{format_bytes(r.training_bytes_fp32_grads)}, "
            f"{r.gpus_to_fit_training_fp32_grads} GPUs",
        ),
    ]
    if r.activations is not None:
        a = r.activations
        rows.append(
            (
                "Activations",
                f"one {a.sequence:,}-token sequence through {a.layers} layers, kept for the "
                "backward pass:",
            )
        )
        rows += [
            (f"  {activations.WORDS[mode]}", format_bytes(a.bytes[mode]))
            for mode in activations.RECOMPUTE
        ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines += ["", "Rules of thumb:"] + [f"- {rule}" for rule in r.rules]
    lines.append(f"Source: {r.source}")
    return "\n".join(lines)


def print_lab_result(
    command: str,
    compute: Callable[[], R],
    render: Callable[[R], str],
    *,
    as_json: bool,
    options: Mapping[str, str] | None = None,
) -> int:
    """A lab calculator's answer on the command line (memory, estimate): its result as text,
    or as JSON with --json; a bad field is a one-line error naming its option (`options`
    maps the fields whose option is not --field-name), exit status 2."""
    try:
        result = compute()
    except FieldError as e:
        name = (options or {}).get(e.field, f"--{e.field.replace('_', '-')}")
        print(f"trainingrun {command}: {name}: {e.message}", file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(render(result))
    return 0


def memory_main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return print_lab_result(
        "memory",
        lambda: compute_memory(
            args.params,
            args.precision,
            args.gpu,
            serving_from(
                args.shape, args.layers, args.kv_heads, args.head_dim, args.context, args.batch
            ),
        ),
        render_table,
        as_json=args.json,
    )
