"""Public figures for the GPUs and number formats the concept labs reason about.

Every figure names where it comes from. Memory and peak throughput are from NVIDIA's public
datasheets; board power is the maximum thermal design power (TDP) of the SXM part; rental
prices are rough 2026 cloud on-demand figures, labelled as such wherever they are shown.
Memory is in decimal gigabytes (1 GB = 1e9 bytes), as the datasheets count it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

GB = 1e9

# Bytes per number for each precision the calculator offers.
PRECISIONS: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int4": 0.5,
}

PRECISION_LABELS: dict[str, str] = {
    "fp32": "FP32 (4 bytes)",
    "bf16": "BF16 (2 bytes)",
    "fp16": "FP16 (2 bytes)",
    "fp8": "FP8 (1 byte)",
    "int4": "INT4 (half a byte)",
}


@dataclass(frozen=True)
class GpuSpec:
    id: str
    label: str
    memory_gb: float  # on-package HBM, decimal GB
    bf16_tflops: float  # dense (no sparsity) BF16 tensor-core peak
    power_w: float  # board TDP
    price_per_hour: float  # rough 2026 on-demand rental, USD per GPU-hour
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


GPUS: dict[str, GpuSpec] = {
    g.id: g
    for g in (
        GpuSpec(
            id="a100-40gb",
            label="NVIDIA A100 40 GB",
            memory_gb=40,
            bf16_tflops=312,
            power_w=400,
            price_per_hour=1.2,
            source="NVIDIA A100 Tensor Core GPU datasheet (SXM4 40 GB: 312 TFLOPS BF16, 400 W)",
        ),
        GpuSpec(
            id="a100-80gb",
            label="NVIDIA A100 80 GB",
            memory_gb=80,
            bf16_tflops=312,
            power_w=400,
            price_per_hour=1.5,
            source="NVIDIA A100 Tensor Core GPU datasheet (SXM4 80 GB: 312 TFLOPS BF16, 400 W)",
        ),
        GpuSpec(
            id="h100-80gb",
            label="NVIDIA H100 80 GB",
            memory_gb=80,
            bf16_tflops=989,
            power_w=700,
            price_per_hour=2.5,
            source="NVIDIA H100 Tensor Core GPU datasheet (SXM5: 989 TFLOPS dense BF16, 700 W)",
        ),
        GpuSpec(
            id="h200-141gb",
            label="NVIDIA H200 141 GB",
            memory_gb=141,
            bf16_tflops=989,
            power_w=700,
            price_per_hour=3.5,
            source="NVIDIA H200 Tensor Core GPU datasheet (SXM: 141 GB HBM3e, 989 TFLOPS dense BF16, 700 W)",  # noqa: E501
        ),
        GpuSpec(
            id="b200-192gb",
            label="NVIDIA B200 192 GB",
            memory_gb=192,
            bf16_tflops=2250,
            power_w=1000,
            price_per_hour=5.0,
            source=(
                "NVIDIA Blackwell B200 launch specifications (192 GB HBM3e; HGX B200 systems "
                "expose 180 GB per GPU), HGX B200 datasheet (2.25 PFLOPS dense BF16 per GPU, "
                "1000 W)"
            ),
        ),
    )
}

PRICE_NOTE = "Rental prices are rough 2026 on-demand cloud figures; real contracts vary widely."

# Model sizes the calculator offers as one-click presets (parameters).
MODEL_PRESETS: dict[str, float] = {
    "1B": 1e9,
    "7B": 7e9,
    "13B": 13e9,
    "70B": 70e9,
    "175B": 175e9,
    "405B": 405e9,
    "1T": 1e12,
}

_SUFFIX = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


def parse_count(text: str | float | int) -> float:
    """Read a count such as "70B", "7.5b", "1T", "350M" or a plain number.

    Raises ValueError for anything that is not a positive, finite count.
    """
    if isinstance(text, bool):
        raise ValueError("must be a number such as 70B or 7e9")
    if isinstance(text, int | float):
        value = float(text)
    else:
        s = text.strip().replace(",", "").replace("_", "").upper()
        if not s:
            raise ValueError("must not be empty")
        scale = 1.0
        if s[-1] in _SUFFIX:
            scale = _SUFFIX[s[-1]]
            s = s[:-1]
        try:
            value = float(s) * scale
        except ValueError:
            raise ValueError(f"{text!r} is not a count such as 70B, 1T or 7e9") from None
    if not value > 0 or value == float("inf"):
        raise ValueError("must be greater than zero")
    return value
