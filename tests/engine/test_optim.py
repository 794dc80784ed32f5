"""AdamW against a plain reference implementation, its saved state, and gradient clipping."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.engine.optim import AdamW, clip_grad_norm, decays

SHAPES = {"w": (2, 3, 4), "b": (2, 4), "g": (2, 4)}  # two replicas each


def _params(seed: int, dtype=np.float64) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(s).astype(dtype) for k, s in SHAPES.items()}


def _reference_adamw(p, grads_seq, lrs, b1, b2, eps, wd, decay):
    """Textbook AdamW (decoupled decay, bias-corrected moments), one scalar formula per line."""
    p = p.astype(np.float64).copy()
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t, (g, lr) in enumerate(zip(grads_seq, lrs, strict=True), start=1):
        if decay:
            p = p - lr * wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1**t)
        v_hat = v / (1 - b2**t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p, m, v


def test_decay_applies_to_matrices_only():
    assert decays("layers.0.attn.wqkv", (4, 8, 24))
    assert decays("wte", (1, 50, 8))
    assert not decays("layers.0.attn.bqkv", (4, 24))
    assert not decays("lnf.g", (4, 8))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_adamw_matches_reference(dtype):
    b1, b2, eps, wd = 0.9, 0.99, 1e-8, 0.1
    params = _params(0, dtype)
    start = {k: v.copy() for k, v in params.items()}
    rng = np.random.default_rng(1)
    # Each replica row gets its own gradients: rows must be updated independently.
    grads_seq = [
        {k: rng.standard_normal(s).astype(dtype) for k, s in SHAPES.items()} for _ in range(6)
    ]
    lrs = [1e-2, 2e-2, 3e-2, 3e-2, 2e-2, 1e-2]
    opt = AdamW(params, betas=(b1, b2), eps=eps, weight_decay=wd)
    for g, lr in zip(grads_seq, lrs, strict=True):
        opt.step(params, g, lr)
    assert opt.t == 6
    tol = 1e-12 if dtype == np.float64 else 2e-6
    for k in SHAPES:
        ref, m, v = _reference_adamw(
            start[k], [g[k] for g in grads_seq], lrs, b1, b2, eps, wd, decays(k, SHAPES[k])
        )
        assert params[k].dtype == dtype
        np.testing.assert_allclose(params[k], ref, rtol=tol, atol=tol)
        # The saved moments are the textbook ones.
        state = opt.state_dict()
        np.testing.assert_allclose(state["m." + k], m, rtol=tol * 10, atol=tol)
        np.testing.assert_allclose(state["v." + k], v, rtol=tol * 10, atol=tol)
    itemsize = np.dtype(dtype).itemsize
    assert opt.state_bytes() == 2 * itemsize * sum(int(np.prod(s)) for s in SHAPES.values())
    assert not np.allclose(params["w"], start["w"])


def test_state_dict_round_trip_continues_identically():
    rng = np.random.default_rng(2)
    grads_seq = [{k: rng.standard_normal(s) for k, s in SHAPES.items()} for _ in range(5)]
    a = _params(3)
    opt_a = AdamW(a)
    for g in grads_seq[:3]:
        opt_a.step(a, g, 1e-2)
    state = opt_a.state_dict()
    assert state["t"] == 3 and set(state) == {"t"} | {f"{x}.{k}" for x in "mv" for k in SHAPES}
    b = {k: v.copy() for k, v in a.items()}
    opt_b = AdamW(b)
    opt_b.load_state_dict(state)
    for g in grads_seq[3:]:
        opt_a.step(a, g, 1e-2)
        opt_b.step(b, g, 1e-2)
    for k in SHAPES:
        np.testing.assert_array_equal(a[k], b[k])
    # The saved state is a copy: later steps do not change it.
    assert state["t"] == 3
    assert not np.array_equal(state["m.w"], opt_a.state_dict()["m.w"])


def test_load_state_dict_broadcasts_a_single_replica_and_rejects_wrong_shapes():
    params = _params(4)
    opt = AdamW(params)
    one = {"t": 7}
    for k, s in SHAPES.items():
        one["m." + k] = np.full(s[1:], 0.5)
        one["v." + k] = np.full((1, *s[1:]), 0.25)
    opt.load_state_dict(one)
    assert opt.t == 7
    back = opt.state_dict()
    np.testing.assert_allclose(back["m.w"], 0.5, rtol=1e-12)
    np.testing.assert_allclose(back["v.b"], 0.25, rtol=1e-12)
    assert back["m.w"].shape == SHAPES["w"]
    bad = dict(one, **{"m.w": np.zeros((3, 3, 4))})
    with pytest.raises(ValueError):
        opt.load_state_dict(bad)
    with pytest.raises(KeyError):
        opt.load_state_dict({"t": 1})


def test_clip_grad_norm_scales_every_replica_by_row_zero_norm():
    rng = np.random.default_rng(5)
    grads = {k: rng.standard_normal(s) for k, s in SHAPES.items()}
    for g in grads.values():
        g[1] = g[0]  # after the all-reduce every replica holds the same gradient
    expected = math.sqrt(sum(float((g[0] ** 2).sum()) for g in grads.values()))
    before = {k: v.copy() for k, v in grads.items()}
    norm = clip_grad_norm(grads, max_norm=1.0)
    assert norm == pytest.approx(expected, rel=1e-12)
    assert expected > 1.0
    after = math.sqrt(sum(float((g[0] ** 2).sum()) for g in grads.values()))
    assert after == pytest.approx(1.0, rel=1e-5)
    for k in grads:
        np.testing.assert_allclose(grads[k], before[k] * (after / expected), rtol=1e-12)
        np.testing.assert_array_equal(grads[k][1], grads[k][0])
    # Under the limit: returned, left alone.
    small = {k: v * 1e-3 for k, v in before.items()}
    keep = {k: v.copy() for k, v in small.items()}
    assert clip_grad_norm(small, max_norm=1.0) == pytest.approx(expected * 1e-3, rel=1e-12)
    for k in small:
        np.testing.assert_array_equal(small[k], keep[k])


def test_rows_identical_update_is_bit_for_bit_the_full_update():
    rng = np.random.default_rng(6)
    R = 4
    base = {k: np.repeat(rng.standard_normal((1, *s[1:])), R, axis=0) for k, s in SHAPES.items()}
    full = {k: v.astype(np.float32) for k, v in base.items()}
    shared = {k: v.copy() for k, v in full.items()}
    opt_full, opt_shared = AdamW(full, weight_decay=0.1), AdamW(shared, weight_decay=0.1)
    for _ in range(4):
        g1 = {k: rng.standard_normal((1, *s[1:])).astype(np.float32) for k, s in SHAPES.items()}
        grads = {k: np.repeat(v, R, axis=0) for k, v in g1.items()}
        opt_full.step(full, grads, 1e-2)
        opt_shared.step(shared, grads, 1e-2, rows_identical=True)
    a, b = opt_full.state_dict(), opt_shared.state_dict()
    for k in SHAPES:
        np.testing.assert_array_equal(shared[k], full[k])
        np.testing.assert_array_equal(b["m." + k], a["m." + k])
        np.testing.assert_array_equal(b["v." + k], a["v." + k])
        np.testing.assert_array_equal(shared[k][3], shared[k][0])
    assert not np.array_equal(full["w"], base["w"].astype(np.float32))
