"""A diverging run: a non-finite loss or gradient stops the step before the update, the run
keeps its last good state, checkpoints with non-finite weights are never used, and the CLI
says so in one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from app.cli.main import main
from app.engine.config import RunConfig
from app.engine.report import EVENT_KINDS, Diverged
from app.engine.trainer import Trainer

SMALL = dict(gpus=4, servers=2, batch_size=8, probe_every=0, corpus_stories=300)


def snapshot(t: Trainer) -> dict[str, object]:
    """Everything an update or a step would change, as bytes (NaN compares equal to itself)."""
    out: dict[str, object] = {"step": t.step, "tokens": t.tokens_total, "t": t.engine.opt.t}
    for k, v in t.engine.params.items():
        out[f"p.{k}"] = np.asarray(v).tobytes()
        out[f"m.{k}"] = np.asarray(t.engine.opt.m[k]).tobytes()
        out[f"v.{k}"] = np.asarray(t.engine.opt.v[k]).tobytes()
    out["position"] = t.loader.position
    return out


def test_a_nan_weight_stops_the_step_and_nothing_is_updated(tmp_path):
    cfg = RunConfig(**SMALL, checkpoint_every=2)
    t = Trainer(cfg, tmp_path)
    try:
        for _ in range(3):
            t.train_step()
        t.engine.params["layers.0.mlp.w1"][:, 0, 0] = np.nan
        before = snapshot(t)
        with pytest.raises(Diverged) as info:
            t.train_step()
        e = info.value
        assert e.step == 4 and math.isnan(e.loss)
        assert str(e) == e.message and "\n" not in e.message
        assert e.message == (
            "Step 4 diverged: the loss is nan; the update was not applied "
            "and the run stopped at step 3"
        )
        assert snapshot(t) == before
        ev = e.event()  # what the server tells viewers: JSON-safe numbers
        assert ev.kind == "diverged" and ev.kind in EVENT_KINDS and ev.message == e.message
        assert json.loads(json.dumps(ev.detail, allow_nan=False))["loss"] == "nan"
        assert ev.detail["step"] == 4 and ev.detail["stopped_at"] == 3
        with pytest.raises(Diverged):  # the same data again: it diverges again, still no update
            t.train_step()
        assert snapshot(t) == before
    finally:
        closing = t.close()
    # The weights in memory are not finite, so the final checkpoint is refused, not written.
    assert closing is not None and closing.kind == "checkpoint_failed"
    assert "not finite" in closing.detail["reason"]
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-00000002"]
    again = Trainer(cfg, tmp_path)
    try:
        assert again.step == 2
        assert np.isfinite(again.train_step().loss)
    finally:
        again.close(final_checkpoint=False)


def _poison_once(t: Trainer, step: int, how: str) -> None:
    """From inside the step: one GPU's loss, or the gradients, become non-finite."""
    real = t._forward_backward

    def forward_backward(idx, targets):
        losses, walls = real(idx, targets)
        if t.step + 1 == step:
            if how == "gpu_loss":
                losses = np.array(losses, dtype=float)
                losses[1] = np.inf
            else:
                t.engine.grads["wte"][2, 0, 0] = np.inf
        return losses, walls

    t._forward_backward = forward_backward


@pytest.mark.parametrize(
    ("how", "words"),
    [("gpu_loss", "GPU 2's loss is inf"), ("grad", "the gradient norm is inf")],
)
def test_a_diverged_step_can_be_retried_and_the_run_ends_as_if_it_never_happened(
    tmp_path, how, words
):
    cfg = RunConfig(**SMALL, checkpoint_every=0)
    straight = Trainer(cfg, tmp_path / "a")
    t = Trainer(cfg, tmp_path / "b")
    try:
        for _ in range(6):
            straight.train_step()
        for _ in range(3):
            t.train_step()
        _poison_once(t, 4, how)
        before = snapshot(t)
        with pytest.raises(Diverged) as info:
            t.train_step()
        assert words in info.value.message and info.value.step == 4
        if how == "grad":
            assert math.isinf(info.value.grad_norm) and math.isfinite(info.value.loss)
        assert snapshot(t) == before
        t._forward_backward = Trainer._forward_backward.__get__(t)
        reports = [t.train_step() for _ in range(3)]
        assert [r.step for r in reports] == [4, 5, 6]
        assert t.params_sha256() == straight.params_sha256()
    finally:
        straight.close(final_checkpoint=False)
        t.close(final_checkpoint=False)


def test_a_non_finite_learning_rate_never_reaches_a_report(tmp_path, monkeypatch):
    # RunConfig refuses a non-finite lr; a schedule could still produce one.
    t = Trainer(RunConfig(**SMALL, warmup_steps=0, checkpoint_every=0), tmp_path)
    monkeypatch.setattr(t, "lr_at", lambda step: float("inf"))
    try:
        before = snapshot(t)
        with pytest.raises(Diverged) as info:
            t.train_step()
        assert "the learning rate is inf" in info.value.message
        assert snapshot(t) == before
    finally:
        t.close(final_checkpoint=False)


def test_completed_steps_report_only_finite_numbers(tmp_path):
    t = Trainer(RunConfig(**SMALL, checkpoint_every=0), tmp_path)
    try:
        for _ in range(3):
            r = t.train_step()
            figures = [r.loss, r.grad_norm, r.lr, *r.gpu_losses]
            assert all(isinstance(x, float) and math.isfinite(x) for x in figures)
    finally:
        t.close(final_checkpoint=False)


def test_a_checkpoint_with_nan_weights_and_a_valid_hash_is_skipped(tmp_path):
    import hashlib

    cfg = RunConfig(**SMALL, checkpoint_every=2)
    t = Trainer(cfg, tmp_path)
    for _ in range(4):
        t.train_step()
    t.close(final_checkpoint=False)
    folder = tmp_path / "checkpoints" / "step-00000004"
    with np.load(folder / "state.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["p.head"][0, 0] = np.nan
    np.savez(folder / "state.npz", **arrays)
    manifest = json.loads((folder / "manifest.json").read_text())
    data = (folder / "state.npz").read_bytes()
    manifest["files"]["state.npz"] = {
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))

    t = Trainer(cfg, tmp_path)
    try:
        assert t.step == 2
        (skip,) = [e for e in t.startup_events if e.kind == "checkpoint_skipped"]
        assert skip.detail["path"] == str(folder)
        assert "weights are not finite (NaN or inf)" in skip.detail["reason"]
        assert np.isfinite(t.train_step().loss)
    finally:
        t.close(final_checkpoint=False)


def _strict(line: str) -> dict:
    def refuse(name: str):
        raise ValueError(f"{name} is not JSON")

    return json.loads(line, parse_constant=refuse)


@pytest.fixture
def diverge_at_3(monkeypatch):
    real = Trainer._forward_backward

    def forward_backward(self, idx, targets):
        losses, walls = real(self, idx, targets)
        if self.step + 1 == 3:
            losses = np.full(len(losses), np.nan)
        return losses, walls

    monkeypatch.setattr(Trainer, "_forward_backward", forward_backward)


def test_the_cli_stops_a_diverged_run_with_one_line_and_status_1(
    tmp_path: Path, capsys, diverge_at_3
):
    run_dir = tmp_path / "run"
    args = ["--gpus", "2", "--servers", "1", "--checkpoint-every", "0", "--run-dir", str(run_dir)]
    code = main(["train", "--json", "--steps", "5", *args])
    out, err = capsys.readouterr()
    assert code == 1
    lines = [_strict(line) for line in out.splitlines()]
    assert [x["type"] for x in lines] == ["step", "step", "diverged"]
    last = lines[-1]
    assert last["step"] == 3 and last["loss"] in ("nan", None)
    assert isinstance(last["message"], str) and last["message"].startswith("Step 3 diverged")
    (said,) = [x for x in err.splitlines() if x.startswith("trainingrun train: ")]
    assert said == f"trainingrun train: {last['message']}"
    assert "Traceback" not in err
    assert not list((run_dir / "checkpoints").iterdir())  # nothing new was saved

    code = main(["train", "--steps", "5", *args])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert "\ntrainingrun train: Step 3 diverged: the loss is nan" in "\n" + err
    assert "Traceback" not in err
    assert not list((run_dir / "checkpoints").iterdir())
