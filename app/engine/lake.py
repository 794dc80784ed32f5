"""The data lake: text shards on disk, and the word-level vocabulary built from them.

By default the lake lives in `<run_dir>/lake/` and is filled on first use with the built-in
stories, written as shard files. With `data=PATH` the lake points at the user's own text
file or folder of text files instead; a missing, empty or binary path is refused with a
clear message.

Every shard is hashed (sha256) when the lake is opened, and again whenever a loader reads it,
so the text trained on is the text that was checked. Hashing costs one pass over bytes the
lake reads anyway (to check they are text and to build the vocabulary), even for a user's
own data. `sha256` fingerprints the whole lake; checkpoints record it.

Built-in shards: `lake.json`, written after the shards, records each shard's size and sha256.
A shard that is missing or does not match is written again from the seeded generator, which
gives the same text back, and the repair is logged (`repairs`). Should the generator ever give
different text from what was recorded, every shard is rewritten from it, so the lake is
never a mix of two versions.

The user's own data (`data=PATH`) is theirs to edit, with one rule: a run resumed from its
checkpoints trains on the same text as they were made on. `data.json` records every file's
size and sha256 when a run starts without checkpoints (a fresh run re-reads the files as
they are, whatever they held before). When a run has checkpoints, `changed()` names the first
file that was edited, truncated, removed or added since it was recorded, and the trainer
refuses to resume (a DataError naming the file): put the file back, or start the run afresh.
A file that changes while the run is reading it is a DataError too.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .corpus import generate_stories

TOKEN_RE = re.compile(r"[A-Za-z0-9']+|[^\sA-Za-z0-9']")
UNK = "<unk>"
WORD_RE = re.compile(r"[A-Za-z0-9'<]")  # a token that starts a word (or is <unk>)
OPENS = ("(", "[", "{")  # punctuation the next word stands against
ENDS = (".", ",", "!", "?")  # a quote after these, before a small word, closes
STORIES_PER_SHARD = 100
MAX_VOCAB = 2000  # keeps the model small on a user's own (larger) text
TEXT_SUFFIXES = {".txt", ".md", ".text", ".rst", ".csv", ".json", ".html", ".py", ""}
CORPUS_SEED = 0  # the built-in lake is the same for every run; the run seed orders it
LAKE_RECORD = "lake.json"  # built-in shards: what each must hold
DATA_RECORD = "data.json"  # the user's files, as the run recorded them


class DataError(ValueError):
    """The data lake cannot be used (missing, empty, not text, or not what the run recorded)."""


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

    def text(self, ids) -> str:
        """The tokens as a line of text: words spaced, punctuation against the word before,
        an opening quote or bracket against the word after. A text may start inside a
        quotation, so a quote there closes one where a sentence's end or a small word
        ("asked") says so."""
        words = self.decode(ids)
        out, quoted, opened = "", False, False
        for i, word in enumerate(words):
            opens = word in OPENS
            if word == '"':
                after = words[i + 1] if i + 1 < len(words) else ""
                closes = quoted or out.endswith(ENDS) and not after[:1].isupper()
                opens, quoted = not closes, not closes
            joined = not out or opened or not WORD_RE.match(word) and not opens
            out += word if joined else " " + word
            opened = opens
        return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class DataLake:
    def __init__(
        self,
        root: str | Path,
        *,
        data: str | None = None,
        stories: int = 1600,
        log: Callable[[str], None] | None = None,
    ):
        self.root = Path(root)
        self.user_data = data
        self.stories = stories
        self.log = log or (lambda _msg: None)
        # Built-in shards found damaged and written again: (path, what was wrong).
        self.repairs: list[tuple[Path, str]] = []
        self._lock = threading.Lock()
        counts: Counter[str] = Counter()
        if data is None:
            self.shards, contents = self._open_builtin()
            for raw in contents:
                counts.update(tokenize(raw.decode("utf-8")))
            self.shard_bytes = [len(c) for c in contents]
            self.shard_sha256 = [_sha256(c) for c in contents]
        else:
            self.shards, self.shard_bytes, self.shard_sha256 = _user_shards(Path(data), counts)
        self.sha256 = _sha256(
            "\n".join(
                f"{p.name} {h}" for p, h in zip(self.shards, self.shard_sha256, strict=True)
            ).encode()
        )
        # Most frequent first, ties by spelling, so the vocabulary is deterministic.
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        self.vocab = Vocab([UNK] + [w for w, _ in ranked[: MAX_VOCAB - 1] if w != UNK])

    # ---- the built-in stories, written once as shard files -------------------------------
    def _builtin_texts(self) -> list[bytes]:
        texts = generate_stories(self.stories, CORPUS_SEED)
        n = -(-self.stories // STORIES_PER_SHARD)
        return [
            ("\n".join(texts[i * STORIES_PER_SHARD : (i + 1) * STORIES_PER_SHARD]) + "\n").encode()
            for i in range(n)
        ]

    def _recorded(self, paths: list[Path]) -> list[tuple[int, str]] | None:
        """(bytes, sha256) of every shard as lake.json records them, or None without a
        usable record (none yet, unreadable, another story count, or an older format)."""
        info = _read_json(self.root / LAKE_RECORD)
        if not isinstance(info, dict) or info.get("stories") != self.stories:
            return None
        shards = info.get("shards")
        if not isinstance(shards, list) or len(shards) != len(paths):
            return None
        out = []
        for entry, path in zip(shards, paths, strict=True):
            if not (
                isinstance(entry, dict)
                and entry.get("name") == path.name
                and isinstance(entry.get("bytes"), int)
                and isinstance(entry.get("sha256"), str)
            ):
                return None
            out.append((entry["bytes"], entry["sha256"]))
        return out

    def _open_builtin(self) -> tuple[list[Path], list[bytes]]:
        self.root.mkdir(parents=True, exist_ok=True)
        n = -(-self.stories // STORIES_PER_SHARD)
        paths = [self.root / f"shard-{i:04d}.txt" for i in range(n)]
        recorded = self._recorded(paths)
        contents: list[bytes | None] = [_read_or_none(p) for p in paths]
        wrong: dict[int, str] = {}
        if recorded is not None:
            for i, (raw, (size, digest)) in enumerate(zip(contents, recorded, strict=True)):
                if raw is None:
                    wrong[i] = "was missing"
                elif len(raw) != size:
                    wrong[i] = f"was {len(raw)} bytes, expected {size}"
                elif _sha256(raw) != digest:
                    wrong[i] = "did not match its sha256"
            if not wrong:
                return paths, [c for c in contents if c is not None]
        # Something is wrong, or nothing was recorded: make every shard what the generator
        # says it is. Unchanged files are left alone; a new lake is simply written.
        expected = self._builtin_texts()
        for i, (path, raw, want) in enumerate(zip(paths, contents, expected, strict=True)):
            if raw != want:
                _atomic_write(path, want)
                if raw is not None or recorded is not None:
                    self._repaired(path, wrong.get(i, "did not match the built-in stories"))
        self._write_record(paths, expected)
        return paths, expected

    def _write_record(self, paths: list[Path], contents: list[bytes]) -> None:
        record = {
            "format": 2,
            "stories": self.stories,
            "shards": [
                {"name": p.name, "bytes": len(c), "sha256": _sha256(c)}
                for p, c in zip(paths, contents, strict=True)
            ],
        }
        _atomic_write(self.root / LAKE_RECORD, json.dumps(record, indent=1).encode())

    def _repaired(self, path: Path, reason: str) -> None:
        self.repairs.append((path, reason))
        self.log(repair_message(path, reason))

    def _rebuild(self, i: int, reason: str) -> str:
        with self._lock:
            want = self._builtin_texts()[i]
            if _read_or_none(self.shards[i]) != want:
                _atomic_write(self.shards[i], want)
                self._repaired(self.shards[i], reason)
        return want.decode("utf-8")

    # ---- reading -------------------------------------------------------------------------
    def read_shard(self, i: int) -> str:
        """Shard i's text, checked against the hash taken when the lake was opened."""
        path = self.shards[i]
        if self.user_data is None:
            raw = _read_or_none(path)
            if raw is not None and _sha256(raw) == self.shard_sha256[i]:
                return raw.decode("utf-8")
            why = "was missing" if raw is None else "changed after the lake was opened"
            return self._rebuild(i, why)
        raw = _read_user_file(path)
        if _sha256(raw) != self.shard_sha256[i]:
            raise DataError(
                f"{str(path)!r} changed while the run was reading it "
                f"(now {len(raw)} bytes, was {self.shard_bytes[i]}); start the run again"
            )
        return raw.decode("utf-8")

    # ---- what the run recorded of the user's data ------------------------------------------
    def _record_of_user_data(self) -> dict[str, Any]:
        return {
            "format": 1,
            "data": str(self.user_data),
            "sha256": self.sha256,
            "files": [
                {"path": str(p), "bytes": b, "sha256": h}
                for p, b, h in zip(self.shards, self.shard_bytes, self.shard_sha256, strict=True)
            ],
        }

    def changed(self) -> str | None:
        """The first difference between the user's files now and as this run recorded them
        ("'PATH' was edited", "... was removed", "... was added"), or None: no difference,
        nothing recorded for this data path yet, or the built-in stories."""
        if self.user_data is None:
            return None
        record = _read_json(self.root / DATA_RECORD)
        if not isinstance(record, dict) or record.get("data") != str(self.user_data):
            return None
        files = record.get("files")
        if not isinstance(files, list) or not all(
            isinstance(f, dict) and isinstance(f.get("path"), str) for f in files
        ):
            return None
        before = {f["path"]: (f.get("bytes"), f.get("sha256")) for f in files}
        now = {
            str(p): (b, h)
            for p, b, h in zip(self.shards, self.shard_bytes, self.shard_sha256, strict=True)
        }
        for path, (size, digest) in before.items():
            if path not in now:
                return f"{path!r} was removed"
            if now[path] != (size, digest):
                was = f"was {size} bytes" if isinstance(size, int) else "was different"
                return f"{path!r} was edited (now {now[path][0]} bytes, {was})"
        for path in now:
            if path not in before:
                return f"{path!r} was added"
        return None

    def record(self) -> None:
        """Record the user's files as they are now (nothing to do for the built-in stories)."""
        if self.user_data is None:
            return
        record = self._record_of_user_data()
        if _read_json(self.root / DATA_RECORD) != record:
            self.root.mkdir(parents=True, exist_ok=True)
            _atomic_write(self.root / DATA_RECORD, json.dumps(record, indent=1).encode())

    def describe(self) -> dict:
        return {
            "source": self.user_data or "built-in stories",
            "shards": len(self.shards),
            "bytes": sum(self.shard_bytes),
            "vocab_size": len(self.vocab),
            "sha256": self.sha256,
        }


def repair_message(path: Path, reason: str) -> str:
    """One line for a built-in shard that was rebuilt."""
    return f"Data lake shard {path.name} {reason}; rebuilt it from the built-in stories"


def _read_or_none(path: Path) -> bytes | None:
    """A built-in shard's bytes, or None where there is no file to read (it is rebuilt)."""
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None


def _read_user_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise DataError(f"{str(path)!r} cannot be read ({e.strerror or e})") from None


def _user_shards(path: Path, counts: Counter[str]) -> tuple[list[Path], list[int], list[str]]:
    """The user's text files in a fixed order, with their sizes and sha256; counts their words.
    One file is held in memory at a time."""
    if not path.exists():
        raise DataError(f"data path {str(path)!r} does not exist")
    if path.is_file():
        files = [path]
    else:
        try:
            files = sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES
            )
        except OSError as e:
            where = e.filename or str(path)
            raise DataError(f"data folder {where!r} cannot be read ({e.strerror or e})") from None
        if not files:
            raise DataError(f"data folder {str(path)!r} holds no text files")
    sizes, hashes, words = [], [], 0
    for f in files:
        raw = _read_user_file(f)
        if b"\x00" in raw:
            raise DataError(f"{str(f)!r} is not text (it contains NUL bytes)")
        try:
            tokens = tokenize(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise DataError(f"{str(f)!r} is not UTF-8 text ({e.reason})") from None
        words += len(tokens)
        counts.update(tokens)
        sizes.append(len(raw))
        hashes.append(_sha256(raw))
    if words == 0:
        raise DataError(f"data path {str(path)!r} is empty: no words to train on")
    return files, sizes, hashes


def _atomic_write(path: Path, data: str | bytes) -> None:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    with open(tmp, "wb") as f:
        f.write(raw)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
