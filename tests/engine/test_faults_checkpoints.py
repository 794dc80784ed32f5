"""Checkpoints that must not stop or mislead a run: malformed ones that pass their hash,
unusable ones crowding out fresh saves, a full or read-only disk, another run's leftovers,
and a run dir that cannot be used."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from app.engine import checkpoint as ckpt_mod
from app.engine.checkpoint import CheckpointSaveError, CheckpointStore
from app.engine.config import RunConfig
from app.engine.report import EVENT_KINDS
from app.engine.trainer import RunDirError, Trainer

SMALL = dict(gpus=4, servers=2, batch_size=8, probe_every=0, corpus_stories=300)


def rehash(folder: Path) -> None:
    """Rewrite a checkpoint's manifest so its hashes match whatever its files now hold."""
    mpath = folder / "manifest.json"
    manifest = json.loads(mpath.read_text())
    for name in ("state.npz", "meta.json"):
        data = (folder / name).read_bytes()
        manifest["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    mpath.write_text(json.dumps(manifest))


def edit_meta(folder: Path, change) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps(change(meta)))
    rehash(folder)


def edit_arrays(folder: Path, change) -> None:
    with np.load(folder / "state.npz") as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    np.savez(folder / "state.npz", **arrays)
    rehash(folder)


def edit_manifest(folder: Path, change) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps(change(manifest)))


def _drop(d: dict, key: str) -> dict:
    d.pop(key)
    return d


def _set(d: dict, key: str, value) -> dict:
    d[key] = value
    return d


def _no_sha(manifest: dict) -> dict:
    del manifest["files"]["state.npz"]["sha256"]
    return manifest


def _a_file(folder: Path) -> None:
    for f in folder.iterdir():
        f.unlink()
    folder.rmdir()
    folder.write_bytes(b"not a checkpoint folder")


# (name, how to damage the newer checkpoint, words its skip reason must contain)
MALFORMED = [
    ("meta without step", lambda f: edit_meta(f, lambda m: _drop(m, "step")), "'step'"),
    ("meta without opt_t", lambda f: edit_meta(f, lambda m: _drop(m, "opt_t")), "'opt_t'"),
    ("opt_t not a number", lambda f: edit_meta(f, lambda m: _set(m, "opt_t", "six")), "'opt_t'"),
    ("meta step disagrees", lambda f: edit_meta(f, lambda m: _set(m, "step", 5)), "step 5"),
    ("meta is a list", lambda f: edit_meta(f, lambda m: [m]), "not a JSON object"),
    (
        "array of the wrong shape",
        lambda f: edit_arrays(f, lambda a: a.update({"p.wte": a["p.wte"][:-1]})),
        "shape",
    ),
    ("array missing", lambda f: edit_arrays(f, lambda a: a.pop("m.head")), "m.head"),
    (
        "array of text",
        lambda f: edit_arrays(f, lambda a: a.update({"p.lnf.b": np.full(a["p.lnf.b"].shape, "x")})),
        "p.lnf.b",
    ),
    (
        "files is a list",
        lambda f: edit_manifest(f, lambda m: _set(m, "files", list(m["files"]))),
        "'files'",
    ),
    ("files is a string", lambda f: edit_manifest(f, lambda m: _set(m, "files", "x")), "'files'"),
    ("entry without sha256", lambda f: edit_manifest(f, _no_sha), "sha256"),
    ("a plain file", _a_file, "not a folder"),
]


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    """A run dir with good checkpoints at steps 3 and 6."""
    run = tmp_path_factory.mktemp("good")
    t = Trainer(RunConfig(**SMALL, checkpoint_every=3), run)
    for _ in range(6):
        t.train_step()
    t.close(final_checkpoint=False)
    return run


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize(("name", "damage", "words"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_checkpoint_is_skipped_with_a_reason(good_run, tmp_path, name, damage, words):
    run = _copy(good_run, tmp_path / "run")
    damage(run / "checkpoints" / "step-00000006")
    t = Trainer(RunConfig(**SMALL, checkpoint_every=3), run)
    try:
        assert t.step == 3
        (skip,) = [e for e in t.startup_events if e.kind == "checkpoint_skipped"]
        assert skip.detail["path"].endswith("step-00000006")
        reason = skip.detail["reason"]
        assert words in reason and "\n" not in reason, reason
        assert skip.message == f"Skipped checkpoint step-00000006: {reason}"
        listing = {c["step"]: c["ok"] for c in t.checkpoints()}
        assert listing == {3: True, 6: False}
    finally:
        t.close(final_checkpoint=False)


def test_pruning_keeps_the_fresh_save_and_removes_unusable_ones(good_run, tmp_path):
    run = _copy(good_run, tmp_path / "run")
    ck = run / "checkpoints"
    for step in (100, 101, 102):  # newer saves that never finished
        (ck / f"step-{step:08d}").mkdir()
        (ck / f"step-{step:08d}" / "state.npz").write_bytes(b"partial")
    cfg = RunConfig(**SMALL, checkpoint_every=3, keep_checkpoints=3)
    t = Trainer(cfg, run)
    try:
        assert t.step == 6
        assert len([e for e in t.startup_events if e.kind == "checkpoint_skipped"]) == 3
        (leftover := ck / ".tmp-step-00000009-1").mkdir()  # a save that crashed half-way
        while t.step < 9:
            report = t.train_step()
        saved = [e for e in report.events if e.kind == "checkpoint_saved"]
        assert saved and saved[0].detail["step"] == 9
        assert (ck / "step-00000009" / "manifest.json").exists()
        assert sorted(p.name for p in ck.iterdir()) == [
            "step-00000003",
            "step-00000006",
            "step-00000009",
        ]
        assert not leftover.exists()
        while t.step < 12:
            t.train_step()
        assert [c["step"] for c in t.checkpoints()] == [6, 9, 12]
    finally:
        t.close(final_checkpoint=False)
    again = Trainer(cfg, run)
    try:
        assert again.step == 12
        assert not [e for e in again.startup_events if e.kind == "checkpoint_skipped"]
    finally:
        again.close(final_checkpoint=False)


def test_a_full_disk_fails_the_save_and_keeps_the_run_going(tmp_path, monkeypatch):
    assert "checkpoint_failed" in EVENT_KINDS
    cfg = RunConfig(**SMALL, checkpoint_every=2)
    t = Trainer(cfg, tmp_path)
    ck = tmp_path / "checkpoints"
    try:
        t.train_step()
        t.train_step()  # a good checkpoint at step 2
        real_write = ckpt_mod._write_synced

        def full(path: Path, data: bytes) -> None:
            if path.name == "state.npz":
                raise OSError(errno.ENOSPC, "No space left on device")
            real_write(path, data)

        monkeypatch.setattr(ckpt_mod, "_write_synced", full)
        t.train_step()
        report = t.train_step()
        (failed,) = [e for e in report.events if e.kind == "checkpoint_failed"]
        assert failed.step == 4 and failed.detail["step"] == 4
        reason = failed.detail["reason"]
        assert reason.startswith("No space left on device while writing ")
        assert reason.endswith("state.npz") and "\n" not in reason
        assert "\n" not in failed.message and "step 2" in failed.message
        assert report.step == 4 and np.isfinite(report.loss)
        assert not any(e.kind == "checkpoint_saved" for e in report.events)
        assert sorted(p.name for p in ck.iterdir()) == ["step-00000002"]  # nothing partial
        now = t.checkpoint_now()
        assert now.kind == "checkpoint_failed"
        t.train_step()  # training goes on
        monkeypatch.setattr(ckpt_mod, "_write_synced", real_write)
        report = t.train_step()
        assert [e.kind for e in report.events] == ["checkpoint_saved"]
    finally:
        t.close(final_checkpoint=False)
    assert [c["step"] for c in CheckpointStore(ck).listing()] == [2, 6]


def test_a_failed_save_leaves_no_folder_and_raises_one_clear_error(tmp_path, monkeypatch):
    store = CheckpointStore(tmp_path)
    arrays = {"p.w": np.ones((2, 2), np.float32)}
    meta = {"step": 1, "tokens_total": 0, "opt_t": 1}
    store.save(1, arrays, meta, "h")

    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ckpt_mod, "_write_synced", full)
    with pytest.raises(CheckpointSaveError) as info:
        store.save(2, arrays, {**meta, "step": 2}, "h")
    assert str(info.value).startswith("No space left on device while writing ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-00000001"]
    # Saving again at the same step must not lose the good copy already there.
    with pytest.raises(CheckpointSaveError):
        store.save(1, arrays, meta, "h")
    assert store.load(store.path_for(1)).step == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_checkpoints_folder_fails_the_save_and_keeps_the_run_going(tmp_path):
    t = Trainer(RunConfig(**SMALL, checkpoint_every=2), tmp_path)
    ck = tmp_path / "checkpoints"
    try:
        t.train_step()
        t.train_step()
        ck.chmod(0o555)
        t.train_step()
        report = t.train_step()
        (failed,) = [e for e in report.events if e.kind == "checkpoint_failed"]
        assert "Permission denied" in failed.detail["reason"]
        assert sorted(p.name for p in ck.iterdir()) == ["step-00000002"]
    finally:
        ck.chmod(0o755)
        t.close(final_checkpoint=False)


def test_checkpoints_of_another_run_are_skipped(tmp_path):
    cfg = RunConfig(**SMALL, checkpoint_every=2)
    old = Trainer(cfg, tmp_path, run_id="run-old")
    for _ in range(4):
        old.train_step()
    old.close(final_checkpoint=False)
    meta = json.loads((tmp_path / "checkpoints" / "step-00000004" / "meta.json").read_text())
    assert meta["run_id"] == "run-old"

    same = Trainer(cfg, tmp_path, run_id="run-old")
    assert same.step == 4
    same.close(final_checkpoint=False)

    new = Trainer(cfg, tmp_path, run_id="run-new")
    try:
        assert new.step == 0
        reasons = [e.detail["reason"] for e in new.startup_events if e.kind == "checkpoint_skipped"]
        assert reasons == ["belongs to another run (run-old)"] * 2
        assert not any(e.kind == "restored" for e in new.startup_events)
    finally:
        new.close(final_checkpoint=False)

    # Checkpoints from before runs had ids carry none: nothing to compare, so they are used.
    anon = tmp_path / "anon"
    t = Trainer(cfg, anon)
    t.train_step()
    t.train_step()
    t.close(final_checkpoint=False)
    t = Trainer(cfg, anon, run_id="run-x")
    try:
        assert t.step == 2
    finally:
        t.close(final_checkpoint=False)


def test_a_run_dir_that_is_a_file_is_one_clear_error(tmp_path):
    plain = tmp_path / "plain"
    plain.write_text("not a folder")
    with pytest.raises(RunDirError) as info:
        Trainer(RunConfig(**SMALL), plain)
    assert isinstance(info.value, OSError)
    assert str(plain) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(RunDirError) as info:
        Trainer(RunConfig(**SMALL), plain / "run")
    assert str(plain / "run") in str(info.value)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "checkpoints").write_text("a file where the folder goes")
    with pytest.raises(RunDirError) as info:
        Trainer(RunConfig(**SMALL), tmp_path / "run")
    assert "checkpoints" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_run_dir_that_is_not_writable_is_one_clear_error(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    run.chmod(0o555)
    try:
        with pytest.raises(RunDirError) as info:
            Trainer(RunConfig(**SMALL), run)
        assert str(run) in str(info.value) and "\n" not in str(info.value)
    finally:
        run.chmod(0o755)


def test_a_kill_while_an_old_checkpoint_is_removed_leaves_no_damaged_one(tmp_path, monkeypatch):
    """Pruning an old checkpoint is cut short (the process killed part-way through removing
    its files): nothing named like a checkpoint is left half-removed, so the listing shows
    only whole ones, and the next save sweeps what was left."""
    store = CheckpointStore(tmp_path, keep=2)
    arrays = {"p.w": np.ones((2, 2), np.float32), "p.b": np.zeros(2, np.float32)}
    meta = {"step": 1, "tokens_total": 0, "opt_t": 1}
    store.save(1, arrays, meta, "h")
    store.save(2, arrays, {**meta, "step": 2}, "h")
    real_remove = ckpt_mod._remove

    class Killed(BaseException):
        pass

    def cut_short(path: Path) -> None:
        if not (path.is_dir() and "step-00000001" in path.name):
            return real_remove(path)
        next(f for f in sorted(path.iterdir()) if f.is_file()).unlink()  # one file gone...
        raise Killed  # ... then the process dies

    monkeypatch.setattr(ckpt_mod, "_remove", cut_short)
    with pytest.raises(Killed):
        store.save(3, arrays, {**meta, "step": 3}, "h")  # keep=2: step 1 goes
    monkeypatch.setattr(ckpt_mod, "_remove", real_remove)
    listing = CheckpointStore(tmp_path, keep=2).listing()
    assert all(c["ok"] for c in listing), listing
    store.save(4, arrays, {**meta, "step": 4}, "h")
    assert [c["step"] for c in store.listing()] == [3, 4]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(ckpt_mod.TMP_PREFIX)]
