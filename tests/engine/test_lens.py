"""The model lens: a real-size model's step on a real-size cluster, by the live step's rules."""

from __future__ import annotations

import pytest

from app.engine.config import RunConfig
from app.engine.lens import (
    BESIDE,
    DEFAULT_PLANS,
    MODELS,
    LensError,
    communication_share,
    lens,
    split_step,
    step_shares,
)
from app.engine.timing import (
    ACTIVATION_WIRE_BYTES,
    compute_seconds,
    get_preset,
    layer_kernels,
    nccl_allreduce,
)
from app.engine.trainer import Trainer

# Published sizes: Llama 3.2 1B model card (1.23B), Llama 3 paper (8B, 70B, 405B), DeepSeek-V3
# report (671B total, 37B activated per token).
PUBLISHED = {"1B": 1.24e9, "8B": 8.03e9, "70B": 70.6e9, "405B": 405.9e9, "671B": 671e9}


@pytest.mark.parametrize("name", list(MODELS))
def test_shapes_add_up_to_the_published_sizes(name: str) -> None:
    m = MODELS[name]
    assert m.params == pytest.approx(PUBLISHED[name], rel=0.01)
    assert m.source and m.batch_source
    assert m.tokens_per_step % m.seq_len == 0


def test_deepseek_v3_uses_37b_of_its_671b_per_token() -> None:
    m = MODELS["671B"]
    assert m.active_params == pytest.approx(37e9, rel=0.02)
    assert m.active_params < m.params / 15


def test_70b_on_1024_h100s_is_compute_bound() -> None:
    # The plan: tensor parallel 8 inside each server, 4 pipeline stages, 32 data-parallel
    # copies; 16M-token batches of 8,192-token sequences (stated in the model's batch_source).
    assert DEFAULT_PLANS["70B"] == (8, 4, 1)
    r = lens("70B", 1024, "h100")
    assert r.plan == {"tp": 8, "pp": 4, "dp": 32, "ep": 1, "schedule": "1f1b", "virtual": 1}
    assert r.microbatches == 2048 // 32
    assert r.compute_share > 0.80
    assert r.bound == "compute" and r.why.startswith("Compute-bound")
    assert r.fits and r.memory_per_gpu_bytes < get_preset("h100").memory_bytes
    # The groups that add to the step are the step.
    added = sum(v for k, v in r.groups.items() if k not in BESIDE)
    assert added == pytest.approx(r.step_s, rel=1e-9)
    # The gradient all-reduce is almost all hidden under the last backward.
    assert r.groups["allreduce_hidden"] > 10 * r.groups["allreduce"]
    # End-to-end MFU: below the compute rate, since communication and the bubble add time.
    assert r.mfu < get_preset("h100").mfu
    assert r.mfu == pytest.approx(r.compute_share * get_preset("h100").mfu, rel=0.05)


def test_the_tiny_live_model_is_communication_bound(tmp_path) -> None:
    config = RunConfig()
    assert config.gpus == 32
    t = Trainer(config, tmp_path)
    try:
        t.train_step()
        report = t.train_step()
    finally:
        t.close(final_checkpoint=False)
    shares = step_shares(report.trace)
    assert sum(shares.values()) == pytest.approx(1.0, rel=1e-9)
    assert communication_share(shares) > 0.5
    split = split_step(report.trace)
    assert split.bound == "communication" and split.why.startswith("Communication-bound")
    assert split.communication_share == pytest.approx(communication_share(shares))


def test_lens_compute_is_the_timing_rule_for_the_stage() -> None:
    # 70B over 4 stages of 20 layers; stage 0 also holds the embedding. One microbatch of one
    # 8,192-token sequence per op; 64 microbatches.
    m, p = MODELS["70B"], get_preset("h100")
    r = lens("70B", 1024, "h100")
    tokens = m.seq_len
    active = sum(m.layer_active(i) for i in range(20)) + m.embedding_params
    per_mb = sum(
        compute_seconds(p, f * active / 8 * tokens, layer_kernels(kind, 20))
        for f, kind in ((2.0, "forward"), (4.0, "backward"))
    )
    assert r.groups["compute"] == pytest.approx(64 * per_mb, rel=1e-9)
    # Two tensor-parallel all-reduces per layer each way (Megatron-LM), BF16 activations.
    join = nccl_allreduce(p, tokens * m.d_model * ACTIVATION_WIRE_BYTES, 8, 1)[1]
    assert r.groups["tensor"] == pytest.approx(64 * 4 * 20 * join, rel=1e-9)


def test_1b_data_parallel_on_1024_gpus_takes_nccls_tree() -> None:
    r = lens("1B", 1024, "h100")
    assert r.plan["dp"] == 1024 and r.allreduce_algorithm == "tree"


def test_moe_step_has_expert_all_to_alls() -> None:
    # With the published 16 stages the slowest is the first, whose three layers are dense
    # (DeepSeek-V3's first three): it sends no tokens to experts. With 8 stages it has some.
    published = lens("671B", 2048, "h800")
    assert published.plan["ep"] == 64 and published.groups["experts"] == 0
    r = lens("671B", 2048, "h800", pp=8)
    assert r.plan["ep"] == 64 and r.groups["experts"] > 0
    assert r.active_params < r.params


def test_a_checkpoint_step_costs_more() -> None:
    plain, saved = lens("8B", 256, "h100"), lens("8B", 256, "h100", checkpoint=True)
    assert plain.groups["checkpoint"] == 0 < saved.groups["checkpoint"]
    assert saved.step_s == pytest.approx(plain.step_s + saved.groups["checkpoint"])


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"model": "3B"}, "model"),
        ({"gpus": 1000}, "gpus"),
        ({"tp": 3}, "tp"),
        ({"ep": 2}, "ep"),
        ({"preset": "tpu"}, "preset"),
        ({"gpus": 1024 * 128}, "gpus"),  # more replicas than sequences in the batch
    ],
)
def test_plans_the_lens_cannot_price_name_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(LensError) as e:
        lens(**{"model": "70B", "gpus": 1024, **kwargs})
    assert e.value.field == field and str(e.value)
