"""The data lake: text shards on disk, and the word-level vocabulary built from them.

By default the lake lives in `<run_dir>/lake/` and is filled on first use with the built-in
stories, written as shard files. With `data=PATH` the lake points at the user's own text
file or folder of text files instead; a missing, empty or binary path is refused with a
clear message.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .corpus import generate_stories

TOKEN_RE = re.compile(r"[A-Za-z0-9']+|[^\sA-Za-z0-9']")
UNK = "<unk>"
STORIES_PER_SHARD = 100
MAX_VOCAB = 2000  # keeps the model small on a user's own (larger) text
TEXT_SUFFIXES = {".txt", ".md", ".text", ".rst", ".csv", ".json", ".html", ".py", ""}
CORPUS_SEED = 0  # the built-in lake is the same for every run; the run seed orders it


class DataError(ValueError):
    """The data lake cannot be used (missing, empty or not text)."""


def tokenize(text: str) -> list[str]:
    return TOKEN_RE.findall(text)


@dataclass
class Vocab:
    words: list[str]

    def __post_init__(self) -> None:
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, words: list[str]) -> list[int]:
        unk = self.index[UNK]
        return [self.index.get(w, unk) for w in words]

    def decode(self, ids) -> list[str]:
        return [self.words[int(i)] for i in ids]


class DataLake:
    def __init__(self, root: str | Path, *, data: str | None = None, stories: int = 1600):
        self.root = Path(root)
        self.user_data = data
        if data is None:
            self.shards = self._ensure_builtin(stories)
        else:
            self.shards = _user_shards(Path(data))
        self.vocab = self._vocab()

    # Built-in stories, written once as shard files.
    def _ensure_builtin(self, stories: int) -> list[Path]:
        self.root.mkdir(parents=True, exist_ok=True)
        marker = self.root / "lake.json"
        n_shards = -(-stories // STORIES_PER_SHARD)
        expected = [self.root / f"shard-{i:04d}.txt" for i in range(n_shards)]
        if marker.exists():
            info = json.loads(marker.read_text())
            if info.get("stories") == stories and all(p.exists() for p in expected):
                return expected
        texts = generate_stories(stories, CORPUS_SEED)
        for i, path in enumerate(expected):
            chunk = texts[i * STORIES_PER_SHARD : (i + 1) * STORIES_PER_SHARD]
            _atomic_write(path, "\n".join(chunk) + "\n")
        _atomic_write(marker, json.dumps({"stories": stories, "shards": len(expected)}))
        return expected

    def _vocab(self) -> Vocab:
        counts: Counter[str] = Counter()
        for shard in self.shards:
            counts.update(tokenize(shard.read_text(encoding="utf-8")))
        # Most frequent first, ties by spelling, so the vocabulary is deterministic.
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        words = [UNK] + [w for w, _ in ranked[: MAX_VOCAB - 1] if w != UNK]
        return Vocab(words)

    def read_shard(self, i: int) -> str:
        return self.shards[i].read_text(encoding="utf-8")

    def describe(self) -> dict:
        return {
            "source": self.user_data or "built-in stories",
            "shards": len(self.shards),
            "bytes": sum(p.stat().st_size for p in self.shards),
            "vocab_size": len(self.vocab),
        }


def _user_shards(path: Path) -> list[Path]:
    if not path.exists():
        raise DataError(f"data path {str(path)!r} does not exist")
    if path.is_file():
        files = [path]
    else:
        files = sorted(
            p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES
        )
        if not files:
            raise DataError(f"data folder {str(path)!r} holds no text files")
    words = 0
    for f in files:
        raw = f.read_bytes()
        if b"\x00" in raw:
            raise DataError(f"{str(f)!r} is not text (it contains NUL bytes)")
        try:
            words += len(tokenize(raw.decode("utf-8")))
        except UnicodeDecodeError as e:
            raise DataError(f"{str(f)!r} is not UTF-8 text ({e.reason})") from None
    if words == 0:
        raise DataError(f"data path {str(path)!r} is empty: no words to train on")
    return files


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
