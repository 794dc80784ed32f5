"""GPU datasheets: the per-GPU figures every part of the app reads, each written once.

The timing presets (app/engine/timing.py) and the concept labs (app/labs/hardware.py) both
refer to these entries rather than repeating their numbers. Figures are from the named
public specifications, in decimal units as the datasheets count them (1 GB = 1e9 bytes).
FLOP/s are dense BF16 tensor-core peaks, without structured sparsity. NVLink is one
direction per GPU: the datasheets quote both directions added together, so they show twice
the figure kept here. Power is the board's maximum thermal design power (TDP).
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

    @property
    def source(self) -> str:
        """The document and the figures taken from it, as shown next to every result."""
        return (
            f"{self.document}: {self.memory_bytes / 1e9:g} GB HBM at "
            f"{self.hbm_bytes_per_s / 1e9:,.0f} GB/s, "
            f"{self.bf16_flops / 1e12:,g} TFLOPS dense BF16, "
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
)

H200_SXM = GpuDatasheet(
    label="NVIDIA H200 SXM 141 GB",
    memory_bytes=141 * 10**9,
    bf16_flops=989e12,
    hbm_bytes_per_s=4_800e9,
    nvlink_bytes_per_s=450e9,
    power_w=700.0,
    document="NVIDIA H200 Tensor Core GPU datasheet (H200 SXM)",
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
        "18 PFLOPS dense FP16/BF16; one GPU's eighth shown)"
    ),
)

DATASHEETS: dict[str, GpuDatasheet] = {
    "a100-sxm-40gb": A100_SXM_40GB,
    "a100-sxm-80gb": A100_SXM_80GB,
    "h100-sxm": H100_SXM,
    "h200-sxm": H200_SXM,
    "b200-hgx": B200_HGX,
}
