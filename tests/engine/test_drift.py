"""The "what if" of data parallelism: two copies that do not share gradients drift apart;
two that average them stay identical. Both really trained, on a side copy."""

from __future__ import annotations

import pytest

from app.engine import trainer as trainer_module
from app.engine.config import RunConfig
from app.engine.drift import drift, side_config, train_copies
from app.engine.sharded import ShardedEngine


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


def _engines_built(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    built: list[object] = []
    make = trainer_module._engine_for

    def spy(*args, **kwargs):
        built.append(make(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(trainer_module, "_engine_for", spy)
    return built


@pytest.mark.parametrize(
    "plan",
    [
        dict(gpus=8, tp=2, pp=2, microbatches=2),  # each copy on four GPUs, in shards
        dict(gpus=2, experts=4, top_k=2),  # dense parallel GPUs, a model with experts
    ],
    ids=["tp-pp", "experts"],
)
def test_copies_drift_on_the_sharded_engine_too(
    plan: dict, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same steps, through the step interface, on the engine of every other plan: its
    two data-parallel copies drift apart without the all-reduce and stay bit-identical
    with it."""
    built = _engines_built(monkeypatch)
    cfg = RunConfig(servers=1, n_layer=2, batch_size=4, corpus_stories=200, **plan)
    apart = train_copies(cfg, 2, False, tmp_path / "apart")
    together = train_copies(cfg, 2, True, tmp_path / "together")
    assert [type(e) for e in built] == [ShardedEngine, ShardedEngine]
    assert len(apart.weights) == len(together.weights) == 2
    assert not apart.identical and apart.max_abs_diff > 0
    assert apart.differing > apart.n_params // 2
    assert together.identical and together.max_abs_diff == 0.0
    assert together.weights[0] == together.weights[1]


def test_a_plan_with_one_copy_is_refused(tmp_path) -> None:
    cfg = RunConfig(gpus=2, servers=1, tp=2, n_layer=2, batch_size=4, corpus_stories=200)
    with pytest.raises(ValueError, match="at least 2 data-parallel copies .* hold 1"):
        train_copies(cfg, 1, False, tmp_path)
