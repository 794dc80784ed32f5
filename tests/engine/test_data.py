"""Data lake and loaders: seeded stories on disk, user text, and exact epoch coverage."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.lake import DataError, DataLake
from app.engine.loader import Loader


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    return DataLake(tmp_path_factory.mktemp("lake"), stories=300)


def test_builtin_lake_is_written_as_shards_and_is_deterministic(lake, tmp_path):
    assert len(lake.shards) == 3 and all(p.exists() for p in lake.shards)
    text = lake.read_shard(0)
    assert text.startswith("Once upon a time")
    assert text.count("Once upon a time") == 100
    again = DataLake(tmp_path / "other", stories=300)
    assert again.read_shard(2) == lake.read_shard(2)
    assert again.vocab.words == lake.vocab.words
    assert {"Once", "upon", "a", "time", "<unk>"} <= set(lake.vocab.words)


def test_every_sample_used_exactly_once_per_epoch(lake):
    loader = Loader(lake, block_size=8, batch_size=8, gpus=4, seed=3, workers=2, prefetch=3)
    try:
        n = loader.n_samples
        seen = []
        steps = -(-2 * n // 8) + 1  # a little over two epochs
        for _ in range(steps):
            batch, stats = loader.next()
            assert batch.idx.shape == (4, 2, 8) and batch.targets.shape == (4, 2, 8)
            np.testing.assert_array_equal(batch.idx[..., 1:], batch.targets[..., :-1])
            assert 0 <= stats.queue_depth <= stats.queue_capacity == 3
            seen.extend(batch.samples.reshape(-1).tolist())
        assert sorted(seen[:n]) == list(range(n))
        assert sorted(seen[n : 2 * n]) == list(range(n))
        assert seen[:n] != seen[n : 2 * n]  # each epoch has its own shuffle
    finally:
        loader.close()


def test_loader_rewinds_to_the_same_batches(lake):
    a = Loader(lake, block_size=8, batch_size=4, gpus=2, seed=1, workers=3, prefetch=2)
    try:
        first = [a.next()[0] for _ in range(6)]
        a.seek(2)
        again = [a.next()[0] for _ in range(4)]
        for x, y in zip(first[2:], again, strict=True):
            assert x.index == y.index
            np.testing.assert_array_equal(x.idx, y.idx)
    finally:
        a.close()


def test_user_data_errors_are_clear(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        DataLake(tmp_path / "lake", data=str(tmp_path / "missing"))
    empty = tmp_path / "empty.txt"
    empty.write_text("   \n")
    with pytest.raises(DataError, match="empty"):
        DataLake(tmp_path / "lake", data=str(empty))
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\x00\x01\x02hello")
    with pytest.raises(DataError, match="not text"):
        DataLake(tmp_path / "lake", data=str(binary))
    folder = tmp_path / "nothing"
    folder.mkdir()
    (folder / "image.png").write_bytes(b"\x89PNG")
    with pytest.raises(DataError, match="no text files"):
        DataLake(tmp_path / "lake", data=str(folder))


def test_user_text_becomes_the_lake(tmp_path):
    src = tmp_path / "mine"
    src.mkdir()
    (src / "a.txt").write_text("the quick brown fox jumps over the lazy dog . " * 40)
    (src / "b.md").write_text("a stitch in time saves nine . " * 40)
    lake = DataLake(tmp_path / "lake", data=str(src))
    assert len(lake.shards) == 2
    assert "fox" in lake.vocab.words and "stitch" in lake.vocab.words
