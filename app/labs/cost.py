"""Cost and energy of a training run, from a handful of visible, editable assumptions.

- Work: about 6 x parameters x tokens floating-point operations (2 for the forward pass,
  4 for the backward pass, per parameter per token; Kaplan et al. 2020, Hoffmann et al. 2022).
- Time: work / (GPUs x peak FLOP/s x utilisation). Utilisation (model FLOPs utilisation,
  MFU) of 30-50% is typical of large published runs.
- Energy: GPU board power x GPU-hours x PUE (the data centre's overhead for cooling and
  power delivery). Board power alone leaves out CPUs, memory and network, so it is a floor.
- Cost: GPU-hours x rental price per GPU-hour (rough 2026 figures), and separately the
  electricity at a stated price per kWh.
- CO2: energy x the grid's CO2 per kWh (the US average in 2023 by default, editable).
- Interruptions: GPU-hours x a per-GPU-hour rate of unexpected interruptions, from the one
  large run that published its count: "The Llama 3 Herd of Models" (Meta, 2024), section
  3.3.4: 419 unexpected interruptions in a 54-day period of pre-training on 16,384 H100s.
  A cluster's interruptions per day follow from the same rate.

`estimate` is the whole-run estimator of `trainingrun estimate` and /api/labs/estimate: the
same arithmetic from a model's (active) parameters, tokens, a GPU, a precision and an MFU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from app.engine.hardware import INTERRUPTION_SOURCE, INTERRUPTIONS_PER_GPU_HOUR

from .goodput import (
    CHECKPOINT_BYTES_PER_PARAM,
    RESTART_S,
    RESTART_SOURCE,
    STORAGE_SOURCE,
    STORAGE_TBPS,
    YOUNG_SOURCE,
    Goodput,
    goodput,
)
from .hardware import GPU_ALIASES, GPUS, PRICE_NOTE, parse_count
from .memory import FieldError

FLOPS_PER_PARAM_PER_TOKEN = 6.0
DEFAULT_UTILISATION = 0.40
DEFAULT_PUE = 1.2  # efficient hyperscale sites report 1.1-1.2; the industry average is ~1.5
DEFAULT_KWH_PRICE = 0.10  # USD per kWh, rough industrial rate
# US Energy Information Administration, FAQ 74: in 2023 US utility-scale generation emitted
# 1.53 billion tonnes of CO2 for 4.18 trillion kWh, about 0.81 lb (0.37 kg) a kWh.
DEFAULT_CO2_KG_PER_KWH = 0.37
CO2_SOURCE = (
    "US Energy Information Administration, FAQ: how much carbon dioxide is produced per "
    "kilowatthour of U.S. electricity generation (2023: 0.81 lb, 0.37 kg, a kWh)"
)
CO2_KG_PER_KWH_MAX = 10.0
# US Energy Information Administration: an average US home used about 10,500 kWh in a year.
HOME_KWH_PER_YEAR = 10_500.0

PRECISION_CHOICES = ("bf16", "fp8")

# What each input may be: far wider than any real cluster, narrow enough that every figure
# worked out from them (with counts up to hardware.MAX_COUNT) stays a finite number. The
# REST models in app/routes/labs.py use the same limits.
GPUS_MAX = 10_000_000
UTILISATION_MIN = 0.001
PEAK_TFLOPS_MIN = 0.001
PEAK_TFLOPS_MAX = 1e6
POWER_W_MAX = 1e6
PUE_MAX = 5.0
PRICE_PER_GPU_HOUR_MAX = 1e6
KWH_PRICE_MAX = 1e3


@dataclass
class CostInputs:
    params: float
    tokens: float
    gpu: str
    gpus: int
    utilisation: float
    peak_tflops: float
    power_w: float
    pue: float
    price_per_gpu_hour: float
    kwh_price: float
    co2_kg_per_kwh: float = DEFAULT_CO2_KG_PER_KWH


@dataclass
class CostResult:
    inputs: CostInputs
    flops: float
    seconds: float
    days: float
    gpu_hours: float
    energy_kwh: float
    homes_for_a_year: float
    rental_cost: float
    electricity_cost: float
    assumptions: list[str]
    sources: list[str]
    interruptions: float = 0.0  # expected over the run, at INTERRUPTIONS_PER_GPU_HOUR
    interruptions_per_day: float = 0.0  # on this many GPUs
    co2_tonnes: float = 0.0  # energy_kwh x the grid's CO2 a kWh

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def interruptions_per_day(gpus: int, rate: float = INTERRUPTIONS_PER_GPU_HOUR) -> float:
    """Expected unexpected interruptions a day on `gpus` GPUs, at the Llama 3 rate."""
    return rate * gpus * 24


def compute_cost(
    params: float | str,
    tokens: float | str,
    gpu: str = "h100-80gb",
    gpus: int = 1024,
    utilisation: float = DEFAULT_UTILISATION,
    peak_tflops: float | None = None,
    power_w: float | None = None,
    pue: float = DEFAULT_PUE,
    price_per_gpu_hour: float | None = None,
    kwh_price: float = DEFAULT_KWH_PRICE,
    co2_kg_per_kwh: float = DEFAULT_CO2_KG_PER_KWH,
) -> CostResult:
    """Estimate time, GPU-hours, energy and cost. Raises FieldError naming the bad field."""
    n = _count("params", params)
    t = _count("tokens", tokens)
    if gpu not in GPUS:
        raise FieldError("gpu", f"unknown GPU {gpu!r}; use {list(GPUS)}")
    spec = GPUS[gpu]
    whole = isinstance(gpus, int) and not isinstance(gpus, bool)
    whole = whole or isinstance(gpus, float) and gpus.is_integer()  # False for inf and NaN
    if not whole or not 1 <= gpus <= GPUS_MAX:
        raise FieldError("gpus", f"must be a whole number from 1 to {GPUS_MAX:,}")
    if not UTILISATION_MIN <= utilisation <= 1:  # also refuses NaN
        raise FieldError("utilisation", f"must be from {UTILISATION_MIN:g} to 1")
    peak = spec.bf16_tflops if peak_tflops is None else peak_tflops
    power = spec.power_w if power_w is None else power_w
    price = spec.price_per_hour if price_per_gpu_hour is None else price_per_gpu_hour
    if not PEAK_TFLOPS_MIN <= peak <= PEAK_TFLOPS_MAX:
        raise FieldError(
            "peak_tflops", f"must be from {PEAK_TFLOPS_MIN:g} to {PEAK_TFLOPS_MAX:g} TFLOP/s"
        )
    if not 0 < power <= POWER_W_MAX:
        raise FieldError("power_w", f"must be more than 0 and at most {POWER_W_MAX:g} W")
    if not 1 <= pue <= PUE_MAX:
        raise FieldError("pue", f"must be from 1 (no overhead) to {PUE_MAX:g}")
    if not 0 <= price <= PRICE_PER_GPU_HOUR_MAX:
        raise FieldError("price_per_gpu_hour", f"must be from 0 to {PRICE_PER_GPU_HOUR_MAX:g}")
    if not 0 <= kwh_price <= KWH_PRICE_MAX:
        raise FieldError("kwh_price", f"must be from 0 to {KWH_PRICE_MAX:g}")
    if not 0 <= co2_kg_per_kwh <= CO2_KG_PER_KWH_MAX:
        raise FieldError("co2_kg_per_kwh", f"must be from 0 to {CO2_KG_PER_KWH_MAX:g} kg")

    flops = FLOPS_PER_PARAM_PER_TOKEN * n * t
    seconds = flops / (gpus * peak * 1e12 * utilisation)
    gpu_hours = gpus * seconds / 3600
    energy_kwh = power / 1000 * gpu_hours * pue
    inputs = CostInputs(
        n, t, gpu, int(gpus), utilisation, peak, power, pue, price, kwh_price, co2_kg_per_kwh
    )
    return CostResult(
        inputs=inputs,
        flops=flops,
        seconds=seconds,
        days=seconds / 86400,
        gpu_hours=gpu_hours,
        energy_kwh=energy_kwh,
        homes_for_a_year=energy_kwh / HOME_KWH_PER_YEAR,
        rental_cost=gpu_hours * price,
        electricity_cost=energy_kwh * kwh_price,
        interruptions=gpu_hours * INTERRUPTIONS_PER_GPU_HOUR,
        interruptions_per_day=interruptions_per_day(int(gpus)),
        co2_tonnes=energy_kwh * co2_kg_per_kwh / 1000,
        assumptions=[
            "Work = 6 x parameters x tokens floating-point operations (forward 2 + backward 4).",
            f"Time = work / (GPUs x {peak:g} TFLOP/s peak x {utilisation:.0%} utilisation).",
            f"Energy = {power:g} W per GPU x GPU-hours x PUE {pue:g}; board power only, so "
            "CPUs, memory and network would add more.",
            f"Rental = GPU-hours x ${price:g} per GPU-hour. {PRICE_NOTE}",
            f"Electricity = energy x ${kwh_price:g} per kWh.",
            f"CO2 = energy x {co2_kg_per_kwh:g} kg per kWh, the grid's average (US, 2023).",
            "Homes: an average US home uses about 10,500 kWh a year (US EIA).",
            f"Interruptions: {INTERRUPTIONS_PER_GPU_HOUR * 1e6:.1f} per million GPU-hours, "
            "the rate of Llama 3's pre-training (419 in 54 days on 16,384 H100s).",
            "Rough figures, as of 2026: good to an order of magnitude, not to the dollar.",
        ],
        sources=[
            spec.source,
            "Kaplan et al. 2020, Scaling Laws for Neural Language Models (6ND rule)",
            "US Energy Information Administration, residential electricity use",
            INTERRUPTION_SOURCE,
            CO2_SOURCE,
        ],
    )


def _count(field: str, value: float | str) -> float:
    try:
        return parse_count(value)
    except ValueError as e:
        raise FieldError(field, str(e)) from None


# ---- the whole-run estimator ------------------------------------------------------------------


@dataclass
class EstimateResult:
    """A whole training run: the figures `trainingrun estimate --json` prints."""

    params: float
    active_params: float
    tokens: float
    gpu: str
    gpu_label: str
    gpus: int
    precision: str
    mfu: float
    peak_tflops: float
    flops: float
    gpu_hours: float
    days: float
    energy_mwh: float
    co2_tonnes: float  # energy x the grid's CO2 a kWh
    cost_usd: float  # GPU rental
    electricity_usd: float
    interruptions: float  # expected over the run
    interruptions_per_day: float
    pue: float
    price_per_gpu_hour: float
    assumptions: list[str]
    sources: list[str]
    # What the interruptions cost (restarts, rework, checkpoint writes) and the checkpoint
    # interval that costs least; None when they come faster than a restart (app/labs/goodput.py).
    goodput: Goodput | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def gpu_id(gpu: str) -> str:
    """A calculator GPU id from an id or one of its other names (b200)."""
    return GPU_ALIASES.get(gpu, gpu)


def peak_tflops_for(gpu: str, precision: str) -> float:
    """The GPU's dense tensor-core peak in `precision`; FieldError if it has none."""
    gpu = gpu_id(gpu)
    if gpu not in GPUS:
        raise FieldError("gpu", f"unknown GPU {gpu!r}; use {[*GPUS, *GPU_ALIASES]}")
    if precision not in PRECISION_CHOICES:
        raise FieldError("precision", f"must be one of {', '.join(PRECISION_CHOICES)}")
    sheet = GPUS[gpu].datasheet
    if precision == "fp8":
        if not sheet.fp8_flops:
            raise FieldError("precision", f"the {sheet.label} has no FP8 tensor cores")
        return sheet.fp8_flops / 1e12
    return sheet.bf16_flops / 1e12


def estimate(
    params: float | str,
    tokens: float | str,
    gpu: str = "h100-80gb",
    *,
    active_params: float | str | None = None,
    gpus: int = 1024,
    mfu: float = DEFAULT_UTILISATION,
    precision: str = "bf16",
    pue: float = DEFAULT_PUE,
    price_per_gpu_hour: float | None = None,
    kwh_price: float = DEFAULT_KWH_PRICE,
    storage_tbps: float = STORAGE_TBPS,
    restart_s: float = RESTART_S,
    co2_kg_per_kwh: float = DEFAULT_CO2_KG_PER_KWH,
) -> EstimateResult:
    """FLOPs (6 x active parameters x tokens), GPU-hours at `mfu` of the GPU's dense peak in
    `precision`, days on `gpus`, energy with PUE, rental cost, expected interruptions and
    what they cost (checkpoints of all `params` written at `storage_tbps`, each restart
    `restart_s`, at Young's interval). Raises FieldError naming the bad field."""
    total = _count("params", params)
    active = total if active_params is None else _count("active_params", active_params)
    if active > total:
        raise FieldError("active_params", "cannot be more than params")
    gpu = gpu_id(gpu)
    peak = peak_tflops_for(gpu, precision)
    r = compute_cost(
        active,
        tokens,
        gpu,
        gpus=gpus,
        utilisation=mfu,
        peak_tflops=peak,
        pue=pue,
        price_per_gpu_hour=price_per_gpu_hour,
        kwh_price=kwh_price,
        co2_kg_per_kwh=co2_kg_per_kwh,
    )
    try:
        lost: Goodput | None = goodput(
            total,
            r.inputs.gpus,
            r.seconds / 3600,
            INTERRUPTIONS_PER_GPU_HOUR,
            storage_tbps=storage_tbps,
            restart_s=restart_s,
        )
    except FieldError as e:
        if e.field != "gpus":
            raise
        lost = None  # interruptions faster than a restart: the run never finishes
    spec = GPUS[gpu]
    note = []
    if spec.datasheet.half_format != "BF16" and precision == "bf16":
        note = [f"The {spec.label} has no BF16: its {spec.datasheet.half_format} peak is used."]
    moe = (
        []
        if active == total
        else [f"Mixture of experts: {active:,.0f} of {total:,.0f} parameters work on each token."]
    )
    return EstimateResult(
        params=total,
        active_params=active,
        tokens=r.inputs.tokens,
        gpu=gpu,
        gpu_label=spec.label,
        gpus=r.inputs.gpus,
        precision=precision,
        mfu=mfu,
        peak_tflops=peak,
        flops=r.flops,
        gpu_hours=r.gpu_hours,
        days=r.days,
        energy_mwh=r.energy_kwh / 1000,
        co2_tonnes=r.co2_tonnes,
        cost_usd=r.rental_cost,
        electricity_usd=r.electricity_cost,
        interruptions=r.interruptions,
        interruptions_per_day=r.interruptions_per_day,
        pue=pue,
        price_per_gpu_hour=r.inputs.price_per_gpu_hour,
        assumptions=[
            f"Work = 6 x {active:,.0f} active parameters x {r.inputs.tokens:,.0f} tokens.",
            f"{precision.upper()} peak {peak:,g} TFLOP/s per GPU (dense) at {mfu:.0%} MFU.",
            *note,
            *moe,
            *r.assumptions[2:],
            f"Checkpoints: {CHECKPOINT_BYTES_PER_PARAM:g} bytes a parameter (BF16 weights, "
            f"FP32 master and two AdamW moments) written at {storage_tbps:g} TB/s; "
            f"each restart {restart_s / 60:g} minutes plus half an interval of lost work; "
            "the interval by Young's rule, sqrt(2 x write time x time between interruptions).",
        ],
        sources=[*r.sources, YOUNG_SOURCE, STORAGE_SOURCE, RESTART_SOURCE],
        goodput=lost,
    )


def implied_mfu(
    params: float | str, tokens: float | str, gpu: str, gpu_hours: float, precision: str = "bf16"
) -> float:
    """The MFU a published run's GPU-hours imply: 6ND / (GPU-hours x 3600 x peak)."""
    n, t = _count("params", params), _count("tokens", tokens)
    return (
        FLOPS_PER_PARAM_PER_TOKEN
        * n
        * t
        / (gpu_hours * 3600 * peak_tflops_for(gpu, precision) * 1e12)
    )
