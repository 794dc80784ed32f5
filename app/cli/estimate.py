"""`trainingrun estimate`: what a whole training run costs, from its size, its tokens and a GPU.

trainingrun estimate --params 70B [--active-params 37B] --tokens 2T --gpu h100-80gb
                     [--gpus N] [--mfu 0.4] [--precision bf16|fp8] [--json]

The arithmetic is app/labs/cost.py `estimate` (the cost panel's API runs the same): FLOPs =
6 x active parameters x tokens; GPU-hours at the stated MFU of the GPU's dense peak; days on
N GPUs; energy with PUE; rental cost; expected interruptions at the Llama 3 rate, and what
they cost with checkpoints at Young's interval (app/labs/goodput.py).
"""

from __future__ import annotations

import argparse

from app.cli.memory import print_lab_result
from app.cli.parser import CommandParser
from app.labs.cost import (
    DEFAULT_CO2_KG_PER_KWH,
    DEFAULT_PUE,
    DEFAULT_UTILISATION,
    PRECISION_CHOICES,
    EstimateResult,
    estimate,
)
from app.labs.goodput import RESTART_S, STORAGE_TBPS
from app.labs.hardware import GPU_ALIASES, GPUS
from app.labs.memory import format_count

GPU_CHOICES = sorted([*GPUS, *GPU_ALIASES])
# The calculator's field names, as this command's options.
OPTION = {
    "utilisation": "--mfu",
    "price_per_gpu_hour": "--price",
    "storage_tbps": "--storage",
    "restart_s": "--restart",
    "co2_kg_per_kwh": "--co2",
}


def _parser() -> argparse.ArgumentParser:
    p = CommandParser(
        prog="trainingrun estimate",
        description="Time, GPU-hours, energy, cost and interruptions of a whole training run.",
    )
    p.add_argument("--params", required=True, help="model size, e.g. 8B, 70B, 671B or 7e9")
    p.add_argument(
        "--active-params",
        default=None,
        help="parameters each token uses, for a mixture of experts (e.g. 37B); "
        "default: all of them",
    )
    p.add_argument("--tokens", required=True, help="training tokens, e.g. 2T or 15e12")
    p.add_argument(
        "--gpu", default="h100-80gb", choices=GPU_CHOICES, help="GPU model (default h100-80gb)"
    )
    p.add_argument("--gpus", type=int, default=1024, help="GPUs the run uses (default 1024)")
    p.add_argument(
        "--mfu",
        type=float,
        default=DEFAULT_UTILISATION,
        help=f"model FLOPs utilisation, the share of the peak used (default {DEFAULT_UTILISATION})",
    )
    p.add_argument(
        "--precision",
        default="bf16",
        choices=list(PRECISION_CHOICES),
        help="number format of the matrix maths: its dense peak is used (default bf16)",
    )
    p.add_argument(
        "--pue", type=float, default=DEFAULT_PUE, help=f"data-centre PUE (default {DEFAULT_PUE})"
    )
    p.add_argument(
        "--price",
        type=float,
        default=None,
        help="rental, $ per GPU-hour (default: the rough 2026 figure for the GPU)",
    )
    p.add_argument(
        "--storage",
        type=float,
        default=STORAGE_TBPS,
        help=f"checkpoint storage, TB/s sustained (default {STORAGE_TBPS:g}, Llama 3's)",
    )
    p.add_argument(
        "--restart",
        type=float,
        default=RESTART_S,
        help=f"seconds a restart after an interruption takes (default {RESTART_S:g})",
    )
    p.add_argument(
        "--co2",
        type=float,
        default=DEFAULT_CO2_KG_PER_KWH,
        help=f"the grid's kg of CO2 a kWh (default {DEFAULT_CO2_KG_PER_KWH:g}, the US in 2023)",
    )
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    return p


def render(r: EstimateResult) -> str:
    lines = [
        f"{format_count(r.params)} parameters"
        + (f" ({format_count(r.active_params)} active)" if r.active_params != r.params else "")
        + f", {format_count(r.tokens)} tokens on {r.gpus:,} x {r.gpu_label}",
        f"  work          {r.flops:.3g} FLOPs (6 x active parameters x tokens)",
        f"  GPU-hours     {r.gpu_hours:,.0f}  at {r.mfu:.0%} MFU of "
        f"{r.peak_tflops:,g} TFLOP/s ({r.precision.upper()}, dense)",
        f"  time          {r.days:,.1f} days on {r.gpus:,} GPUs",
        f"  energy        {r.energy_mwh:,.0f} MWh (board power x PUE {r.pue:g}), "
        f"{r.co2_tonnes:,.0f} t CO2",
        f"  cost          ${r.cost_usd:,.0f} rental at ${r.price_per_gpu_hour:g}/GPU-hour "
        f"(+ ${r.electricity_usd:,.0f} electricity)",
        f"  interruptions {r.interruptions:,.0f} expected "
        f"({r.interruptions_per_day:.1f} a day on {r.gpus:,} GPUs)",
        *_goodput_lines(r),
        "assumptions:",
        *(f"  - {a}" for a in r.assumptions),
        "sources:",
        *(f"  - {s}" for s in r.sources),
    ]
    return "\n".join(lines)


def _goodput_lines(r: EstimateResult) -> list[str]:
    g = r.goodput
    if g is None:
        return ["  goodput       none: interruptions come faster than a restart and its rework"]
    return [
        f"  goodput       {g.effective:.1%} of the time trains: checkpoint every "
        f"{g.interval_s / 60:,.1f} min (Young), one every {g.mtbi_hours:,.1f} h interrupted, "
        f"{g.restart_s / 60:g}-min restarts",
        f"  with failures {g.wall_hours / 24:,.1f} days, {g.lost_hours * r.gpus:,.0f} GPU-hours "
        f"lost to restarts, rework and checkpoint writes",
    ]


def estimate_main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return print_lab_result(
        "estimate",
        lambda: estimate(
            args.params,
            args.tokens,
            args.gpu,
            active_params=args.active_params,
            gpus=args.gpus,
            mfu=args.mfu,
            precision=args.precision,
            pue=args.pue,
            price_per_gpu_hour=args.price,
            storage_tbps=args.storage,
            restart_s=args.restart,
            co2_kg_per_kwh=args.co2,
        ),
        render,
        as_json=args.json,
        options=OPTION,
    )
