"""The labs' GPU choices are the engine's datasheet entries, not a second copy of them."""

from __future__ import annotations

import pytest

from app.engine.hardware import B200_HGX, DATASHEETS
from app.engine.timing import PRESETS
from app.labs.hardware import GPU_DATASHEETS, GPUS

# Each simulated cluster and the calculator choice for the same GPU.
SAME_GPU = {"h100": "h100-80gb", "a100": "a100-80gb", "b200": "b200-180gb", "h800": "h800-80gb"}


def test_every_preset_has_a_calculator_choice_on_the_same_datasheet() -> None:
    assert set(SAME_GPU) == set(PRESETS)
    for preset, gpu in SAME_GPU.items():
        assert PRESETS[preset].datasheet is GPUS[gpu].datasheet is GPU_DATASHEETS[gpu]


def test_every_choice_is_an_engine_datasheet() -> None:
    engine = {id(s) for s in DATASHEETS.values()}
    assert {id(GPUS[g].datasheet) for g in GPUS} <= engine


@pytest.mark.parametrize("gpu", list(GPUS))
def test_choice_figures_are_the_datasheet_in_calculator_units(gpu: str) -> None:
    spec, sheet = GPUS[gpu], GPUS[gpu].datasheet
    assert spec.label == sheet.label and spec.source == sheet.source
    assert spec.memory_gb * 1e9 == sheet.memory_bytes
    assert spec.bf16_tflops * 1e12 == sheet.bf16_flops
    assert spec.power_w == sheet.power_w
    assert spec.price_per_hour > 0  # the one lab-only figure


def test_b200_choice_is_the_hgx_180_gb() -> None:
    # NVIDIA HGX B200: 1.44 TB HBM3e for 8 GPUs, so 180 GB per GPU; the id stays for the page.
    b = GPUS["b200-180gb"]
    assert b.datasheet is B200_HGX
    assert b.memory_gb == 180
    assert b.label == "NVIDIA B200 (HGX, 180 GB)"
    assert b.bf16_tflops == 2250 and b.power_w == 1000


def test_h200_and_a100_choices_match_their_datasheets() -> None:
    assert (GPUS["h200-141gb"].memory_gb, GPUS["h200-141gb"].bf16_tflops) == (141, 989)
    assert (GPUS["a100-40gb"].memory_gb, GPUS["a100-40gb"].bf16_tflops) == (40, 312)
    assert GPUS["a100-40gb"].datasheet.hbm_bytes_per_s == 1_555e9  # A100 40GB SXM: 1,555 GB/s
