"""The GPU memory calculator's rules, checked against worked examples from public sources."""

from __future__ import annotations

import math

import pytest

from app.labs.hardware import GPUS, PRECISIONS, parse_count
from app.labs.memory import FieldError, compute_memory, format_bytes, gpus_to_serve, serving_from

GB = 1e9


def test_70b_bf16_h100_matches_the_explainer() -> None:
    r = compute_memory("70B", "bf16", "h100-80gb")
    assert r.weights_bytes == pytest.approx(140 * GB)
    assert format_bytes(r.weights_bytes) == "140 GB"
    # 168 GB over 72 GB usable: 3 would hold it; deployments split 70B's heads over 4.
    assert r.gpus_to_serve == 4
    assert r.training_bytes == pytest.approx(1.12e12)
    assert format_bytes(r.training_bytes) == "1.12 TB"
    assert r.gpus_to_fit_training == 16  # 1120 / 72 = 15.6
    assert r.usable_bytes_per_gpu == pytest.approx(72 * GB)


def test_zero_paper_baseline_7_5b_is_120_gb() -> None:
    # Rajbhandari et al. (ZeRO): 7.5B parameters x 16 bytes (mixed-precision Adam) = 120 GB.
    r = compute_memory("7.5B", "bf16", "a100-80gb")
    assert r.training_bytes == pytest.approx(120 * GB)
    parts = {p.name: p.bytes for p in r.training_parts}
    assert parts["weights"] == pytest.approx(15 * GB)
    assert parts["gradients"] == pytest.approx(15 * GB)
    optimizer = parts["master"] + parts["momentum"] + parts["variance"]
    assert optimizer == pytest.approx(90 * GB)  # K = 12 bytes per parameter
    assert sum(parts.values()) == pytest.approx(r.training_bytes)


def test_18_byte_variant_is_6_plus_12() -> None:
    r = compute_memory("1B", "bf16", "h100-80gb")
    assert r.training_bytes_fp32_grads == pytest.approx(18 * GB)
    assert r.training_bytes_fp32_grads / r.params == pytest.approx(6 + 12)


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_precision_scales_weights_and_serving_only(precision: str) -> None:
    r = compute_memory("70B", precision, "h100-80gb")
    assert r.weights_bytes == pytest.approx(70e9 * PRECISIONS[precision])
    assert r.serve_bytes == pytest.approx(r.weights_bytes * 1.2)
    fewest = math.ceil(r.serve_bytes / (72 * GB))
    assert r.gpus_to_serve == next(n for n in (1, 2, 4, 8, 16, 24, 32) if n >= fewest)
    assert r.training_bytes == pytest.approx(1.12e12)


def test_gpus_to_serve_is_a_tensor_parallel_size() -> None:
    """1, 2, 4 or 8 GPUs of a server, then whole servers: never 3 or 7 (the issue a
    deployment meets: 64 heads do not split 3 ways)."""
    for fewest, size in ((1, 1), (2, 2), (3, 4), (5, 8), (7, 8), (8, 8), (9, 16), (17, 24)):
        assert gpus_to_serve(fewest * 72 * GB - 1, 72 * GB) == size, fewest
    # Llama 3 405B in bf16: 972 GB over 72 GB usable holds on 14; served on two servers.
    assert compute_memory("405B", "bf16", "h100-80gb").gpus_to_serve == 16


def test_lower_precision_needs_fewer_gpus_to_serve() -> None:
    serve = [compute_memory("405B", p, "h100-80gb").gpus_to_serve for p in PRECISIONS]
    assert serve == sorted(serve, reverse=True)
    assert serve[0] > serve[-1]


def test_bigger_gpu_needs_fewer_gpus() -> None:
    a = compute_memory("70B", "bf16", "a100-40gb")
    b = compute_memory("70B", "bf16", "b200-180gb")
    assert a.gpus_to_fit_training == math.ceil(1120 / 36)
    # HGX B200 exposes 180 GB per GPU (1.44 TB over 8): 162 GB usable, so 7 GPUs.
    assert b.gpu_memory_bytes == 180 * GB
    assert b.gpus_to_fit_training == math.ceil(1120 / (180 * 0.9)) == 7
    # Serving 70B in bf16 takes 168 GB, just over one HGX B200's 162 GB usable.
    assert a.gpus_to_serve > b.gpus_to_serve == 2


@pytest.mark.parametrize("gpu", list(GPUS))
def test_usable_memory_is_90_percent_of_datasheet(gpu: str) -> None:
    r = compute_memory("13B", "fp16", gpu)
    assert r.usable_bytes_per_gpu == pytest.approx(GPUS[gpu].memory_gb * GB * 0.9)
    assert GPUS[gpu].source


def test_memory_case_for_the_scene() -> None:
    big = compute_memory("70B", "bf16", "h100-80gb").memory_case
    assert big.fits is False
    assert big.fraction == pytest.approx(1120 / 72)
    assert {p.name for p in big.parts} == {"weights", "grads", "optimizer"}
    assert sum(p.fraction for p in big.parts) == pytest.approx(big.fraction)
    assert big.label == "70B params, training on one NVIDIA H100 SXM 80 GB"
    small = compute_memory("1B", "bf16", "h100-80gb").memory_case
    assert small.fits is True
    assert small.fraction == pytest.approx(16 / 72)
    assert big.gpus is None  # every wall of the scene shows the one-GPU case


@pytest.mark.parametrize("params", ["1B", "13B", "70B", "405B", "1T", "7.5B"])
def test_spread_case_shares_the_state_over_the_gpus_to_fit(params: str) -> None:
    r = compute_memory(params, "bf16", "h100-80gb")
    spread = r.spread_case
    assert spread.gpus == r.gpus_to_fit_training
    assert spread.fraction == pytest.approx(r.memory_case.fraction / spread.gpus)
    assert spread.fraction <= 1.0 + 1e-9 and spread.fits is True
    assert sum(p.fraction for p in spread.parts) == pytest.approx(spread.fraction)
    assert [p.name for p in spread.parts] == [p.name for p in r.memory_case.parts]


def test_spread_case_for_70b_is_sixteen_shares() -> None:
    spread = compute_memory("70B", "bf16", "h100-80gb").spread_case
    assert spread.gpus == 16
    assert spread.fraction == pytest.approx(1120 / 72 / 16)  # 70 GB of 72 GB usable
    assert spread.label == "70B params, shared over 16 GPUs"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("0", "bf16", "h100-80gb"), "params"),
        (("-7B", "bf16", "h100-80gb"), "params"),
        (("lots", "bf16", "h100-80gb"), "params"),
        (("7B", "fp12", "h100-80gb"), "precision"),
        (("7B", "bf16", "tpu-v5"), "gpu"),
    ],
)
def test_invalid_input_names_the_field(args: tuple[str, str, str], field: str) -> None:
    with pytest.raises(FieldError) as e:
        compute_memory(*args)
    assert e.value.field == field


@pytest.mark.parametrize(
    ("text", "value"),
    [("70B", 70e9), ("7.5b", 7.5e9), ("1T", 1e12), ("350M", 350e6), ("7e9", 7e9), (13e9, 13e9)],
)
def test_parse_count(text: str | float, value: float) -> None:
    assert parse_count(text) == pytest.approx(value)


def test_serving_counts_the_key_value_cache_of_its_traffic() -> None:
    """Llama 3 70B (80 layers, 8 KV heads of 128) serving 32 requests of 8K tokens in BF16:
    2 x 80 x 8 x 128 x 8,192 x 32 numbers of 2 bytes = 85.9 GB beside 140 GB of weights,
    which the old 'weights + 20%' (28 GB) left out."""
    r = compute_memory(
        "70B", "bf16", "h100-80gb", serving_from("llama3-70b", context=8192, batch=32)
    )
    assert r.kv_cache_bytes == 2 * 80 * 8 * 128 * 8192 * 32 * 2 == pytest.approx(85.9e9, rel=1e-3)
    assert r.serve_bytes == pytest.approx(140e9 + r.kv_cache_bytes)
    assert r.gpus_to_serve == 4  # 226 GB over 72 GB usable: 3.1, so the 4-way split
    # The same by its numbers; FP8 halves the cache with the weights.
    same = serving_from(None, 80, 8, 128, 8192, 32)
    assert compute_memory("70B", "bf16", "h100-80gb", same).serve_bytes == r.serve_bytes
    assert compute_memory("70B", "fp8", "h100-80gb", same).kv_cache_bytes == r.kv_cache_bytes / 2
    # No traffic given: the rule of thumb, and no cache counted.
    assert (
        serving_from() is None and compute_memory("70B", "bf16", "h100-80gb").kv_cache_bytes is None
    )


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"shape": "llama3-70b", "context": 8192}, "batch"),
        ({"context": 8192, "batch": 1}, "layers"),
        ({"shape": "gpt-5"}, "shape"),
    ],
)
def test_serving_traffic_says_what_is_missing(kwargs: dict, field: str) -> None:
    with pytest.raises(FieldError) as e:
        serving_from(**kwargs)
    assert e.value.field == field
