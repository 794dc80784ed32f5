"""Damaged data: a built-in shard is rebuilt from the seeded stories; the user's own text may
be edited between fresh runs, but a resumed run refuses text its checkpoints were not made on."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from app.engine.config import RunConfig
from app.engine.lake import DataError, DataLake
from app.engine.trainer import Trainer

SMALL = dict(gpus=4, servers=2, batch_size=8, probe_every=0, corpus_stories=300)

USER_TEXT = "\n".join(
    f"The {a} {b} sat by the {c} and sang a song about the {d} ."
    for a in ("red", "blue", "green", "old")
    for b in ("fox", "owl", "cat", "dog")
    for c in ("river", "hill", "road")
    for d in ("moon", "sea")
)


def test_the_built_in_lake_records_every_shards_hash_last(tmp_path):
    lake = DataLake(tmp_path, stories=300)
    record = json.loads((tmp_path / "lake.json").read_text())
    assert [s["name"] for s in record["shards"]] == [p.name for p in lake.shards]
    for entry, path in zip(record["shards"], lake.shards, strict=True):
        data = path.read_bytes()
        assert entry == {
            "name": path.name,
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    assert lake.describe()["sha256"] == lake.sha256 and len(lake.sha256) == 64


def test_a_truncated_built_in_shard_is_rebuilt_identically(tmp_path):
    DataLake(tmp_path, stories=300)
    shard = tmp_path / "shard-0001.txt"
    original = shard.read_bytes()
    shard.write_bytes(original[: len(original) // 2])
    (tmp_path / "shard-0002.txt").unlink()
    messages: list[str] = []
    lake = DataLake(tmp_path, stories=300, log=messages.append)
    assert shard.read_bytes() == original
    assert lake.read_shard(1) == original.decode()
    assert (tmp_path / "shard-0002.txt").exists()
    assert len(messages) == 2
    assert "shard-0001.txt" in messages[0] and "rebuilt" in messages[0]
    assert f"{len(original) // 2} bytes" in messages[0]
    assert "shard-0002.txt" in messages[1] and "missing" in messages[1]
    assert [path.name for path, _ in lake.repairs] == ["shard-0001.txt", "shard-0002.txt"]
    again: list[str] = []
    DataLake(tmp_path, stories=300, log=again.append)
    assert again == []  # repaired for good


def test_a_shard_damaged_after_opening_is_rebuilt_when_read(tmp_path):
    messages: list[str] = []
    lake = DataLake(tmp_path, stories=300, log=messages.append)
    shard = tmp_path / "shard-0000.txt"
    original = shard.read_text()
    shard.write_text(original.replace("time", "tame", 1))
    assert lake.read_shard(0) == original
    assert shard.read_text() == original
    assert len(messages) == 1 and "shard-0000.txt" in messages[0]


def test_a_run_resumed_over_a_damaged_built_in_shard_trains_on_the_same_text(tmp_path):
    cfg = RunConfig(**SMALL, checkpoint_every=3)
    straight = Trainer(cfg, tmp_path / "a")
    t = Trainer(cfg, tmp_path / "b")
    try:
        for _ in range(6):
            straight.train_step()
        for _ in range(3):
            t.train_step()
    finally:
        straight.close(final_checkpoint=False)
        t.close(final_checkpoint=False)
    shard = tmp_path / "b" / "lake" / "shard-0000.txt"
    shard.write_bytes(shard.read_bytes()[:500])
    t = Trainer(cfg, tmp_path / "b")
    try:
        (rebuilt,) = [e for e in t.startup_events if e.kind == "shard_rebuilt"]
        assert rebuilt.detail["path"] == str(shard) and "rebuilt" in rebuilt.message
        assert t.step == 3
        while t.step < 6:
            t.train_step()
        assert t.params_sha256() == straight.params_sha256()
    finally:
        t.close(final_checkpoint=False)


def test_user_text_changed_while_reading_is_an_error_naming_the_file(tmp_path):
    data = tmp_path / "mine.txt"
    data.write_text(USER_TEXT)
    lake = DataLake(tmp_path / "lake", data=str(data))
    data.write_text(USER_TEXT.replace("fox", "bee"))
    with pytest.raises(DataError) as info:
        lake.read_shard(0)
    assert str(data) in str(info.value) and "\n" not in str(info.value)


def _user_run(tmp_path: Path, data: Path, **kw) -> Trainer:
    return Trainer(RunConfig(**SMALL, checkpoint_every=3, data=str(data)), tmp_path / "run", **kw)


@pytest.mark.parametrize("change", ["edited", "truncated", "removed", "added"])
def test_resuming_on_changed_user_text_is_an_error_naming_the_file(tmp_path, change):
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "a.txt").write_text(USER_TEXT)
    (folder / "b.txt").write_text(USER_TEXT.replace("sang", "hummed"))
    t = _user_run(tmp_path, folder)
    for _ in range(3):
        t.train_step()
    t.close()

    named = folder / "b.txt"
    if change == "edited":
        named.write_text(USER_TEXT.replace("sang", "whistled"))
    elif change == "truncated":
        named.write_bytes(named.read_bytes()[:-40])
    elif change == "removed":
        named.unlink()
    else:
        named = folder / "c.txt"
        named.write_text(USER_TEXT)
    with pytest.raises(DataError) as info:
        _user_run(tmp_path, folder)
    message = str(info.value)
    assert str(named) in message and "\n" not in message, message
    assert "step 3" in message

    # A fresh run reads the files as they are now, and records them.
    t = _user_run(tmp_path, folder, fresh=True)
    try:
        assert t.step == 0
        t.train_step()
    finally:
        t.close()
    t = _user_run(tmp_path, folder)  # resumed on the text it was made on: fine
    try:
        assert t.step == 1
    finally:
        t.close(final_checkpoint=False)


def test_user_text_may_change_between_runs_that_have_no_checkpoint(tmp_path):
    data = tmp_path / "mine.txt"
    data.write_text(USER_TEXT)
    t = _user_run(tmp_path, data)
    t.train_step()
    t.close(final_checkpoint=False)
    data.write_text(USER_TEXT.replace("fox", "bee"))
    t = _user_run(tmp_path, data)
    try:
        assert t.step == 0 and "bee" in t.vocab
    finally:
        t.close(final_checkpoint=False)
