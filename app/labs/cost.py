"""Cost and energy of a training run, from a handful of visible, editable assumptions.

- Work: about 6 x parameters x tokens floating-point operations (2 for the forward pass,
  4 for the backward pass, per parameter per token; Kaplan et al. 2020, Hoffmann et al. 2022).
- Time: work / (GPUs x peak FLOP/s x utilisation). Utilisation (model FLOPs utilisation,
  MFU) of 30-50% is typical of large published runs.
- Energy: GPU board power x GPU-hours x PUE (the data centre's overhead for cooling and
  power delivery). Board power alone leaves out CPUs, memory and network, so it is a floor.
- Cost: GPU-hours x rental price per GPU-hour (rough 2026 figures), and separately the
  electricity at a stated price per kWh.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .hardware import GPUS, PRICE_NOTE, parse_count
from .memory import FieldError

FLOPS_PER_PARAM_PER_TOKEN = 6.0
DEFAULT_UTILISATION = 0.40
DEFAULT_PUE = 1.2  # efficient hyperscale sites report 1.1-1.2; the industry average is ~1.5
DEFAULT_KWH_PRICE = 0.10  # USD per kWh, rough industrial rate
# US Energy Information Administration: an average US home used about 10,500 kWh in a year.
HOME_KWH_PER_YEAR = 10_500.0

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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

    flops = FLOPS_PER_PARAM_PER_TOKEN * n * t
    seconds = flops / (gpus * peak * 1e12 * utilisation)
    gpu_hours = gpus * seconds / 3600
    energy_kwh = power / 1000 * gpu_hours * pue
    inputs = CostInputs(n, t, gpu, int(gpus), utilisation, peak, power, pue, price, kwh_price)
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
        assumptions=[
            "Work = 6 x parameters x tokens floating-point operations (forward 2 + backward 4).",
            f"Time = work / (GPUs x {peak:g} TFLOP/s peak x {utilisation:.0%} utilisation).",
            f"Energy = {power:g} W per GPU x GPU-hours x PUE {pue:g}; board power only, so "
            "CPUs, memory and network would add more.",
            f"Rental = GPU-hours x ${price:g} per GPU-hour. {PRICE_NOTE}",
            f"Electricity = energy x ${kwh_price:g} per kWh.",
            "Homes: an average US home uses about 10,500 kWh a year (US EIA).",
            "Rough figures, as of 2026: good to an order of magnitude, not to the dollar.",
        ],
        sources=[
            spec.source,
            "Kaplan et al. 2020, Scaling Laws for Neural Language Models (6ND rule)",
            "US Energy Information Administration, residential electricity use",
        ],
    )


def _count(field: str, value: float | str) -> float:
    try:
        return parse_count(value)
    except ValueError as e:
        raise FieldError(field, str(e)) from None
