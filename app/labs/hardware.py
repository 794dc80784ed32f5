"""The GPUs and number formats the concept labs reason about.

The GPU figures (memory, peak throughput, board power and the document they come from) are
the engine's datasheet entries in app/engine/hardware.py, the same ones the simulated cluster
runs on; this module only picks which GPUs the calculators offer and adds what is theirs
alone: a rough rental price, labelled as such wherever it is shown. Memory is in decimal
gigabytes (1 GB = 1e9 bytes) and throughput in TFLOP/s, as the datasheets count them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from app.engine.hardware import (
    A100_SXM_40GB,
    A100_SXM_80GB,
    B200_HGX,
    H100_SXM,
    H200_SXM,
    H800_SXM,
    V100_SXM2_32GB,
    GpuDatasheet,
)

GB = 1e9
TFLOPS = 1e12

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
    """One GPU choice, in the units the calculators show; also the options API's item."""

    id: str
    label: str
    memory_gb: float  # on-package HBM, decimal GB
    bf16_tflops: float  # dense (no sparsity) BF16 tensor-core peak
    power_w: float  # board TDP
    price_per_hour: float  # rough 2026 on-demand rental, USD per GPU-hour
    source: str

    @classmethod
    def of(cls, id: str, sheet: GpuDatasheet, price_per_hour: float) -> GpuSpec:
        return cls(
            id=id,
            label=sheet.label,
            memory_gb=sheet.memory_bytes / GB,
            bf16_tflops=sheet.bf16_flops / TFLOPS,
            power_w=sheet.power_w,
            price_per_hour=price_per_hour,
            source=sheet.source,
        )

    @property
    def datasheet(self) -> GpuDatasheet:
        return GPU_DATASHEETS[self.id]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# id -> (datasheet, rough 2026 on-demand rental in USD per GPU-hour). The ids are part of the
# API and the page; each names the memory a job gets on that GPU.
_CHOICES: dict[str, tuple[GpuDatasheet, float]] = {
    "a100-40gb": (A100_SXM_40GB, 1.2),
    "a100-80gb": (A100_SXM_80GB, 1.5),
    "h100-80gb": (H100_SXM, 2.5),
    "h200-141gb": (H200_SXM, 3.5),
    "b200-180gb": (B200_HGX, 5.0),
    # DeepSeek-V3 Technical Report: "assuming the rental price of the H800 GPU is $2 per GPU
    # hour".
    "h800-80gb": (H800_SXM, 2.0),
    "v100-32gb": (V100_SXM2_32GB, 0.8),
}

# Other names the command line takes for a choice.
GPU_ALIASES: dict[str, str] = {"b200": "b200-180gb"}

GPU_DATASHEETS: dict[str, GpuDatasheet] = {id: sheet for id, (sheet, _) in _CHOICES.items()}

GPUS: dict[str, GpuSpec] = {
    id: GpuSpec.of(id, sheet, price) for id, (sheet, price) in _CHOICES.items()
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
# The largest count the calculators take: 10,000 trillion parameters or tokens, far beyond
# any real run, and small enough that every figure worked out from it stays a finite number.
MAX_COUNT = 1e16
MAX_COUNT_TEXT = "1e16 (10,000T)"


def parse_count(text: str | float | int) -> float:
    """Read a count such as "70B", "7.5b", "1T", "350M" or a plain number.

    Raises ValueError for anything that is not a positive, finite count up to MAX_COUNT.
    """
    if isinstance(text, bool):
        raise ValueError("must be a number such as 70B or 7e9")
    if isinstance(text, int | float):
        try:
            value = float(text)
        except OverflowError:  # an int beyond any float
            value = math.inf
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
            shown = text if len(text) <= 24 else text[:21] + "..."
            raise ValueError(f"{shown!r} is not a count such as 70B, 1T or 7e9") from None
    if math.isnan(value):
        raise ValueError("must be a number such as 70B or 7e9")
    if not value > 0:
        raise ValueError("must be greater than zero")
    if value > MAX_COUNT:
        raise ValueError(f"must be at most {MAX_COUNT_TEXT}")
    return value
