"""The hand-written backward passes of the tensor-parallel layers and of the mixture-of-experts
layer (router, renormalised top-k gates, load-balancing loss, experts) agree with central
finite differences of the loss, in float64."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine import stage as stage_module
from app.engine.model import ModelConfig, init_params, param_shapes
from app.engine.plan import Plan
from app.engine.sharding import gather, stage_rows
from app.engine.stage import Stage, StageComm

H = 1e-5
TOL = 1e-5
MAX_ENTRIES = 40  # per tensor: every entry of smaller tensors, a random set of larger ones


def _rel_err(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    # As in test_gradcheck.py: below ~1e-5 the central difference is round-off noise.
    return np.abs(a - n) / np.maximum(np.abs(a) + np.abs(n), 1e-5)


def _full_params(cfg: ModelConfig, seed: int) -> dict[str, np.ndarray]:
    params = init_params(cfg, seed=seed, replicas=1, dtype="float64")
    rng = np.random.default_rng(seed + 100)
    return {k: v[0] + rng.standard_normal(v.shape[1:]) * 0.3 for k, v in params.items()}


class Sharded:
    """The whole model on one TP group of `tp` GPUs (one stage, one replica)."""

    def __init__(self, cfg: ModelConfig, tp: int, idx: np.ndarray, tgt: np.ndarray) -> None:
        self.cfg, self.plan = cfg, Plan(gpus=tp, gpus_per_server=tp, tp=tp)
        self.comm = StageComm(tp, 1, 1)
        self.stage = Stage(cfg, range(cfg.n_layer), first=True, last=True, tp=tp, comm=self.comm)
        self.idx = np.concatenate([idx] * tp)
        self.tgt = np.concatenate([tgt] * tp)
        self.b = idx.shape[1]

    def shard(self, full: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {k: np.stack(stage_rows(k, v, self.plan)) for k, v in full.items()}

    def loss(self, full: dict[str, np.ndarray]) -> float:
        (ce, aux), _ = self.stage.forward(self.shard(full), self.idx, self.tgt)
        assert np.all(ce == ce[0]) and np.all(aux == aux[0])  # the TP group agrees
        return float(ce[0] + aux[0])

    def grads(self, full: dict[str, np.ndarray]) -> tuple[float, dict[str, np.ndarray]]:
        P = self.shard(full)
        self.comm.begin()
        (ce, aux), ctx = self.stage.forward(P, self.idx, self.tgt)
        G = {k: np.zeros_like(v) for k, v in P.items()}
        self.stage.backward(P, G, ctx, None, 1.0 / self.b)
        self.program = [what for what, _ in self.comm.program]
        return float(ce[0] + aux[0]), {k: gather(k, g, self.plan) for k, g in G.items()}


def check(model: Sharded, full: dict[str, np.ndarray], seed: int) -> dict[str, float]:
    _, grads = model.grads(full)
    pick = np.random.default_rng(seed)
    worst = {}
    for name in param_shapes(model.cfg):
        flat = full[name].reshape(-1)
        if flat.size <= MAX_ENTRIES:
            entries = np.arange(flat.size)
        else:
            entries = np.sort(pick.choice(flat.size, MAX_ENTRIES, replace=False))
        numeric = np.empty(entries.size)
        for i, j in enumerate(entries):
            orig = flat[j]
            flat[j] = orig + H
            up = model.loss(full)
            flat[j] = orig - H
            down = model.loss(full)
            flat[j] = orig
            numeric[i] = (up - down) / (2 * H)
        analytic = grads[name].reshape(-1)[entries]
        worst[name] = float(_rel_err(analytic, numeric).max())
        assert np.abs(analytic).max() > 1e-4, f"{name}: the check must be about real gradients"
    return worst


def _data(cfg: ModelConfig, seed: int, b: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    shape = (1, b, cfg.block_size)
    return rng.integers(0, cfg.vocab_size, shape), rng.integers(0, cfg.vocab_size, shape)


@pytest.mark.parametrize("tp", [2, 4])
def test_tensor_parallel_layers_match_finite_differences(tp: int) -> None:
    cfg = ModelConfig(vocab_size=11, n_layer=2, n_head=4, n_embd=8, block_size=5)
    full = _full_params(cfg, 0)
    model = Sharded(cfg, tp, *_data(cfg, 1))
    worst = check(model, full, 2)
    bad = {k: v for k, v in worst.items() if v > TOL}
    assert not bad, f"relative errors above {TOL}: {bad}"
    # The layers really were split and joined: two all-reduces per layer each way.
    assert model.program.count("tp_allreduce") == 4 * cfg.n_layer


def test_replicated_parameters_get_identical_gradients_in_the_tp_group() -> None:
    cfg = ModelConfig(vocab_size=11, n_layer=2, n_head=4, n_embd=8, block_size=5)
    model = Sharded(cfg, 2, *_data(cfg, 3))
    P = model.shard(_full_params(cfg, 4))
    (_, _), ctx = model.stage.forward(P, model.idx, model.tgt)
    G = {k: np.zeros_like(v) for k, v in P.items()}
    model.stage.backward(P, G, ctx, None, 1.0 / model.b)
    for name in ("wte", "wpe", "layers.0.ln1.g", "layers.1.attn.bo", "layers.1.mlp.b2", "head"):
        np.testing.assert_array_equal(G[name][0], G[name][1])
    for name in ("layers.0.attn.wqkv", "layers.0.mlp.w1"):
        assert not np.array_equal(G[name][0], G[name][1])  # shards differ


@pytest.mark.parametrize("tp", [1, 2])
def test_mixture_of_experts_matches_finite_differences(tp: int) -> None:
    cfg = ModelConfig(
        vocab_size=11, n_layer=2, n_head=2, n_embd=8, block_size=5, experts=4, top_k=2
    )
    full = _full_params(cfg, 5)
    model = Sharded(cfg, tp, *_data(cfg, 6))
    worst = check(model, full, 7)
    bad = {k: v for k, v in worst.items() if v > TOL}
    assert not bad, f"relative errors above {TOL}: {bad}"
    assert {"layers.0.moe.router", "layers.1.moe.w1", "layers.1.moe.w2"} <= set(worst)


def test_the_load_balancing_loss_and_its_gradient(monkeypatch) -> None:
    """With a large coefficient the load-balancing term dominates the router's gradient,
    so a mistake in it cannot hide behind the cross-entropy."""
    monkeypatch.setattr(stage_module, "AUX_COEF", 1.0)
    cfg = ModelConfig(
        vocab_size=11, n_layer=1, n_head=2, n_embd=8, block_size=6, experts=6, top_k=3
    )
    full = _full_params(cfg, 8)
    model = Sharded(cfg, 1, *_data(cfg, 9, b=4))
    P = model.shard(full)
    _, ctx = model.stage.forward(P, model.idx, model.tgt)
    # Switch's form: X * sum_i f_i P_i per sequence; 1 when routing is uniform, more otherwise.
    saved = ctx["layers"][0]
    f, probs = saved["f"][0], saved["probs"][0].reshape(4, 6, 6)
    expected = np.mean(6 * np.sum(f * probs.mean(axis=1), axis=-1))
    assert float(ctx["aux"][0]) == pytest.approx(expected, rel=1e-12)
    assert np.allclose(f.sum(axis=-1), 1.0) and expected >= 1.0 - 1e-12
    worst = check(model, full, 10)
    assert worst["layers.0.moe.router"] <= TOL


def test_gates_are_renormalised_over_the_chosen_experts() -> None:
    cfg = ModelConfig(
        vocab_size=11, n_layer=1, n_head=2, n_embd=8, block_size=5, experts=5, top_k=2
    )
    model = Sharded(cfg, 1, *_data(cfg, 11))
    _, ctx = model.stage.forward(model.shard(_full_params(cfg, 12)), model.idx, model.tgt)
    s = ctx["layers"][0]
    probs, sel, gate = s["probs"][0], s["sel"][0], s["gate"][0]
    np.testing.assert_allclose(gate.sum(axis=-1), 1.0, rtol=1e-12)
    top = np.sort(probs, axis=-1)[:, ::-1][:, :2]
    np.testing.assert_array_equal(np.take_along_axis(probs, sel, axis=-1), top)
    np.testing.assert_allclose(gate, top / top.sum(axis=-1, keepdims=True), rtol=1e-12)
