"""The hand-written backward pass agrees with central finite differences, entry by entry.

Every entry of every parameter tensor of a tiny model is checked in float64, and replicas are
shown to be independent: replica r's gradients are exactly the single-device gradients on
replica r's own weights and data.
"""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.model import ModelConfig, forward_backward, init_params, param_shapes

CFG = ModelConfig(vocab_size=11, n_layer=2, n_head=2, n_embd=8, block_size=5)
H = 1e-5  # finite-difference step (float64)
TOL = 1e-5  # max relative error allowed
MAX_ENTRIES = 96  # per tensor: every entry of smaller tensors, a random set of larger ones


def _rel_err(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    # A float64 central difference with step H carries round-off noise of about
    # eps * |loss| / H ~ 1e-10, so it cannot resolve gradients far below 1e-5 to 1e-5 relative;
    # the floor turns the check for such tiny entries into an absolute one at that noise level.
    return np.abs(a - n) / np.maximum(np.abs(a) + np.abs(n), 1e-5)


def _perturbed_params(seed: int, replicas: int = 1) -> dict[str, np.ndarray]:
    """Init plus noise, so layer-norm gains, biases and masks are all exercised away from the
    special values (ones and zeros) they start at."""
    params = init_params(CFG, seed=seed, replicas=replicas, dtype="float64")
    rng = np.random.default_rng(seed + 100)
    for v in params.values():
        v += rng.standard_normal(v.shape) * 0.3
    return params


def _data(seed: int, shape: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, CFG.vocab_size, shape), rng.integers(0, CFG.vocab_size, shape)


def test_every_parameter_matches_finite_differences():
    params = _perturbed_params(0)
    idx, tgt = _data(1, (1, 2, CFG.block_size))
    losses, grads = forward_backward(params, idx, tgt, CFG)
    grads = {k: v.copy() for k, v in grads.items()}
    assert losses.dtype == np.float64

    worst: dict[str, float] = {}
    pick = np.random.default_rng(2)
    for name in param_shapes(CFG):
        flat = params[name].reshape(-1)  # a view: writing it perturbs the model
        if flat.size <= MAX_ENTRIES:
            entries = np.arange(flat.size)
        else:
            entries = np.sort(pick.choice(flat.size, MAX_ENTRIES, replace=False))
        numeric = np.empty(entries.size)
        for i, j in enumerate(entries):
            orig = flat[j]
            flat[j] = orig + H
            up, _ = forward_backward(params, idx, tgt, CFG, need_grads=False)
            flat[j] = orig - H
            down, _ = forward_backward(params, idx, tgt, CFG, need_grads=False)
            flat[j] = orig
            numeric[i] = (up[0] - down[0]) / (2 * H)
        analytic = grads[name].reshape(-1)[entries]
        worst[name] = float(_rel_err(analytic, numeric).max())
        # The check must be about real gradients, not a tensor of zeros.
        assert np.abs(analytic).max() > 1e-3, name
    # Adding the same bias to every key shifts each attention row by a constant, which the
    # softmax ignores: the key part of bqkv must get (numerically) zero gradient.
    C = CFG.n_embd
    for i in range(CFG.n_layer):
        assert np.abs(grads[f"layers.{i}.attn.bqkv"][0, C : 2 * C]).max() < 1e-12
    bad = {k: v for k, v in worst.items() if v > TOL}
    assert not bad, f"relative errors above {TOL}: {bad}"
    assert set(worst) == set(param_shapes(CFG))


def test_replicas_get_their_own_gradients():
    # Two replicas with different weights and different data, on sequences shorter than
    # block_size (so unused position rows must get zero gradient).
    T = CFG.block_size - 1
    params = _perturbed_params(3, replicas=2)
    extra = _perturbed_params(4)
    for k in params:
        params[k][1] = extra[k][0]
    idx, tgt = _data(5, (2, 3, T))
    losses, grads = forward_backward(params, idx, tgt, CFG)
    for r in range(2):
        one = {k: v[r : r + 1].copy() for k, v in params.items()}
        loss_r, grads_r = forward_backward(one, idx[r : r + 1], tgt[r : r + 1], CFG)
        assert losses[r] == pytest.approx(float(loss_r[0]), rel=1e-12)
        for k in grads:
            np.testing.assert_allclose(grads[k][r], grads_r[k][0], rtol=1e-10, atol=1e-13)
        assert np.all(grads["wpe"][r][T:] == 0)
    assert losses[0] != losses[1]


def test_float32_gradients_agree_with_float64():
    params64 = _perturbed_params(7)
    params32 = {k: v.astype(np.float32) for k, v in params64.items()}
    idx, tgt = _data(8, (1, 2, CFG.block_size))
    l64, g64 = forward_backward(params64, idx, tgt, CFG)
    g64 = {k: v.copy() for k, v in g64.items()}
    l32, g32 = forward_backward(params32, idx, tgt, CFG)
    assert l32.dtype == np.float32
    assert float(l32[0]) == pytest.approx(float(l64[0]), rel=1e-5)
    for k in g64:
        assert g32[k].dtype == np.float32
        np.testing.assert_allclose(g32[k], g64[k], rtol=1e-3, atol=1e-5)
