"""Activation memory (app/engine/activations.py) by Korthikanti et al. (2022), Table 2, and
the training state sharded by ZeRO (Rajbhandari et al. 2020), as the lens and the memory lab
count them."""

from __future__ import annotations

import pytest

from app.engine import activations
from app.engine.lens import MODELS, LensError, lens, state_bytes
from app.engine.pipeline import simulate
from app.engine.timing import get_preset
from app.labs.memory import compute_memory

S, B, H, A = 2048, 1, 12288, 96  # GPT-3 175B's shape, the paper's running example


def test_one_layer_by_the_papers_table() -> None:
    sbh = S * B * H
    scores = 5 * A * S / H
    # No parallelism: sbh (34 + 5as/h).
    assert activations.layer_bytes(S, B, H, A, 1, recompute="none") == sbh * (34 + scores)
    # Tensor parallel alone: sbh (10 + 24/t + 5as/(ht)); with sequence parallelism sbh/t (...).
    none_tp = activations.layer_bytes(S, B, H, A, 8, sequence_parallel=False, recompute="none")
    assert none_tp == pytest.approx(sbh * (10 + 24 / 8 + scores / 8))
    none_sp = activations.layer_bytes(S, B, H, A, 8, recompute="none")
    assert none_sp == pytest.approx(sbh / 8 * (34 + scores))
    # Selective recomputation drops exactly the attention's scores term.
    sel = activations.layer_bytes(S, B, H, A, 8, recompute="selective")
    assert sel == pytest.approx(sbh * 34 / 8)
    assert none_sp - sel == pytest.approx(sbh * scores / 8)
    # Full recomputation keeps only the layer's input: 2sbh.
    assert activations.layer_bytes(S, B, H, A, 8, recompute="full") == 2 * sbh
    # For GPT-3 the scores are most of it: 5as/h = 80 against 34.
    assert none_sp > 3 * sel
    with pytest.raises(ValueError, match="recompute"):
        activations.layer_bytes(S, B, H, A, recompute="half")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 1"):
        activations.layer_bytes(0, B, H, A)


def one_unit(stage: int, kind: str, mb: int) -> float:  # every op one time unit
    return 1.0


def test_a_1f1b_stage_keeps_its_microbatches_in_flight() -> None:
    # Stage i of p holds p - i microbatches at most, and never more than there are: what the
    # lens reads from the schedule's own order.
    assert [simulate("1f1b", 4, 64, one_unit).peak_in_flight(s) for s in range(4)] == [4, 3, 2, 1]
    assert simulate("1f1b", 16, 3, one_unit).peak_in_flight(0) == 3
    per = activations.by_recompute(S, B, H, A, 8, layers=12, microbatches=4)
    assert per["selective"] == 48 * activations.layer_bytes(S, B, H, A, 8)
    assert per["none"] > per["selective"] > per["full"]


def test_zero_shards_the_state_as_the_zero_paper_counts_it() -> None:
    # Rajbhandari et al. 2020, Figure 1: 7.5B parameters on 64 GPUs, K = 12.
    psi, nd = 7.5e9, 64
    assert state_bytes(psi, nd, 0) == pytest.approx(120e9)
    assert state_bytes(psi, nd, 1) / 1e9 == pytest.approx(31.4, abs=0.05)
    assert state_bytes(psi, nd, 2) / 1e9 == pytest.approx(16.6, abs=0.05)
    assert state_bytes(psi, nd, 3) / 1e9 == pytest.approx(1.88, abs=0.005)


def test_the_lens_counts_the_fullest_gpus_state_and_activations() -> None:
    r = lens("70B", 1024, "h100")
    m = MODELS["70B"]
    # Tensor parallel 8 with sequence parallelism, 4 stages of 20 layers; the first stage
    # holds 4 microbatches of one sequence: 80 layers' worth, 34/8 sbh each when the
    # attention's scores are recomputed.
    sbh = m.seq_len * m.d_model
    assert r.recompute == "selective" and r.zero == 1
    assert r.activation_bytes_per_gpu["selective"] == int(80 * sbh * 34 / 8)
    assert r.memory_per_gpu_bytes == pytest.approx(
        r.state_bytes_per_gpu + r.activation_bytes_per_gpu["selective"], abs=1
    )
    assert r.fits
    # Keeping the scores (no recomputation) needs 237 GB a GPU: it no longer fits.
    kept = lens("70B", 1024, "h100", recompute="none")
    assert kept.activation_bytes_per_gpu["none"] > 200e9 and not kept.fits
    assert kept.memory_per_gpu_bytes > r.memory_per_gpu_bytes
    full = lens("70B", 1024, "h100", recompute="full")
    assert full.memory_per_gpu_bytes < r.memory_per_gpu_bytes
    assert any("Korthikanti" in s for s in r.sources)
    with pytest.raises(LensError, match="ZeRO stage 4"):
        lens("70B", 1024, "h100", zero=4)


def test_llama3_405b_fits_its_published_plan_only_with_its_sharding() -> None:
    # Table 4: TP 8, PP 16 on 16,384 H100s of 80 GB; FSDP shards the optimizer state and
    # the gradients (section 3.3.2). With the state unsharded the first stage overflows.
    h100 = get_preset("h100").memory_bytes
    r = lens("405B", 16_384, "h100")
    assert r.zero == 2 and r.fits and r.memory_per_gpu_bytes <= h100
    unsharded = lens("405B", 16_384, "h100", zero=0)
    assert not unsharded.fits and unsharded.state_bytes_per_gpu > 5 * r.state_bytes_per_gpu


def test_the_memory_lab_counts_a_published_shapes_activations() -> None:
    r = compute_memory("70B", "bf16", "h100-80gb")
    a = r.activations
    assert a is not None and (a.shape, a.layers, a.sequence) == ("llama3-70b", 80, 8192)
    sbh = 8192 * 8192
    assert a.bytes["none"] == pytest.approx(80 * sbh * (34 + 5 * 64 * 8192 / 8192))
    assert a.bytes["selective"] == pytest.approx(80 * sbh * 34)
    assert a.bytes["full"] == pytest.approx(80 * 2 * sbh)
    assert round(a.bytes["none"] / 1e12, 1) == 1.9  # 1.9 TB for one sequence
    # A size with no published shape has none to count.
    assert compute_memory("7B", "bf16", "h100-80gb").activations is None
