"""Results do not depend on the plan: tensor, pipeline and expert parallelism and
microbatches give the same model as one GPU on the same global batch (float64, 30 steps),
and a checkpoint taken under one plan resumes under another."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.config import RunConfig
from app.engine.trainer import Trainer

SMALL = dict(
    dtype="float64",
    checkpoint_every=0,
    probe_every=0,
    corpus_stories=120,
    batch_size=16,
    n_embd=16,
    n_head=4,
    n_layer=4,
    block_size=8,
)
STEPS = 30
REL = 1e-9


def train(run_dir, steps: int = STEPS, **changes) -> dict:
    t = Trainer(RunConfig(**{**SMALL, **changes}), run_dir)
    try:
        for _ in range(steps):
            report = t.train_step()
        assert t.replicas_identical()
        return {
            "loss": report.loss,
            "l2": t.params_l2(),
            "params": t.full_params(),
            "losses": report.gpu_losses,
        }
    finally:
        t.close(final_checkpoint=False)


def assert_same(a: dict, ref: dict) -> None:
    assert a["loss"] == pytest.approx(ref["loss"], rel=REL)
    assert a["l2"] == pytest.approx(ref["l2"], rel=REL)
    for name, p in ref["params"].items():
        err = np.max(np.abs(a["params"][name] - p)) / max(np.max(np.abs(p)), 1e-30)
        assert err <= 1e-9, f"{name} differs: {err:.2e}"


@pytest.fixture(scope="module")
def one_gpu(tmp_path_factory) -> dict:
    return train(tmp_path_factory.mktemp("one"), gpus=1, servers=1)


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
def test_dp2_tp2_pp2_with_four_microbatches_matches_one_gpu(tmp_path, one_gpu, schedule) -> None:
    got = train(tmp_path, gpus=8, servers=1, tp=2, pp=2, microbatches=4, schedule=schedule)
    assert_same(got, one_gpu)
    assert len(got["losses"]) == 8


def test_tp4_matches_one_gpu(tmp_path, one_gpu) -> None:
    assert_same(train(tmp_path, gpus=4, servers=1, tp=4), one_gpu)


def test_pp4_with_eight_microbatches_matches_one_gpu(tmp_path, one_gpu) -> None:
    assert_same(train(tmp_path, gpus=4, servers=1, pp=4, microbatches=8), one_gpu)


def test_microbatches_without_pipelining_match_one_gpu(tmp_path, one_gpu) -> None:
    assert_same(train(tmp_path / "one", gpus=1, servers=1, microbatches=4), one_gpu)
    assert_same(train(tmp_path / "dp2", gpus=2, servers=1, microbatches=4), one_gpu)


def test_a_plan_across_servers_matches_one_gpu(tmp_path, one_gpu) -> None:
    # TP inside each server, the pipeline and the data-parallel copies across them.
    got = train(tmp_path, gpus=16, servers=4, tp=2, pp=4, microbatches=2, schedule="gpipe")
    assert_same(got, one_gpu)


def test_experts_sharded_over_four_gpus_match_one_copy_of_them(tmp_path) -> None:
    moe = dict(gpus=4, servers=1, experts=16, top_k=2)
    ep1 = train(tmp_path / "ep1", **moe)
    ep4 = train(tmp_path / "ep4", ep=4, **moe)
    assert_same(ep4, ep1)
    # The same model on one GPU, and with every kind of parallelism at once.
    assert_same(train(tmp_path / "one", **{**moe, "gpus": 1}), ep1)
    mixed = dict(gpus=16, servers=2, tp=2, pp=2, ep=2, microbatches=2)
    assert_same(train(tmp_path / "mixed", **{**moe, **mixed}), ep1)


def test_a_checkpoint_resumes_under_another_plan(tmp_path, one_gpu) -> None:
    cfg = RunConfig(
        **{**SMALL, "checkpoint_every": 10}, gpus=8, servers=1, tp=2, pp=2, microbatches=4
    )
    t = Trainer(cfg, tmp_path)
    try:
        for _ in range(20):
            t.train_step()
    finally:
        t.close(final_checkpoint=False)
    # The checkpoint holds one full copy of the model: resume it on 4 GPUs, pipelined 4 ways.
    other = cfg.with_(tp=1, pp=4, microbatches=8, gpus=4, schedule="gpipe")
    assert other.config_hash() == cfg.config_hash()
    t = Trainer(other, tmp_path)
    try:
        assert t.step == 20
        for _ in range(STEPS - 20):
            report = t.train_step()
        got = {"loss": report.loss, "l2": t.params_l2(), "params": t.full_params()}
    finally:
        t.close(final_checkpoint=False)
    assert_same(got, one_gpu)
