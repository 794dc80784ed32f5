"""The calculators take only inputs for which every figure they give is a finite number, and
say what the limit is when an input is beyond it."""

from __future__ import annotations

import math
from dataclasses import asdict

import pytest

from app.labs.cost import compute_cost
from app.labs.hardware import MAX_COUNT, parse_count
from app.labs.memory import FieldError, compute_memory


def _numbers(obj: object) -> list[float]:
    if isinstance(obj, bool):
        return []
    if isinstance(obj, int | float):
        return [obj]
    if isinstance(obj, dict):
        return [n for v in obj.values() for n in _numbers(v)]
    if isinstance(obj, list | tuple):
        return [n for v in obj for n in _numbers(v)]
    return []


@pytest.mark.parametrize(
    "value", [1e308, 1e17, "1e17", "20000T", float("inf"), float("nan"), "nan", "inf", "-inf"]
)
def test_parse_count_refuses_huge_and_non_finite(value: object) -> None:
    with pytest.raises(ValueError) as e:
        parse_count(value)  # type: ignore[arg-type]
    if value in (1e308, 1e17, "1e17", "20000T"):
        assert "1e16" in str(e.value)


def test_parse_count_takes_the_limit_itself() -> None:
    assert parse_count(MAX_COUNT) == MAX_COUNT == 1e16
    assert parse_count("10000T") == 1e16


def test_parse_count_message_does_not_repeat_long_input() -> None:
    with pytest.raises(ValueError) as e:
        parse_count("z" * 10_000)
    assert len(str(e.value)) < 200


def test_memory_of_huge_models_is_refused_and_the_largest_is_finite() -> None:
    with pytest.raises(FieldError) as e:
        compute_memory(1e308, "bf16", "h100-80gb")
    assert e.value.field == "params"
    r = compute_memory(MAX_COUNT, "fp32", "a100-40gb")
    assert all(math.isfinite(n) for n in _numbers(asdict(r)))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"params": 1e308, "tokens": 1e308}, "params"),
        ({"tokens": "1e17"}, "tokens"),
        ({"utilisation": 1e-300}, "utilisation"),
        ({"utilisation": float("nan")}, "utilisation"),
        ({"peak_tflops": 1e-300}, "peak_tflops"),
        ({"peak_tflops": float("inf")}, "peak_tflops"),
        ({"power_w": 1e308}, "power_w"),
        ({"power_w": float("nan")}, "power_w"),
        ({"pue": float("nan")}, "pue"),
        ({"pue": 50}, "pue"),
        ({"price_per_gpu_hour": 1e308}, "price_per_gpu_hour"),
        ({"kwh_price": float("inf")}, "kwh_price"),
        ({"gpus": 10**9}, "gpus"),
        ({"gpus": True}, "gpus"),
    ],
)
def test_cost_inputs_out_of_range_name_the_field(kwargs: dict, field: str) -> None:
    args = {"params": "7B", "tokens": "1T", **kwargs}
    with pytest.raises(FieldError) as e:
        compute_cost(**args)
    assert e.value.field == field


def test_the_most_extreme_accepted_cost_is_still_finite() -> None:
    r = compute_cost(
        MAX_COUNT,
        MAX_COUNT,
        gpus=1,
        utilisation=0.001,
        peak_tflops=0.001,
        power_w=1e6,
        pue=5,
        price_per_gpu_hour=1e6,
        kwh_price=1e3,
    )
    numbers = _numbers(asdict(r))
    assert numbers and all(math.isfinite(n) for n in numbers)
