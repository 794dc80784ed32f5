"""GPU datasheets: each figure pinned to the public specification its entry names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.engine.hardware import (
    A100_SXM_40GB,
    A100_SXM_80GB,
    B200_HGX,
    DATASHEETS,
    H100_SXM,
    H200_SXM,
    H800_SXM,
    V100_SXM2_32GB,
    GpuDatasheet,
)

APP = Path(__file__).resolve().parents[2] / "app"

# (sheet, memory GB, dense BF16 TFLOPS, HBM GB/s, NVLink GB/s both directions, board W)
DATASHEET_FIGURES = [
    # NVIDIA A100 Tensor Core GPU datasheet, SXM columns.
    (A100_SXM_40GB, 40, 312, 1_555, 600, 400),
    (A100_SXM_80GB, 80, 312, 2_039, 600, 400),
    # NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column.
    (H100_SXM, 80, 989, 3_350, 900, 700),
    # NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column.
    (H200_SXM, 141, 989, 4_800, 900, 700),
    # NVIDIA HGX B200 specifications: 8 GPUs with 1.44 TB, 64 TB/s and 18 PFLOPS dense BF16
    # together; NVLink 5 at 1.8 TB/s per GPU; up to 1,000 W per GPU.
    (B200_HGX, 180, 2_250, 8_000, 1_800, 1_000),
    # NVIDIA H800 Tensor Core GPU datasheet, H800 SXM5 column: the H100 SXM's compute,
    # memory and power, NVLink 400 GB/s.
    (H800_SXM, 80, 989, 3_350, 400, 700),
    # NVIDIA Tesla V100 GPU datasheet, V100 SXM2: 32 GB HBM2 at 900 GB/s, 125 TFLOPS tensor
    # (FP16: the V100 has no BF16), NVLink 300 GB/s, 300 W.
    (V100_SXM2_32GB, 32, 125, 900, 300, 300),
]

# Dense FP8 tensor-core peaks (the datasheets quote twice these "with sparsity"): H100, H200
# and H800 SXM 1,979 TFLOPS; HGX B200 36 PFLOPS for 8 GPUs. The A100 and V100 have no FP8.
FP8_TFLOPS = {
    H100_SXM: 1_979,
    H200_SXM: 1_979,
    H800_SXM: 1_979,
    B200_HGX: 4_500,
    A100_SXM_40GB: None,
    A100_SXM_80GB: None,
    V100_SXM2_32GB: None,
}


@pytest.mark.parametrize(("sheet", "gb", "tflops", "hbm", "nvlink", "watts"), DATASHEET_FIGURES)
def test_figures_match_the_named_datasheet(
    sheet: GpuDatasheet, gb: float, tflops: float, hbm: float, nvlink: float, watts: float
) -> None:
    assert sheet.memory_bytes == gb * 10**9
    assert sheet.bf16_flops == tflops * 1e12
    assert sheet.hbm_bytes_per_s == hbm * 1e9
    assert sheet.nvlink_bytes_per_s * 2 == nvlink * 1e9  # kept one direction
    assert sheet.power_w == watts


def test_every_datasheet_is_pinned() -> None:
    assert {id(s) for s, *_ in DATASHEET_FIGURES} == {id(s) for s in DATASHEETS.values()}
    assert {id(s) for s in FP8_TFLOPS} == {id(s) for s in DATASHEETS.values()}


@pytest.mark.parametrize("sheet", list(DATASHEETS.values()), ids=list(DATASHEETS))
def test_fp8_peak_matches_the_datasheet(sheet: GpuDatasheet) -> None:
    expected = FP8_TFLOPS[sheet]
    assert sheet.fp8_flops == (None if expected is None else expected * 1e12)
    if expected:
        # FP8 doubles the BF16 rate (the datasheets round each figure on its own).
        assert sheet.fp8_flops == pytest.approx(2 * sheet.bf16_flops, rel=1e-3)


def test_v100_says_its_half_precision_is_fp16() -> None:
    assert V100_SXM2_32GB.half_format == "FP16" and "dense FP16" in V100_SXM2_32GB.source
    assert "BF16" not in V100_SXM2_32GB.source
    assert H800_SXM.nvlink_bytes_per_s < H100_SXM.nvlink_bytes_per_s
    assert (H800_SXM.bf16_flops, H800_SXM.memory_bytes) == (
        H100_SXM.bf16_flops,
        H100_SXM.memory_bytes,
    )


def test_b200_is_the_hgx_share_of_memory() -> None:
    # HGX B200: 1.44 TB of HBM3e over 8 GPUs is 180 GB each (the package holds 192 GB).
    assert B200_HGX.memory_bytes * 8 == 1_440 * 10**9
    assert B200_HGX.memory_bytes == 180 * 10**9
    assert "HGX" in B200_HGX.label and "180 GB" in B200_HGX.label
    assert "1.44 TB" in B200_HGX.document and "192" not in B200_HGX.source


@pytest.mark.parametrize("sheet", list(DATASHEETS.values()), ids=list(DATASHEETS))
def test_label_and_source_quote_the_figures_they_sit_next_to(sheet: GpuDatasheet) -> None:
    gb = f"{sheet.memory_bytes / 1e9:g} GB"
    assert gb in sheet.label
    assert sheet.source.startswith(sheet.document)
    for text in (gb, f"{sheet.bf16_flops / 1e12:,g} TFLOPS", f"{sheet.power_w:,.0f} W"):
        assert text in sheet.source


_FIGURE_KEYWORDS = {
    "memory_bytes",
    "bf16_flops",
    "flops",
    "hbm_bytes_per_s",
    "nvlink_bytes_per_s",
    "power_w",
    "memory_gb",
    "bf16_tflops",
}


def _is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        return _is_number(node.left) and _is_number(node.right)
    return isinstance(node, ast.UnaryOp) and _is_number(node.operand)


def test_per_gpu_figures_are_written_only_in_the_datasheet_module() -> None:
    written = []
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg in _FIGURE_KEYWORDS and _is_number(kw.value):
                        written.append(f"{path.relative_to(APP)}: {kw.arg}")
    assert written and all(w.startswith("engine/hardware.py") for w in written), written
