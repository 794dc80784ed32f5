"""docs/truth.md lists published figures beside the product's own: each row's last column is
worked out again here, from the code, and must read as the page says."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from app.engine.activations import Recompute, layer_bytes
from app.engine.hardware import INTERRUPTIONS_PER_GPU_HOUR
from app.engine.lens import state_bytes
from app.engine.pipeline import simulate
from app.labs.cost import DEFAULT_CO2_KG_PER_KWH, estimate
from app.labs.memory import (
    FP32_GRADS_BYTES_PER_PARAM,
    compute_memory,
    format_bytes,
    serving_from,
)
from tests.test_estimate import MFU, PUBLISHED_RUNS

DOC = Path(__file__).resolve().parents[1] / "docs" / "truth.md"


def _gpu_hours(run: str) -> str:
    name, params, active, tokens, gpu, hours = next(r for r in PUBLISHED_RUNS if r[0] == run)
    ours = estimate(params, tokens, gpu, active_params=active, mfu=MFU).gpu_hours
    return f"{ours:,.0f} ({ours / hours - 1:+.0%})".replace("+-", "-")


def _gpt3(recompute: Recompute) -> float:
    """GPT-3 175B's layer (s 2,048, h 12,288, 96 heads) on 8 GPUs with sequence parallelism."""
    return layer_bytes(2048, 1, 12_288, 96, 8, recompute=recompute)


def _llama3() -> str:
    g = estimate("405B", "15.6T", "h100-80gb", gpus=16_384).goodput
    assert g is not None
    return (
        f"{g.effective:.1%} (checkpoints at Young's interval, {g.restart_s / 60:g}-minute restarts)"
    )


OURS: dict[str, Callable[[], str]] = {
    "interruptions": lambda: f"one every {1 / (INTERRUPTIONS_PER_GPU_HOUR * 16_384):.1f} hours",
    "goodput": _llama3,
    "co2": lambda: (
        f"{estimate('405B', '15.6T', 'h100-80gb', gpus=16_384).co2_tonnes:,.0f} t "
        f"(at 40% MFU, PUE 1.2, {DEFAULT_CO2_KG_PER_KWH:g} kg a kWh)"
    ),
    "grid": lambda: f"{DEFAULT_CO2_KG_PER_KWH:g} kg",
    "zero": lambda: format_bytes(compute_memory("7.5B", "bf16", "h100-80gb").training_bytes),
    "fp32-grads": lambda: f"{FP32_GRADS_BYTES_PER_PARAM:g} bytes a parameter",
    "zero-1": lambda: format_bytes(state_bytes(7.5e9, 64, 1)),
    "zero-3": lambda: format_bytes(state_bytes(7.5e9, 64, 3)),
    "selective-recompute": lambda: f"{1 - _gpt3('selective') / _gpt3('none'):.0%}",
    "kv-cache": lambda: format_bytes(
        compute_memory(
            "70B", "bf16", "h100-80gb", serving_from("llama3-70b", context=8192, batch=32)
        ).kv_cache_bytes
        or 0
    ),
    "llama-2-7b": lambda: _gpu_hours("Llama 2 7B"),
    "llama-2-13b": lambda: _gpu_hours("Llama 2 13B"),
    "llama-2-70b": lambda: _gpu_hours("Llama 2 70B"),
    "bloom": lambda: _gpu_hours("BLOOM 176B"),
    "llama-3.1-405b": lambda: _gpu_hours("Llama 3.1 405B"),
    "deepseek-v3": lambda: _gpu_hours("DeepSeek-V3"),
}


def _bubble(schedule: str, virtual: int = 1) -> str:
    """The idle time of 4 stages over 8 microbatches, against the ideal (busy) time, from the
    laid-out timeline: forward 1, backward 2, split into `virtual` chunks."""
    tl = simulate(
        schedule, 4, 8, lambda s, k, m: (1.0 if k == "F" else 2.0) / virtual, None, virtual
    )
    return f"{tl.idle(0) / tl.busy(0):.4g} of the ideal time"


OURS["bubble-1f1b"] = lambda: _bubble("1f1b")
OURS["bubble-interleaved"] = lambda: _bubble("interleaved", 2)


def _zero_bubble() -> str:
    """ZB-H1 on the same 4 stages and 8 microbatches, F = B = W = 1."""
    tl = simulate("zb-h1", 4, 8, lambda s, k, m: 1.0)
    return f"{tl.idle(0):g} of {tl.busy(0):g} time units"


OURS["bubble-zb-h1"] = _zero_bubble


def _rows() -> dict[str, str]:
    rows = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and re.fullmatch(r"[a-z][a-z0-9.-]*", cells[0]) and cells[0] != "id":
            rows[cells[0]] = cells[4]
    return rows


def test_every_row_is_what_the_code_works_out() -> None:
    rows = _rows()
    assert set(rows) == set(OURS), sorted(set(rows) ^ set(OURS))
    wrong = {k: (rows[k], OURS[k]()) for k in OURS if rows[k] != OURS[k]()}
    assert not wrong, f"docs/truth.md says, the code works out: {wrong}"
