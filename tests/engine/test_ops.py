"""The shared kernels (ops.py), one by one: each backward agrees with central finite
differences of its forward in float64, writes its gradients (add=False) or adds them
(add=True), and the replicated model and a whole-model stage built on them compute the same
bits."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from app.engine import ops
from app.engine.model import ModelConfig, forward_backward, init_params
from app.engine.ops import Space
from app.engine.stage import Stage

H = 1e-5  # finite-difference step
TOL = 1e-5  # relative error allowed
R, B, T, C, N_HEAD = 2, 2, 3, 4, 2
N = B * T

Forward = Callable[[dict[str, np.ndarray]], np.ndarray]
# backward(inputs, dout, grads, add): writes (or adds) d(sum(out * dout))/d(input) into grads
Backward = Callable[[dict[str, np.ndarray], np.ndarray, dict[str, np.ndarray], bool], None]


def _sp() -> Space:
    return Space(np.float64, per_row=True)


def _rel_err(a: np.ndarray, n: np.ndarray) -> float:
    # As in test_gradcheck.py: a float64 central difference with step H carries round-off
    # noise of about eps * |loss| / H, so below ~1e-5 the check becomes an absolute one.
    return float((np.abs(a - n) / np.maximum(np.abs(a) + np.abs(n), 1e-5)).max())


def check(forward: Forward, backward: Backward, inputs: dict[str, np.ndarray], seed: int):
    """Every entry of every input: the analytic gradient of sum(out * W) against central
    differences; then the same gradients written over NaNs (add=False) and added to ones
    (add=True)."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal(forward(inputs).shape)

    def loss() -> float:
        return float(np.sum(forward(inputs) * W))

    def analytic(fill: float, add: bool) -> dict[str, np.ndarray]:
        grads = {k: np.full_like(v, fill) for k, v in inputs.items()}
        backward(inputs, W.copy(), grads, add)
        return grads

    got = analytic(np.nan, add=False)
    for name, x in inputs.items():
        flat = x.reshape(-1)  # a view: writing it perturbs the input
        numeric = np.empty(flat.size)
        for j in range(flat.size):
            orig = flat[j]
            flat[j] = orig + H
            up = loss()
            flat[j] = orig - H
            down = loss()
            flat[j] = orig
            numeric[j] = (up - down) / (2 * H)
        assert np.abs(numeric).max() > 1e-3, f"{name}: the check must be about real gradients"
        err = _rel_err(got[name].reshape(-1), numeric)
        assert err <= TOL, f"{name}: relative error {err:.2e}"
    added = analytic(1.0, add=True)
    for name in inputs:
        np.testing.assert_allclose(added[name], 1.0 + got[name], rtol=1e-12, atol=1e-12)


def _rand(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return rng.standard_normal(shape) * scale


def test_layer_norm() -> None:
    rng = np.random.default_rng(0)
    inputs = {"x": _rand(rng, R, N, C), "g": 1 + _rand(rng, R, C), "b": _rand(rng, R, C)}

    def fwd(i: dict, keep: list | None = None) -> np.ndarray:
        out, xhat, rstd = np.empty((R, N, C)), np.empty((R, N, C)), np.empty((R, N, 1))
        ops.layer_norm(i["x"], i["g"], i["b"], out=out, xhat=xhat, rstd=rstd, sp=_sp())
        if keep is not None:
            keep += [xhat, rstd]
        return out

    def bwd(i: dict, dout: np.ndarray, grads: dict, add: bool) -> None:
        keep: list = []
        fwd(i, keep)
        if not add:
            grads["x"][...] = 0  # the kernel adds the input gradient into the residual's
        ops.layer_norm_backward(dout, i["g"], *keep, grads["g"], grads["b"], grads["x"], _sp(), add)

    check(fwd, bwd, inputs, 1)


def test_softmax() -> None:
    rng = np.random.default_rng(2)
    inputs = {"z": _rand(rng, R, N, 5, scale=2.0)}

    def fwd(i: dict) -> np.ndarray:
        p = i["z"].copy()
        ops.softmax_(p, _sp())
        return p

    def bwd(i: dict, dout: np.ndarray, grads: dict, add: bool) -> None:
        ops.softmax_backward_(dout, fwd(i), _sp())
        grads["z"][...] = grads["z"] + dout if add else dout

    check(fwd, bwd, inputs, 3)


def test_attention_softmax_fast_path_is_the_exact_softmax() -> None:
    rng = np.random.default_rng(4)
    sp = _sp()
    att = _rand(rng, R, B, N_HEAD, T, T, scale=3.0) + sp.causal_mask(T)
    exact = att.copy()
    ops.softmax_(exact, sp)
    fast = att.copy()
    assert ops.attention_softmax_(fast, sp)
    np.testing.assert_allclose(fast, exact, rtol=1e-13, atol=1e-15)
    assert np.all(np.triu(fast, k=1) == 0)
    att[0, 0, 0, 1, :2] = -500.0  # a row far below its block's maximum: the fast path declines
    assert not ops.attention_softmax_(att.copy(), sp)


def test_attention() -> None:
    rng = np.random.default_rng(5)
    inputs = {
        "h": _rand(rng, R, N, C),
        "wqkv": _rand(rng, R, C, 3 * C, scale=0.7),
        "bqkv": _rand(rng, R, 3 * C, scale=0.3),
        "wo": _rand(rng, R, C, C, scale=0.5),
        "bo": _rand(rng, R, C, scale=0.3),
    }

    def fwd(i: dict, keep: dict | None = None) -> np.ndarray:
        saved = {
            "qkv": np.empty((R, N, 3 * C)),
            "att": np.empty((R, B, N_HEAD, T, T)),
            "y": np.empty((R, N, C)),
        }
        out = np.empty((R, N, C))
        w = (i["wqkv"], i["bqkv"], i["wo"], i["bo"])
        ops.attention(i["h"], *w, **saved, out=out, sp=_sp())
        if keep is not None:
            keep.update(saved)
        return out

    def bwd(i: dict, dout: np.ndarray, grads: dict, add: bool) -> None:
        s: dict = {}
        fwd(i, s)
        dh = np.empty((R, N, C))
        g = (grads["wqkv"], grads["bqkv"], grads["wo"], grads["bo"])
        args = (i["h"], i["wqkv"], i["wo"], s["qkv"], s["att"], s["y"], g)
        ops.attention_backward(dout, *args, dh=dh, sp=_sp(), add=add)
        grads["h"][...] = grads["h"] + dh if add else dh

    check(fwd, bwd, inputs, 6)


def test_gelu() -> None:
    rng = np.random.default_rng(7)
    inputs = {"a": _rand(rng, R, N, 8, scale=2.0)}

    def fwd(i: dict) -> np.ndarray:
        s, out = np.empty_like(i["a"]), np.empty_like(i["a"])
        ops.gelu(i["a"], s, out, _sp())
        return out

    def bwd(i: dict, dout: np.ndarray, grads: dict, add: bool) -> None:
        a, s, out = i["a"].copy(), np.empty_like(i["a"]), np.empty_like(i["a"])
        ops.gelu(a, s, out, _sp())
        ops.gelu_backward_(dout, a, s, np.empty_like(a))
        grads["a"][...] = grads["a"] + dout if add else dout

    check(fwd, bwd, inputs, 8)
    # GELU itself, not only a function with a matching derivative.
    a = np.linspace(-4, 4, 9)
    np.testing.assert_allclose(
        fwd({"a": a}), 0.5 * a * (1 + np.tanh(ops.GELU_K * (a + ops.GELU_C * a**3))), rtol=1e-10
    )


@pytest.mark.parametrize("biases", [True, False], ids=["dense", "expert"])
def test_mlp(biases: bool) -> None:
    rng = np.random.default_rng(9)
    F = 8
    inputs = {
        "h": _rand(rng, R, N, C),
        "w1": _rand(rng, R, C, F, scale=0.7),
        "w2": _rand(rng, R, F, C, scale=0.5),
    }
    if biases:
        inputs.update(b1=_rand(rng, R, F, scale=0.3), b2=_rand(rng, R, C, scale=0.3))

    def fwd(i: dict, keep: dict | None = None) -> np.ndarray:
        saved = {k: np.empty((R, N, F)) for k in ("a", "s", "g")}
        out = np.empty((R, N, C))
        w = (i["w1"], i.get("b1"), i["w2"], i.get("b2"))
        ops.mlp(i["h"], *w, **saved, out=out, sp=_sp())
        if keep is not None:
            keep.update(saved)
        return out

    def bwd(i: dict, dout: np.ndarray, grads: dict, add: bool) -> None:
        s: dict = {}
        fwd(i, s)
        dh = np.empty((R, N, C))
        g = (grads["w1"], grads.get("b1"), grads["w2"], grads.get("b2"))
        args = (i["h"], s["a"], s["s"], s["g"], i["w1"], i["w2"], g)
        ops.mlp_backward(dout, *args, dh=dh, sp=_sp(), add=add)
        grads["h"][...] = grads["h"] + dh if add else dh

    check(fwd, bwd, inputs, 10)


def test_embedding() -> None:
    rng = np.random.default_rng(11)
    V, block = 5, T + 2  # positions past T get no gradient
    idx = rng.integers(0, V, (R, B, T))
    idx[0, 0, :2] = 3  # a token repeated: its rows add up
    inputs = {"wte": _rand(rng, R, V, C), "wpe": _rand(rng, R, block, C)}

    def fwd(i: dict) -> np.ndarray:
        out = np.empty((R, N, C))
        ops.embed(i["wte"], i["wpe"], idx, out=out)
        return out

    def bwd(i: dict, dout: np.ndarray, grads: dict, add: bool) -> None:
        ops.embed_backward(dout, idx, grads["wte"], grads["wpe"], add=add)

    seen = np.zeros((R, V), bool)
    np.put_along_axis(seen, idx.reshape(R, -1), True, axis=1)
    assert not seen.all(), "some token must be absent, so its row's zero gradient is checked"
    check(fwd, bwd, inputs, 12)
    grads = {k: np.full_like(v, np.nan) for k, v in inputs.items()}
    bwd(inputs, rng.standard_normal((R, N, C)), grads, False)
    assert np.all(grads["wte"][~seen] == 0) and np.all(grads["wpe"][:, T:] == 0)


def test_output_softmax_and_cross_entropy() -> None:
    rng = np.random.default_rng(13)
    V = 6
    targets = rng.integers(0, V, (R, B, T))
    inputs = {"hf": _rand(rng, R, N, C), "head": _rand(rng, R, C, V, scale=0.8)}

    def probs_of(i: dict) -> np.ndarray:
        probs = np.empty((R, N, V))
        ops.output_probs(i["hf"], i["head"], probs, _sp())
        return probs

    def fwd(i: dict) -> np.ndarray:
        return ops.cross_entropy(probs_of(i), targets)  # (R,): each row's mean

    def bwd(i: dict, dout: np.ndarray, grads: dict, add: bool) -> None:
        d = probs_of(i)
        ops.cross_entropy_backward_(d, targets, 1.0 / N)
        d *= dout[:, None, None]
        dhf = np.empty((R, N, C))
        ops.linear_backward(d, i["hf"], i["head"], grads["head"], None, dhf, _sp(), add)
        grads["hf"][...] = grads["hf"] + dhf if add else dhf

    logits = inputs["hf"] @ inputs["head"]
    ref = (
        np.log(np.exp(logits).sum(-1))
        - np.take_along_axis(logits, targets.reshape(R, N, 1), axis=-1)[..., 0]
    )
    np.testing.assert_allclose(fwd(inputs), ref.mean(axis=1), rtol=1e-12)
    check(fwd, bwd, inputs, 14)


def test_router_gates_and_load_balancing_loss() -> None:
    rng = np.random.default_rng(15)
    X, K, coef = 4, 2, 0.5
    inputs = {"h": _rand(rng, R, N, C), "w": _rand(rng, R, C, X)}
    Wg = rng.standard_normal((R, N, K))

    def fwd(i: dict) -> np.ndarray:
        r = ops.route(i["h"], i["w"], K, B, coef, _sp())
        return np.sum(r["gate"] * Wg, axis=(1, 2)) + r["aux"]  # (R,)

    def bwd(i: dict, dout: np.ndarray, grads: dict, add: bool) -> None:
        r = ops.route(i["h"], i["w"], K, B, coef, _sp())
        dh = grads["h"] if add else np.zeros_like(grads["h"])
        ops.route_backward(
            Wg * dout[:, None, None], r, i["h"], i["w"], grads["w"], dh,
            aux_weight=coef * X / (B * T), sp=_sp(), add=add,
        )  # fmt: skip
        grads["h"][...] = dh
        assert np.all(dout == dout[0])  # the aux weight above assumes one weight for all rows

    W = np.ones(R)
    got = {k: np.full_like(v, np.nan) for k, v in inputs.items()}
    bwd(inputs, W, got, False)
    for name, x in inputs.items():
        flat, numeric = x.reshape(-1), np.empty(x.size)
        for j in range(x.size):
            orig = flat[j]
            flat[j] = orig + H
            up = float(fwd(inputs).sum())
            flat[j] = orig - H
            down = float(fwd(inputs).sum())
            flat[j] = orig
            numeric[j] = (up - down) / (2 * H)
        assert _rel_err(got[name].reshape(-1), numeric) <= TOL, name
    added = {k: np.ones_like(v) for k, v in inputs.items()}
    bwd(inputs, W, added, True)
    for name in inputs:
        np.testing.assert_allclose(added[name], 1.0 + got[name], rtol=1e-12)


def test_combine() -> None:
    rng = np.random.default_rng(16)
    K = 2
    inputs = {"gate": _rand(rng, R, N, K), "outs": _rand(rng, R, N, K, C)}

    def fwd(i: dict) -> np.ndarray:
        return ops.combine(i["gate"], i["outs"])

    def bwd(i: dict, dout: np.ndarray, grads: dict, add: bool) -> None:
        dgate, douts = ops.combine_backward(dout, i["gate"], i["outs"])
        for k, v in (("gate", dgate), ("outs", douts)):
            grads[k][...] = grads[k] + v if add else v

    check(fwd, bwd, inputs, 17)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_replicated_model_and_whole_model_stage_compute_the_same_bits(dtype: str) -> None:
    """Same kernels, same order, the same sums: one replica of the replicated model and a
    stage holding the whole model (tp = 1) agree bit for bit on losses and gradients. (The
    stage weighs a token by scale / T with scale = 1 / B, the model by 1 / (B T): with B a
    power of two both are the same number.)"""
    cfg = ModelConfig(vocab_size=11, n_layer=2, n_head=2, n_embd=8, block_size=8)
    params = init_params(cfg, seed=0, dtype=dtype)
    rng = np.random.default_rng(18)
    for v in params.values():
        v += (rng.standard_normal(v.shape) * 0.3).astype(v.dtype)
    b, t = 2, 7  # shorter than block_size: unused position rows too
    idx, tgt = rng.integers(0, cfg.vocab_size, (2, 1, b, t))
    losses, grads = forward_backward(params, idx, tgt, cfg)
    stage = Stage(cfg, range(cfg.n_layer), first=True, last=True)
    (ce, aux), ctx = stage.forward(params, idx, tgt)
    G = {k: np.zeros_like(v) for k, v in params.items()}
    stage.backward(params, G, ctx, None, 1.0 / b)
    assert np.all(aux == 0)
    assert losses.tobytes() == ce.tobytes()
    for name, g in grads.items():
        assert g.tobytes() == G[name].tobytes(), f"{name} differs"
