"""The training run end to end: data parallel = one device, determinism, failures, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.config import RunConfig
from app.engine.trainer import Trainer

SMALL = dict(gpus=4, servers=2, batch_size=8, probe_every=5)


def _params(trainer: Trainer) -> dict[str, np.ndarray]:
    return {k: np.array(v[0]) for k, v in trainer.engine.params.items()}


def test_data_parallel_matches_a_single_device(tmp_path, shared_lake):
    results = {}
    for g in (1, 2, 4, 8, 16):
        servers = 2 if g >= 2 else 1
        cfg = RunConfig(
            gpus=g,
            servers=servers,
            batch_size=16,
            dtype="float64",
            checkpoint_every=0,
            corpus_stories=400,
        )
        t = Trainer(cfg, shared_lake(tmp_path / f"g{g}", 400))
        try:
            for _ in range(20):
                t.train_step()
            assert t.replicas_identical()
            results[g] = _params(t)
        finally:
            t.close(final_checkpoint=False)
    # The shared AdamW update gives the same bits as every GPU updating its own copy.
    cfg = RunConfig(
        gpus=4, servers=2, batch_size=16, dtype="float64", checkpoint_every=0, corpus_stories=400
    )
    own = Trainer(cfg, shared_lake(tmp_path / "own", 400))
    try:
        own.engine.shared_update = False
        for _ in range(20):
            own.train_step()
        assert own.replicas_identical()
        for name, p in _params(own).items():
            np.testing.assert_array_equal(p, results[4][name])
    finally:
        own.close(final_checkpoint=False)
    for g in (2, 4, 8, 16):
        for name, ref in results[1].items():
            err = np.max(np.abs(results[g][name] - ref)) / max(np.max(np.abs(ref)), 1e-30)
            assert err <= 1e-6, f"{g} GPUs differ on {name}: {err:.2e}"


def test_step_report_carries_the_whole_story(tmp_path):
    t = Trainer(RunConfig(**SMALL, checkpoint_every=2), tmp_path)
    try:
        r1 = t.train_step()
        r2 = t.train_step()
    finally:
        t.close()
    assert (r1.step, r2.step) == (1, 2)
    assert len(r1.gpu_losses) == 4 and r1.loss == pytest.approx(np.mean(r1.gpu_losses))
    kinds = [s.kind for s in r1.trace.spans]
    assert kinds == ["data", "forward", "backward", "optimizer"]
    assert [r.kind for r in r1.trace.rings] == ["allreduce"]
    assert all(s.dur >= 0 and s.wall_s >= 0 for s in r1.trace.spans)
    assert r1.sim_step_s == pytest.approx(
        sum(s.dur for s in r1.trace.spans) + r1.trace.rings[0].dur
    )
    assert r1.ring.passes == 2 * (4 - 1) and r1.trace.rings[0].passes == r1.ring.passes
    assert r1.trace.rings[0].ring == [0, 1, 2, 3]
    assert {l.kind for l in r1.ring.links if l.hops} == {"nvlink", "spine"}
    assert r1.tokens == 8 * 16 and r2.tokens_total == 2 * 8 * 16
    assert r1.probe is not None and r1.probe.prompt == "Once upon a"
    assert len(r1.probe.top) == 5 and len(r1.probe.weights) == 16
    assert r1.probe.top[0].p >= r1.probe.top[-1].p
    m = r1.memory[0]
    assert m.weights == m.grads and m.optimizer == 2 * m.weights and m.activations > 0
    assert m.total == m.weights + m.grads + m.optimizer + m.activations
    assert [e.kind for e in r2.events] == ["checkpoint_saved"]
    # The one GPU holding the data-parallel model's one shard writes it; the rest wait.
    (ckpt,) = [s for s in r2.trace.spans if s.kind == "checkpoint"]
    assert ckpt.lanes == [0] and ckpt.dur > 0
    assert r2.trace.spans[-1].kind == "wait" and r2.trace.spans[-1].lanes == [1, 2, 3]
    assert r1.loader.queue_capacity == 4 and r1.loader.samples_per_epoch > 0


def test_failure_rolls_back_and_replays_the_same_numbers(tmp_path):
    cfg = RunConfig(**SMALL, checkpoint_every=5)
    straight = Trainer(cfg, tmp_path / "a")
    failing = Trainer(cfg, tmp_path / "b")
    try:
        for _ in range(12):
            straight.train_step()
        for _ in range(8):
            failing.train_step()
        events = failing.fail_gpu(3)
        kinds = [e.kind for e in events]
        assert kinds == ["gpu_failed", "restored", "gpu_replaced"]
        restored = events[1].detail
        assert restored == {
            "failed_step": 9,
            "restored_step": 5,
            "steps_lost": 4,
            "reason": "failure",
        }
        assert failing.step == 5 and failing.restarts == 1
        while failing.step < 12:
            failing.train_step()
        assert failing.params_sha256() == straight.params_sha256()
        with pytest.raises(ValueError, match="gpu must be between 0 and 3"):
            failing.fail_gpu(4)
    finally:
        straight.close()
        failing.close()


def test_scheduled_failure_without_a_checkpoint_restarts_from_step_zero(tmp_path):
    t = Trainer(RunConfig(**SMALL, checkpoint_every=0), tmp_path)
    try:
        t.schedule_failure(3, 1)
        t.train_step()
        t.train_step()
        r = t.train_step()
        assert [e.kind for e in r.events][:3] == ["gpu_failed", "restored", "gpu_replaced"]
        assert r.events[1].detail["restored_step"] == 0 and r.step == 1
    finally:
        t.close(final_checkpoint=False)


def test_corrupt_checkpoints_are_skipped_with_a_reason(tmp_path):
    cfg = RunConfig(**SMALL, checkpoint_every=3, keep_checkpoints=5)
    t = Trainer(cfg, tmp_path)
    for _ in range(9):
        t.train_step()
    t.close()
    ck = tmp_path / "checkpoints"
    # Step 9: truncated weights. Step 6: one byte changed, size kept. Step 3 is good.
    state = ck / "step-00000009" / "state.npz"
    state.write_bytes(state.read_bytes()[:100])
    meta = ck / "step-00000006" / "meta.json"
    raw = bytearray(meta.read_bytes())
    raw[2] = ord("X") if raw[2] != ord("X") else ord("Y")
    meta.write_bytes(bytes(raw))
    # A save that never finished: no manifest.
    (ck / "step-00000012").mkdir()
    (ck / "step-00000012" / "state.npz").write_bytes(b"partial")

    messages: list[str] = []
    t2 = Trainer(cfg, tmp_path, log=messages.append)
    try:
        assert t2.step == 3
        skipped = [e for e in t2.startup_events if e.kind == "checkpoint_skipped"]
        reasons = [e.detail["reason"] for e in skipped]
        assert len(skipped) == 3
        assert "no manifest" in reasons[0]
        assert "bytes" in reasons[1]  # truncated
        assert "sha256" in reasons[2]
        assert any("Skipped checkpoint step-00000009" in m for m in messages)
        assert t2.startup_events[-1].kind == "restored"
        listing = {c["step"]: c["ok"] for c in t2.checkpoints()}
        assert listing == {3: True, 6: False, 9: False, 12: False}
    finally:
        t2.close(final_checkpoint=False)


def test_checkpoint_now_and_keep_last_n(tmp_path):
    t = Trainer(RunConfig(**SMALL, checkpoint_every=1, keep_checkpoints=2), tmp_path)
    try:
        for _ in range(4):
            t.train_step()
        ev = t.checkpoint_now()
        assert ev.kind == "checkpoint_saved" and ev.detail["reason"] == "on_demand"
        assert [c["step"] for c in t.checkpoints()] == [3, 4]
        assert not list((tmp_path / "checkpoints").glob(".tmp-*"))
    finally:
        t.close()


@pytest.mark.parametrize(
    "field, value",
    [("lr", 0.0), ("lr", float("nan")), ("lr", float("inf")), ("lr", -1e-3), ("eps", 0.0),
     ("weight_decay", float("nan")), ("grad_clip", -1.0), ("beta1", 1.0), ("beta2", -0.1)],
)  # fmt: skip
def test_optimiser_settings_that_cannot_train_are_refused(field, value):
    with pytest.raises(ValueError, match=field):
        RunConfig(**{field: value})


def test_step_report_carries_the_texts_each_copy_trained_on(tmp_path):
    """The report names the first texts of the step's batch as words, dealt over the
    data-parallel copies in turn: exactly the token ids each copy's batch held."""
    t = Trainer(RunConfig(**SMALL, checkpoint_every=0), tmp_path)
    try:
        r = t.train_step()
        t.loader.seek(0)  # the data's order is fixed by the seed: step 1's batch again
        first, _ = t.loader.next()
    finally:
        t.close()
    assert [x.replica for x in r.texts] == [0, 1, 2, 3]
    for x in r.texts:
        words = t.lake.vocab.decode(first.idx[x.replica, 0])
        assert x.text.replace(" ", "") == "".join(words), (x.text, words)


def test_texts_read_as_sentences() -> None:
    """Words are spaced, punctuation stands against the word before, an opening quote or
    bracket against the word after, and a quote a text starts inside is closed."""
    from app.engine.lake import Vocab

    words = ["<unk>", "Once", "upon", "a", "time", ",", ".", '"', "(", ")", "said", "it", "?"]
    v = Vocab(words + ["asked", "Hi", "x"])
    ids = {w: i for i, w in enumerate(v.words)}
    line = lambda s: v.text([ids[w] for w in s.split("|")])  # noqa: E731
    assert line('Once|upon|a|time|,|x|said|,|"|Hi|.|"') == 'Once upon a time, x said, "Hi."'
    assert line('it|?|"|asked|x|.|(|x|)') == 'it?" asked x. (x)'
    assert line('"|Hi|.|"|said|x') == '"Hi." said x'
