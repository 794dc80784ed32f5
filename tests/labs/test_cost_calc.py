"""Cost and energy estimates: the 6ND rule, GPU-hours, energy with PUE, and editable inputs."""

from __future__ import annotations

import pytest

from app.labs.cost import compute_cost
from app.labs.hardware import GPUS
from app.labs.memory import FieldError


def test_six_n_d_over_cluster_throughput() -> None:
    r = compute_cost("70B", "2T", "h100-80gb", gpus=1024, utilisation=0.4)
    assert r.flops == pytest.approx(6 * 70e9 * 2e12)
    expected_s = 8.4e23 / (1024 * 989e12 * 0.4)
    assert r.seconds == pytest.approx(expected_s)
    assert r.days == pytest.approx(expected_s / 86400)
    assert r.gpu_hours == pytest.approx(1024 * expected_s / 3600)
    assert r.energy_kwh == pytest.approx(0.7 * r.gpu_hours * 1.2)
    assert r.rental_cost == pytest.approx(r.gpu_hours * GPUS["h100-80gb"].price_per_hour)
    assert r.electricity_cost == pytest.approx(r.energy_kwh * 0.10)
    # The grid's CO2: the US average in 2023 (EIA: 0.81 lb, 0.37 kg, a kWh), sourced.
    assert r.co2_tonnes == pytest.approx(r.energy_kwh * 0.37 / 1000)
    assert any("0.37 kg" in src for src in r.sources)
    assert any("2026" in a for a in r.assumptions)


def test_doubling_gpus_halves_time_not_gpu_hours() -> None:
    a = compute_cost("7B", "1T", gpus=64)
    b = compute_cost("7B", "1T", gpus=128)
    assert b.seconds == pytest.approx(a.seconds / 2)
    assert b.gpu_hours == pytest.approx(a.gpu_hours)


def test_every_assumption_can_be_overridden() -> None:
    r = compute_cost(
        "1B",
        "20B",
        "a100-80gb",
        gpus=8,
        utilisation=0.5,
        peak_tflops=100,
        power_w=300,
        pue=1.5,
        price_per_gpu_hour=2.0,
        kwh_price=0.2,
        co2_kg_per_kwh=0.05,
    )
    hours = 6 * 1e9 * 20e9 / (8 * 100e12 * 0.5) / 3600
    assert r.gpu_hours == pytest.approx(8 * hours)
    assert r.energy_kwh == pytest.approx(0.3 * 8 * hours * 1.5)
    assert r.rental_cost == pytest.approx(2.0 * 8 * hours)
    assert r.electricity_cost == pytest.approx(0.2 * r.energy_kwh)
    assert r.co2_tonnes == pytest.approx(0.05 * r.energy_kwh / 1000)  # a low-carbon grid


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"params": "0"}, "params"),
        ({"tokens": "-1"}, "tokens"),
        ({"gpu": "nope"}, "gpu"),
        ({"gpus": 0}, "gpus"),
        ({"utilisation": 1.5}, "utilisation"),
        ({"pue": 0.9}, "pue"),
        ({"co2_kg_per_kwh": -0.1}, "co2_kg_per_kwh"),
    ],
)
def test_invalid_input_names_the_field(kwargs: dict, field: str) -> None:
    args = {"params": "7B", "tokens": "1T", **kwargs}
    with pytest.raises(FieldError) as e:
        compute_cost(**args)
    assert e.value.field == field
