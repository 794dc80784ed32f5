"""The "what if" of data parallelism: two copies that do not share gradients drift apart;
two that average them stay identical. Both really trained, on a side copy."""

from __future__ import annotations

import pytest

from app.engine.config import RunConfig
from app.engine.drift import drift, side_config


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory):
    cfg = RunConfig(gpus=1, servers=1, n_layer=2, batch_size=8, corpus_stories=200, experts=16)
    return drift(cfg, steps=2, run_dir=tmp_path_factory.mktemp("drift"))


def test_side_copy_is_two_dense_data_parallel_gpus() -> None:
    side = side_config(RunConfig(gpus=64, servers=8, pp=8, ep=8, experts=64, n_layer=8))
    assert (side.gpus, side.servers, side.dp, side.pp, side.ep, side.experts) == (2, 1, 2, 1, 1, 0)


def test_copies_apart_drift_into_different_models(result) -> None:
    apart = result.apart
    assert apart.steps == 2 and not apart.shared
    assert not apart.identical
    assert apart.max_abs_diff > 0
    assert apart.differing > apart.n_params // 2  # nearly every weight moved differently
    assert apart.weights[0] != apart.weights[1]
    assert len(apart.weights[0]) == 16


def test_copies_together_stay_identical(result) -> None:
    together = result.together
    assert together.shared and together.identical
    assert together.max_abs_diff == 0.0 and together.differing == 0
    assert together.weights[0] == together.weights[1]
    # ... and they did learn: the watched weights moved away from where both copies began,
    # the same way in both.
    assert (
        together.weights[0] != result.apart.weights[0]
        or together.weights[1] != result.apart.weights[1]
    )


def test_steps_must_be_positive(tmp_path) -> None:
    with pytest.raises(ValueError, match="steps must be at least 1"):
        drift(RunConfig(gpus=2, servers=1), steps=0, run_dir=tmp_path)
