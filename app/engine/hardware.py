"""GPU datasheets: the per-GPU figures every part of the app reads, each written once.

The timing presets (app/engine/timing.py) and the concept labs (app/labs/hardware.py) both
refer to these entries rather than repeating their numbers. Figures are from the named
public specifications, in decimal units as the datasheets count them (1 GB = 1e9 bytes).
FLOP/s are dense tensor-core peaks, without structured sparsity: BF16 (FP16 on the V100,
which has no BF16; mixed-precision training on it used FP16), and FP8 where the GPU has it.
NVLink is one direction per GPU: the datasheets quote both directions added together, so
they show twice the figure kept here. Power is the board's maximum thermal design power (TDP).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuDatasheet:
    label: str
    memory_bytes: int  # HBM per GPU
    bf16_flops: float  # dense BF16 tensor-core peak, FLOP/s
    hbm_bytes_per_s: float
    nvlink_bytes_per_s: float  # per GPU, one direction
    power_w: float  # board maximum TDP
    document: str  # the public specification the figures come from
    fp8_flops: float | None = None  # dense FP8 tensor-core peak, FLOP/s; None: no FP8
    half_format: str = "BF16"  # the 16-bit format of `bf16_flops` (FP16 on the V100)

    @property
    def source(self) -> str:
        """The document and the figures taken from it, as shown next to every result."""
        fp8 = f"{self.fp8_flops / 1e12:,g} TFLOPS dense FP8, " if self.fp8_flops else ""
        return (
            f"{self.document}: {self.memory_bytes / 1e9:g} GB HBM at "
            f"{self.hbm_bytes_per_s / 1e9:,.0f} GB/s, "
            f"{self.bf16_flops / 1e12:,g} TFLOPS dense {self.half_format}, {fp8}"
            f"NVLink {2 * self.nvlink_bytes_per_s / 1e9:,.0f} GB/s (both directions), "
            f"{self.power_w:,.0f} W"
        )


A100_SXM_40GB = GpuDatasheet(
    label="NVIDIA A100 SXM 40 GB",
    memory_bytes=40 * 10**9,
    bf16_flops=312e12,
    hbm_bytes_per_s=1_555e9,
    nvlink_bytes_per_s=300e9,
    power_w=400.0,
    document="NVIDIA A100 Tensor Core GPU datasheet (A100 40GB SXM)",
)

A100_SXM_80GB = GpuDatasheet(
    label="NVIDIA A100 SXM 80 GB",
    memory_bytes=80 * 10**9,
    bf16_flops=312e12,
    hbm_bytes_per_s=2_039e9,
    nvlink_bytes_per_s=300e9,
    power_w=400.0,
    document="NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM)",
)

H100_SXM = GpuDatasheet(
    label="NVIDIA H100 SXM 80 GB",
    memory_bytes=80 * 10**9,
    bf16_flops=989e12,
    hbm_bytes_per_s=3_350e9,
    nvlink_bytes_per_s=450e9,
    power_w=700.0,
    document="NVIDIA H100 Tensor Core GPU datasheet (H100 SXM)",
    fp8_flops=1_979e12,
)

# The H800 is the H100 SXM with its NVLink cut to 400 GB/s (both directions) for export;
# compute, memory and power are the H100 SXM's. DeepSeek-V3 trained on it.
H800_SXM = GpuDatasheet(
    label="NVIDIA H800 SXM 80 GB",
    memory_bytes=80 * 10**9,
    bf16_flops=989e12,
    hbm_bytes_per_s=3_350e9,
    nvlink_bytes_per_s=200e9,
    power_w=700.0,
    document="NVIDIA H800 Tensor Core GPU datasheet (H800 SXM5)",
    fp8_flops=1_979e12,
)

H200_SXM = GpuDatasheet(
    label="NVIDIA H200 SXM 141 GB",
    memory_bytes=141 * 10**9,
    bf16_flops=989e12,
    hbm_bytes_per_s=4_800e9,
    nvlink_bytes_per_s=450e9,
    power_w=700.0,
    document="NVIDIA H200 Tensor Core GPU datasheet (H200 SXM)",
    fp8_flops=1_979e12,
)

# HGX B200 quotes its eight GPUs together; one GPU's share is an eighth. The B200 package
# carries 192 GB, but HGX systems expose 180 GB of it per GPU, and that is what a job gets.
HGX_B200_GPUS = 8
B200_HGX = GpuDatasheet(
    label="NVIDIA B200 (HGX, 180 GB)",
    memory_bytes=1_440 * 10**9 // HGX_B200_GPUS,
    bf16_flops=18e15 / HGX_B200_GPUS,
    hbm_bytes_per_s=64e12 / HGX_B200_GPUS,
    nvlink_bytes_per_s=900e9,
    power_w=1000.0,
    document=(
        "NVIDIA HGX B200 specifications (8 GPUs: 1.44 TB HBM3e at 64 TB/s, "
        "18 PFLOPS dense FP16/BF16, 36 PFLOPS dense FP8; one GPU's eighth shown)"
    ),
    fp8_flops=36e15 / HGX_B200_GPUS,
)

# The V100 has no BF16: its tensor cores run FP16, and mixed-precision training on it used
# FP16 with loss scaling; 125 TFLOPS is that FP16 tensor peak (SXM2).
V100_SXM2_32GB = GpuDatasheet(
    label="NVIDIA V100 SXM2 32 GB",
    memory_bytes=32 * 10**9,
    bf16_flops=125e12,
    hbm_bytes_per_s=900e9,
    nvlink_bytes_per_s=150e9,
    power_w=300.0,
    document="NVIDIA Tesla V100 GPU datasheet (V100 SXM2)",
    half_format="FP16",
)

DATASHEETS: dict[str, GpuDatasheet] = {
    "a100-sxm-40gb": A100_SXM_40GB,
    "a100-sxm-80gb": A100_SXM_80GB,
    "h100-sxm": H100_SXM,
    "h200-sxm": H200_SXM,
    "b200-hgx": B200_HGX,
    "h800-sxm": H800_SXM,
    "v100-sxm2-32gb": V100_SXM2_32GB,
}


# How often GPUs in a large synchronous job interrupt it: "The Llama 3 Herd of Models"
# (Meta, 2024), section 3.3.4: 419 unexpected interruptions during a 54-day snapshot of
# pre-training on 16,384 H100 GPUs. A job on N GPUs is interrupted about N times as often
# as one GPU (the estimator, the cost lab and the tour quote it).
LLAMA3_INTERRUPTIONS = 419
LLAMA3_DAYS = 54
LLAMA3_GPUS = 16_384
INTERRUPTIONS_PER_GPU_HOUR = LLAMA3_INTERRUPTIONS / (LLAMA3_GPUS * LLAMA3_DAYS * 24)
INTERRUPTION_SOURCE = (
    "The Llama 3 Herd of Models (Meta, 2024), section 3.3.4: 419 unexpected interruptions "
    "in 54 days on 16,384 H100 GPUs"
)
