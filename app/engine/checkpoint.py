"""Checkpoints: atomic saves with a manifest of hashes, and a loader that never trusts a bad one.

A checkpoint is a folder `checkpoints/step-00000050/` with:
  state.npz      model weights and AdamW state (one replica: data-parallel copies are equal)
  meta.json      step, tokens, loader position, RNG state, config, restarts, run id
  manifest.json  step, config hash, and the size and sha256 of every other file
It is written into a temporary folder (each file fsynced, the manifest last), then renamed
into place and the parent folder fsynced, so a crash leaves either the whole checkpoint or
none. A save that fails (disk full, folder not writable) removes its temporary folder and
raises `CheckpointSaveError` with one line saying what failed; weights that are not finite
are never written.

A checkpoint is usable only if all of this holds; otherwise it is skipped with a one-line
reason (the first thing found wrong) and the next older one is tried:
  - it is a folder holding a manifest (a JSON object) whose `files` maps state.npz and
    meta.json to their byte count and sha256, and every file matches its entry;
  - it was made by the same configuration (config hash) and, when both carry one, the same
    run (run id);
  - meta.json is a JSON object with whole numbers `step` (equal to the manifest's), `tokens_total`
    and `opt_t`;
  - state.npz holds every array the model needs, floating-point, of the expected shape,
    and every number in it is finite.

A checkpoint can also be marked bad (`mark_bad`): its files check out, but the run could not
train on from it (its first step after loading diverged). The mark is a file `bad.txt` in its
folder holding the reason, kept in memory too when it cannot be written; a marked checkpoint
is unusable from then on, and `listing()` says so.

Saving prunes: unusable checkpoints and leftovers of crashed saves go first, then all but the
newest `keep` usable ones. The checkpoint just written is never pruned.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

PREFIX = "step-"
TMP_PREFIX = ".tmp-"
MANIFEST, STATE, META = "manifest.json", "state.npz", "meta.json"
BAD = "bad.txt"  # a checkpoint that checks out but did not train on (see mark_bad)
# meta.json keys the trainer cannot resume without: whole numbers, 0 or more.
META_COUNTS = ("step", "tokens_total", "opt_t")
# Optional meta.json keys, checked when present.
META_OPTIONAL_COUNTS = ("restarts",)
META_OPTIONAL_TEXT = ("run_id", "data_sha256")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class CheckpointError(Exception):
    """A checkpoint is unusable; the message says why, in one line."""


class CheckpointSaveError(Exception):
    """A checkpoint could not be written; nothing partial was left. One line says why."""


@dataclass
class Loaded:
    step: int
    path: Path
    arrays: dict[str, np.ndarray]
    meta: dict[str, Any]
    manifest: dict[str, Any] = field(default_factory=dict)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    """Remove a checkpoint folder, or a plain file squatting on a checkpoint's name."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _is_count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _why(e: OSError) -> str:
    return e.strerror or _one_line(str(e)) or e.__class__.__name__


def _not_finite(arrays: dict[str, np.ndarray]) -> str | None:
    """The reason an archive of arrays cannot be a checkpoint's state, or None."""
    for name, a in arrays.items():
        if np.issubdtype(a.dtype, np.floating) and not bool(np.isfinite(a).all()):
            what = "weights are" if name.startswith("p.") else "optimizer state is"
            return f"{what} not finite (NaN or inf) in {name}"
    return None


class CheckpointStore:
    """The checkpoints of one run.

    config_hash, shapes (array name -> shape, e.g. {"p.wte": (V, C), "m.wte": ...}) and
    run_id say what this run can use; left as None, that check is not made."""

    def __init__(
        self,
        root: str | Path,
        *,
        keep: int = 3,
        config_hash: str | None = None,
        shapes: dict[str, tuple[int, ...]] | None = None,
        run_id: str | None = None,
    ):
        self.root = Path(root)
        self.keep = keep
        self.config_hash = config_hash
        self.shapes = {k: tuple(v) for k, v in shapes.items()} if shapes is not None else None
        self.run_id = run_id
        self._bad: dict[str, str] = {}  # folder name -> why, for marks that could not be written
        self.root.mkdir(parents=True, exist_ok=True)
        # Leftovers of a save that crashed half-way are never checkpoints.
        for p in self.root.glob(TMP_PREFIX + "*"):
            _remove(p)

    def path_for(self, step: int) -> Path:
        return self.root / f"{PREFIX}{step:08d}"

    def entries(self) -> list[tuple[int, Path]]:
        """(step, path) of everything named exactly like a checkpoint, oldest first."""
        out = []
        for p in self.root.glob(PREFIX + "*"):
            digits = p.name[len(PREFIX) :]
            if digits.isdigit() and digits.isascii() and p.name == self.path_for(int(digits)).name:
                out.append((int(digits), p))
        return sorted(out)

    def steps(self) -> list[int]:
        return [step for step, _ in self.entries()]

    # ---- saving --------------------------------------------------------------------------
    def save(
        self,
        step: int,
        arrays: dict[str, np.ndarray],
        meta: dict[str, Any],
        config_hash: str | None = None,
    ) -> tuple[Path, int]:
        """Write a checkpoint atomically; returns (path, bytes written).

        Raises CheckpointSaveError, leaving no partial folder, when it cannot be written."""
        bad = _not_finite(arrays)
        if bad is not None:
            raise CheckpointSaveError(f"{bad}; not saved")
        final = self.path_for(step)
        tmp = self.root / f"{TMP_PREFIX}{final.name}-{os.getpid()}"
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        files = {STATE: buf.getvalue(), META: json.dumps(meta, sort_keys=True).encode()}
        entries = {
            name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            for name, data in files.items()
        }
        manifest = {
            "format": 1,
            "step": step,
            "config_hash": config_hash if config_hash is not None else self.config_hash,
            "created": time.time(),
            "files": entries,
        }
        files[MANIFEST] = json.dumps(manifest, indent=1).encode()  # last: it seals the rest
        writing = tmp
        try:
            _remove(tmp)
            tmp.mkdir()
            for name, data in files.items():
                writing = tmp / name
                _write_synced(writing, data)
            writing = tmp
            _fsync_dir(tmp)
            writing = final
            self._swap_in(tmp, final)
            self._bad.pop(final.name, None)  # a new checkpoint under the name of a bad one
        except OSError as e:
            _remove(tmp)
            raise CheckpointSaveError(f"{_why(e)} while writing {writing}") from None
        # The checkpoint is complete from here on. If this fsync fails, a crash may undo the
        # rename, which leaves the older checkpoints: the same as a failed save.
        with contextlib.suppress(OSError):
            _fsync_dir(self.root)
        self._prune(step)
        return final, sum(e["bytes"] for e in entries.values())

    def _swap_in(self, tmp: Path, final: Path) -> None:
        """Rename tmp to final; anything already there is only removed once tmp is in place."""
        if not (final.exists() or final.is_symlink()):
            os.replace(tmp, final)
            return
        old = self.root / f"{TMP_PREFIX}{final.name}-old-{os.getpid()}"
        _remove(old)
        os.replace(final, old)
        try:
            os.replace(tmp, final)
        except OSError:
            os.replace(old, final)
            raise
        _remove(old)

    def _discard(self, path: Path) -> None:
        """Remove a checkpoint so that a kill part-way leaves nothing named like one: it is
        renamed out of the way first, then removed (the next save sweeps any rest)."""
        gone = self.root / f"{TMP_PREFIX}{path.name}-gone-{os.getpid()}"
        _remove(gone)
        try:
            os.replace(path, gone)
        except OSError:
            gone = path
        _remove(gone)

    def _prune(self, written: int) -> None:
        for p in self.root.glob(TMP_PREFIX + "*"):
            _remove(p)
        good = []
        for step, path in reversed(self.entries()):
            if step == written:
                continue
            if self.problem(path) is None:
                good.append(step)
            else:
                self._discard(path)
        for step in good[max(0, self.keep - 1) :]:
            self._discard(self.path_for(step))

    # ---- checking and loading ------------------------------------------------------------
    def verify(self, path: Path, config_hash: str | None = None) -> dict[str, Any]:
        """Check a checkpoint's files against its manifest; returns the manifest or raises."""
        if not path.is_dir():
            raise CheckpointError("is not a folder" if path.exists() else "is missing")
        mpath = path / MANIFEST
        if not mpath.exists():
            raise CheckpointError("no manifest (the save did not finish)")
        try:
            manifest = json.loads(mpath.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise CheckpointError("manifest is unreadable") from None
        if not isinstance(manifest, dict):
            raise CheckpointError("manifest.json is not a JSON object")
        files = manifest.get("files")
        if not isinstance(files, dict):
            raise CheckpointError(
                "manifest.json: 'files' is not a mapping of file names to sizes and hashes"
            )
        for name in (STATE, META):
            if name not in files:
                raise CheckpointError(f"manifest.json does not list {name}")
        for name, entry in files.items():
            if name in ("", ".", "..") or "/" in name or "\\" in name:
                raise CheckpointError(f"manifest.json names a file elsewhere: {name!r}")
            if not isinstance(entry, dict):
                raise CheckpointError(f"manifest.json: the entry for {name} is not an object")
            size, digest = entry.get("bytes"), entry.get("sha256")
            if not _is_count(size):
                raise CheckpointError(f"manifest.json: the entry for {name} has no byte count")
            if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
                raise CheckpointError(f"manifest.json: the entry for {name} has no sha256")
            f = path / name
            if not f.is_file():
                raise CheckpointError(f"{name} is missing")
            try:
                actual = f.stat().st_size
                if actual != size:
                    raise CheckpointError(f"{name} is {actual} bytes, manifest says {size}")
                if _sha256(f) != digest:
                    raise CheckpointError(f"{name} does not match its sha256")
            except OSError as e:
                raise CheckpointError(f"{name} cannot be read: {_why(e)}") from None
        step = manifest.get("step")
        if not _is_count(step):
            raise CheckpointError("manifest.json has no step")
        named = path.name[len(PREFIX) :]
        if named.isdigit() and int(named) != step:
            raise CheckpointError(f"manifest.json says step {step}, the folder name {int(named)}")
        wanted = config_hash if config_hash is not None else self.config_hash
        if wanted is not None and manifest.get("config_hash") != wanted:
            raise CheckpointError(
                f"made by a different configuration "
                f"({_one_line(str(manifest.get('config_hash')), 40)} vs {wanted})"
            )
        return manifest

    def _meta(self, path: Path, step: int) -> dict[str, Any]:
        try:
            meta = json.loads((path / META).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise CheckpointError(f"meta.json cannot be read: {_one_line(str(e))}") from None
        if not isinstance(meta, dict):
            raise CheckpointError("meta.json is not a JSON object")
        for key in META_COUNTS:
            if key not in meta:
                raise CheckpointError(f"meta.json has no {key!r}")
        for key in (*META_COUNTS, *META_OPTIONAL_COUNTS):
            if key in meta and not _is_count(meta[key]):
                raise CheckpointError(
                    f"meta.json: {key!r} should be a whole number, 0 or more, "
                    f"not {_one_line(repr(meta[key]), 40)}"
                )
        for key in META_OPTIONAL_TEXT:
            if key in meta and not isinstance(meta[key], str):
                raise CheckpointError(f"meta.json: {key!r} should be text")
        if meta["step"] != step:
            raise CheckpointError(f"meta.json says step {meta['step']}, the manifest step {step}")
        theirs = meta.get("run_id")
        if self.run_id is not None and theirs is not None and theirs != self.run_id:
            raise CheckpointError(f"belongs to another run ({_one_line(theirs, 80)})")
        return meta

    def _arrays(self, path: Path) -> dict[str, np.ndarray]:
        try:
            # A file that hashes right but does not parse as named arrays is still bad.
            archive = np.load(path / STATE, allow_pickle=False)
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise CheckpointError("state.npz is not an archive of named arrays")
            with archive as z:
                arrays = {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise CheckpointError(f"state.npz cannot be read: {_one_line(str(e))}") from None
        for name, shape in (self.shapes or {}).items():
            a = arrays.get(name)
            if a is None:
                raise CheckpointError(f"state.npz has no {name}")
            if not np.issubdtype(a.dtype, np.floating):
                raise CheckpointError(
                    f"state.npz: {name} holds {a.dtype}, not floating-point numbers"
                )
            if a.shape != shape:
                raise CheckpointError(f"state.npz: {name} has shape {a.shape}, expected {shape}")
        bad = _not_finite(arrays)
        if bad is not None:
            raise CheckpointError(bad)
        return arrays

    def mark_bad(self, path: Path, reason: str) -> None:
        """Mark a checkpoint unusable with a one-line reason, though its files check out."""
        reason = _one_line(reason)
        self._bad[path.name] = reason
        with contextlib.suppress(OSError):
            _write_synced(path / BAD, reason.encode("utf-8"))

    def _marked_bad(self, path: Path) -> str | None:
        if path.name in self._bad:
            return self._bad[path.name]
        if not path.is_dir():
            return None  # verify() says what is wrong with it
        try:
            return _one_line((path / BAD).read_text(encoding="utf-8", errors="replace"))
        except FileNotFoundError:
            return None
        except OSError as e:
            return f"its bad mark cannot be read: {_why(e)}"

    def load(self, path: Path, config_hash: str | None = None) -> Loaded:
        """A usable checkpoint's contents, or CheckpointError saying why it is not usable."""
        marked = self._marked_bad(path)
        if marked is not None:
            raise CheckpointError(f"marked bad: {marked}")
        manifest = self.verify(path, config_hash)
        meta = self._meta(path, manifest["step"])
        arrays = self._arrays(path)
        return Loaded(step=manifest["step"], path=path, arrays=arrays, meta=meta, manifest=manifest)

    def problem(self, path: Path, config_hash: str | None = None) -> str | None:
        """Why the checkpoint at `path` is unusable, or None if it is usable."""
        try:
            self.load(path, config_hash)
        except CheckpointError as e:
            return str(e)
        return None

    def latest_good(
        self, config_hash: str | None = None, *, at_most: int | None = None
    ) -> tuple[Loaded | None, list[tuple[Path, str]]]:
        """Newest usable checkpoint, and the (path, reason) of each newer one skipped.

        `at_most`: ignore checkpoints past this step (said as the reason they were skipped)."""
        skipped = []
        for step, path in reversed(self.entries()):
            if at_most is not None and step > at_most:
                skipped.append(
                    (path, f"it is ahead of the run's record, which ends at step {at_most}")
                )
                continue
            try:
                return self.load(path, config_hash), skipped
            except CheckpointError as e:
                skipped.append((path, str(e)))
        return None, skipped

    def listing(self) -> list[dict[str, Any]]:
        out = []
        for step, path in self.entries():
            try:
                loaded = self.load(path)
                created = loaded.manifest.get("created")
                ok, created = True, float(created) if isinstance(created, int | float) else 0.0
                size = sum(e["bytes"] for e in loaded.manifest["files"].values())
            except CheckpointError:
                ok, created, size = False, 0.0, 0
                with contextlib.suppress(OSError):
                    created = path.lstat().st_mtime
                    files = path.iterdir() if path.is_dir() else [path]
                    size = sum(f.stat().st_size for f in files if f.is_file())
            out.append(
                {"step": step, "path": str(path), "bytes": size, "created": created, "ok": ok}
            )
        return out

    def clear(self) -> None:
        for _step, path in self.entries():
            self._discard(path)
