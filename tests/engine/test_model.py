"""The transformer: parameter layout, initialisation, causal masking, dtypes, and learning."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.engine.model import (
    Model,
    ModelConfig,
    _saved_shapes,
    _softmax_attention_,
    activation_bytes,
    forward_backward,
    init_params,
    logits_last,
    n_params,
    param_shapes,
)
from app.engine.optim import AdamW

CFG = ModelConfig(vocab_size=37, n_layer=2, n_head=4, n_embd=16, block_size=8)


def _data(seed: int, shape: tuple[int, int, int], cfg: ModelConfig = CFG):
    rng = np.random.default_rng(seed)
    return rng.integers(0, cfg.vocab_size, shape), rng.integers(0, cfg.vocab_size, shape)


def test_parameter_names_order_and_count():
    shapes = param_shapes(CFG)
    names = list(shapes)
    assert names[:2] == ["wte", "wpe"]
    assert names[-3:] == ["lnf.g", "lnf.b", "head"]
    per_layer = [
        "ln1.g", "ln1.b", "attn.wqkv", "attn.bqkv", "attn.wo", "attn.bo",
        "ln2.g", "ln2.b", "mlp.w1", "mlp.b1", "mlp.w2", "mlp.b2",
    ]  # fmt: skip
    assert names[2:-3] == [f"layers.{i}.{n}" for i in range(CFG.n_layer) for n in per_layer]
    C, V = CFG.n_embd, CFG.vocab_size
    assert shapes["wte"] == (V, C) and shapes["head"] == (C, V)
    assert shapes["layers.1.attn.wqkv"] == (C, 3 * C)
    assert shapes["layers.0.mlp.w1"] == (C, 4 * C) and shapes["layers.0.mlp.w2"] == (4 * C, C)
    # Embeddings + per layer (2 LN + qkv + wo + MLP) + final LN + untied head.
    per_block = 4 * C + (3 * C * C + 3 * C) + (C * C + C) + (4 * C * C + 4 * C) + (4 * C * C + C)
    assert n_params(CFG) == V * C + CFG.block_size * C + CFG.n_layer * per_block + 2 * C + C * V


def test_init_is_stacked_deterministic_and_gpt2_scaled():
    p = init_params(CFG, seed=5, replicas=3)
    again = init_params(CFG, seed=5, replicas=3)
    other = init_params(CFG, seed=6, replicas=3)
    for name, shape in param_shapes(CFG).items():
        assert p[name].shape == (3, *shape)
        assert p[name].dtype == np.float32
        np.testing.assert_array_equal(p[name], again[name])
        for r in (1, 2):  # every simulated GPU starts from the same weights
            np.testing.assert_array_equal(p[name][r], p[name][0])
    assert not np.array_equal(p["wte"], other["wte"])
    np.testing.assert_array_equal(p["layers.0.ln1.g"], 1.0)
    np.testing.assert_array_equal(p["layers.0.attn.bqkv"], 0.0)
    big = ModelConfig(vocab_size=400, n_layer=4, n_head=4, n_embd=64, block_size=16)
    q = init_params(big, seed=0)
    assert q["wte"].std() == pytest.approx(0.02, rel=0.05)
    assert q["layers.0.mlp.w2"].std() == pytest.approx(0.02 / math.sqrt(8), rel=0.05)
    # float64 from the same seed holds the same numbers.
    p64 = init_params(CFG, seed=5, dtype="float64")
    np.testing.assert_allclose(p64["head"][0], p["head"][0], rtol=1e-6)


def test_loss_at_init_is_about_log_vocab():
    params = init_params(CFG, seed=0, replicas=2)
    idx, tgt = _data(0, (2, 4, CFG.block_size))
    losses, grads = forward_backward(params, idx, tgt, CFG)
    assert losses.shape == (2,)
    for loss in losses:
        assert float(loss) == pytest.approx(math.log(CFG.vocab_size), abs=0.05)
    assert set(grads) == set(params)
    for k in params:
        assert grads[k].shape == params[k].shape and grads[k].dtype == params[k].dtype


def test_causal_mask_future_tokens_do_not_change_the_past():
    params = init_params(CFG, seed=1, replicas=1, dtype="float64")
    rng = np.random.default_rng(3)
    for v in params.values():
        v += rng.standard_normal(v.shape) * 0.2
    model = Model(CFG)
    idx, _ = _data(1, (1, 2, CFG.block_size))
    base = model.logits(params, idx)
    assert base.shape == (1, 2, CFG.block_size, CFG.vocab_size)
    for t in range(CFG.block_size):
        changed = idx.copy()
        changed[..., t] = (changed[..., t] + 1) % CFG.vocab_size
        out = model.logits(params, changed)
        # Equal up to rounding: a future score can move the shift the attention softmax
        # subtracts for stability, which changes nothing but the last bits.
        np.testing.assert_allclose(out[:, :, :t], base[:, :, :t], rtol=1e-12, atol=1e-13)
        assert not np.allclose(out[:, :, t], base[:, :, t])


def test_logits_last_matches_full_forward_and_checks_length():
    params = init_params(CFG, seed=2, replicas=2)
    params["head"][1] *= 2  # replica 1 differs, so `replica` must pick the right row
    idx, _ = _data(2, (2, 1, CFG.block_size))
    full = Model(CFG).logits(params, idx)
    for T in (1, 3, CFG.block_size):
        for r in (0, 1):
            got = logits_last(params, idx[0, 0, :T], CFG, replica=r)
            assert got.shape == (CFG.vocab_size,)
            ref = Model(CFG).logits({k: v[r : r + 1] for k, v in params.items()}, idx[:1, :, :T])
            np.testing.assert_allclose(got, ref[0, 0, -1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        logits_last(params, idx[0, 0], CFG), full[0, 0, -1], rtol=1e-5, atol=1e-6
    )
    with pytest.raises(ValueError):
        logits_last(params, np.zeros(CFG.block_size + 1, dtype=np.int64), CFG)


def test_float32_and_float64_both_work_and_agree():
    idx, tgt = _data(4, (1, 3, CFG.block_size))
    l32, g32 = forward_backward(init_params(CFG, 3, dtype="float32"), idx, tgt, CFG)
    l64, g64 = forward_backward(init_params(CFG, 3, dtype="float64"), idx, tgt, CFG)
    assert l32.dtype == np.float32 and l64.dtype == np.float64
    assert g32["head"].dtype == np.float32 and g64["head"].dtype == np.float64
    assert float(l32[0]) == pytest.approx(float(l64[0]), rel=1e-5)
    np.testing.assert_allclose(g32["wte"], g64["wte"], rtol=1e-3, atol=1e-6)


def test_need_grads_false_and_grads_out():
    params = init_params(CFG, seed=0)
    idx, tgt = _data(5, (1, 2, CFG.block_size))
    only, none = forward_backward(params, idx, tgt, CFG, need_grads=False)
    assert none is None
    out = {k: np.full_like(v, np.nan) for k, v in params.items()}
    losses, grads = forward_backward(params, idx, tgt, CFG, grads=out)
    assert grads is out and all(np.isfinite(v).all() for v in out.values())
    np.testing.assert_array_equal(only, losses)
    model = Model(CFG)
    assert model.last_forward_s is None
    fresh, g2 = model.forward_backward(params, idx, tgt)
    assert 0.0 < model.last_forward_s < 60.0
    for k in params:
        np.testing.assert_array_equal(g2[k], out[k])


def test_identical_replicas_on_identical_data_agree():
    params = init_params(CFG, seed=0, replicas=4)
    idx, tgt = _data(6, (1, 2, CFG.block_size))
    losses, grads = forward_backward(
        params, np.repeat(idx, 4, axis=0), np.repeat(tgt, 4, axis=0), CFG
    )
    assert np.all(losses == losses[0])
    for g in grads.values():
        for r in range(1, 4):
            np.testing.assert_array_equal(g[r], g[0])


def test_activation_bytes_is_what_the_forward_keeps():
    for b in (1, 4):
        model = Model(CFG)
        params = init_params(CFG, seed=0)
        idx, _ = _data(7, (1, b, CFG.block_size))
        ws = model.forward(params, idx)
        kept = sum(a.nbytes for a in ws.saved.values())
        assert activation_bytes(CFG, b) == kept
        assert set(ws.saved) == set(_saved_shapes(CFG, 1, b, CFG.block_size))
    assert activation_bytes(CFG, 4) == 4 * activation_bytes(CFG, 1)
    assert activation_bytes(CFG, 2, "float64") == 2 * activation_bytes(CFG, 2, "float32")


def test_rejects_bad_shapes():
    params = init_params(CFG, seed=0, replicas=2)
    idx, tgt = _data(8, (1, 2, CFG.block_size))
    with pytest.raises(ValueError):
        forward_backward(params, idx, tgt, CFG)  # 1 replica of data, 2 of weights
    with pytest.raises(ValueError):
        forward_backward(params, idx[0], tgt[0], CFG)  # not (R, b, T)
    with pytest.raises(ValueError):
        ModelConfig(vocab_size=10, n_layer=1, n_head=3, n_embd=8, block_size=4)


def test_learns_a_repeating_sequence():
    cfg = ModelConfig(vocab_size=24, n_layer=2, n_head=2, n_embd=32, block_size=8)
    pattern = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8])
    stream = np.tile(pattern, 20)
    rng = np.random.default_rng(0)
    params = init_params(cfg, seed=0, replicas=2)
    opt = AdamW(params, weight_decay=0.0)
    first = last = None
    for _ in range(100):
        starts = rng.integers(0, stream.size - cfg.block_size - 1, (2, 4))
        idx = np.stack([[stream[s : s + 8] for s in row] for row in starts])
        tgt = np.stack([[stream[s + 1 : s + 9] for s in row] for row in starts])
        losses, grads = forward_backward(params, idx, tgt, cfg)
        mean = {k: np.broadcast_to(g.mean(axis=0), g.shape).copy() for k, g in grads.items()}
        opt.step(params, mean, lr=1e-2)
        first = float(losses.mean()) if first is None else first
        last = float(losses.mean())
    assert first == pytest.approx(math.log(cfg.vocab_size), abs=0.1)
    assert last < 0.3, f"loss went from {first:.3f} to only {last:.3f}"
    for k in params:  # data-parallel replicas stay in lockstep
        np.testing.assert_array_equal(params[k][1], params[k][0])


def test_attention_softmax_survives_rows_far_below_their_block():
    cfg = ModelConfig(vocab_size=7, n_layer=1, n_head=1, n_embd=4, block_size=4)
    model = Model(cfg)
    ws = model._workspace(1, 1, 4, np.dtype(np.float32))
    scores = np.zeros((1, 1, 1, 4, 4), dtype=np.float32)
    scores[..., 0, :] = -200.0  # row 0 sits 200 below the block's maximum of 0
    scores += ws.mask
    assert not _softmax_attention_(scores.copy(), ws)  # the fast path declines...
    # ...and the model falls back to an exact softmax: huge q.k scores still give rows of
    # probabilities that sum to one and a finite loss.
    params = init_params(cfg, seed=0)
    params["layers.0.attn.wqkv"] *= 3000.0
    idx = np.array([[[1, 2, 3, 4]]])
    losses, _ = forward_backward(params, idx, idx, cfg)
    att = model.forward(params, idx).saved["0.att"]
    assert np.isfinite(losses).all()
    np.testing.assert_allclose(att.sum(axis=-1), 1.0, rtol=1e-5)
    assert np.all(np.triu(att[0, 0, 0], k=1) == 0)


def test_gradients_land_in_strided_views():
    # The trainer hands in views into one (R, padded P) buffer: rows are not adjacent.
    R = 3
    params = init_params(CFG, seed=0, replicas=R)
    rng = np.random.default_rng(9)
    for v in params.values():
        v += rng.standard_normal(v.shape).astype(np.float32) * 0.1
    idx, tgt = _data(10, (R, 2, CFG.block_size))
    _, ref = forward_backward(params, idx, tgt, CFG)
    ref = {k: v.copy() for k, v in ref.items()}
    total = n_params(CFG)
    flat = np.zeros((R, total + 5), dtype=np.float32)
    views, off = {}, 0
    for name, shape in param_shapes(CFG).items():
        n = math.prod(shape)
        views[name] = flat[:, off : off + n].reshape(R, *shape)
        off += n
    assert not views["wte"].flags.c_contiguous
    forward_backward(params, idx, tgt, CFG, grads=views)
    for k in ref:
        np.testing.assert_allclose(views[k], ref[k], rtol=1e-6, atol=1e-8)
    assert np.all(flat[:, total:] == 0)
