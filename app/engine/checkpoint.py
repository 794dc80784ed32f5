"""Checkpoints: atomic saves with a manifest of hashes, and a loader that never trusts a bad one.

A checkpoint is a folder `checkpoints/step-00000050/` with:
  state.npz      model weights and AdamW state (one replica: data-parallel copies are equal)
  meta.json      step, tokens, loader position, RNG state, config, restarts
  manifest.json  step, config hash, and the size and sha256 of every other file
It is written into a temporary folder (each file fsynced, the manifest last), then renamed
into place and the parent folder fsynced, so a crash leaves either the whole checkpoint or
none. On load every file is checked against the manifest; a truncated, altered or partial
checkpoint is skipped with a reason, and the next older one is tried.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

PREFIX = "step-"
TMP_PREFIX = ".tmp-"


class CheckpointError(Exception):
    """A checkpoint failed verification; the message says why."""


@dataclass
class Loaded:
    step: int
    path: Path
    arrays: dict[str, np.ndarray]
    meta: dict[str, Any]


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


class CheckpointStore:
    def __init__(self, root: str | Path, *, keep: int = 3):
        self.root = Path(root)
        self.keep = keep
        self.root.mkdir(parents=True, exist_ok=True)
        # Leftovers of a save that crashed half-way are never checkpoints.
        for p in self.root.glob(TMP_PREFIX + "*"):
            shutil.rmtree(p, ignore_errors=True)

    def path_for(self, step: int) -> Path:
        return self.root / f"{PREFIX}{step:08d}"

    def save(
        self, step: int, arrays: dict[str, np.ndarray], meta: dict[str, Any], config_hash: str
    ) -> tuple[Path, int]:
        """Write a checkpoint atomically; returns (path, bytes written)."""
        final = self.path_for(step)
        tmp = self.root / f"{TMP_PREFIX}{final.name}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        files = {
            "state.npz": buf.getvalue(),
            "meta.json": json.dumps(meta, sort_keys=True).encode(),
        }
        entries = {}
        for name, data in files.items():
            _write_synced(tmp / name, data)
            entries[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        manifest = {
            "format": 1,
            "step": step,
            "config_hash": config_hash,
            "created": time.time(),
            "files": entries,
        }
        _write_synced(tmp / "manifest.json", json.dumps(manifest, indent=1).encode())
        _fsync_dir(tmp)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        _fsync_dir(self.root)
        self._prune()
        return final, sum(e["bytes"] for e in entries.values())

    def _prune(self) -> None:
        steps = self.steps()
        for step in steps[: max(0, len(steps) - self.keep)]:
            shutil.rmtree(self.path_for(step), ignore_errors=True)

    def steps(self) -> list[int]:
        out = []
        for p in self.root.glob(PREFIX + "*"):
            try:
                out.append(int(p.name[len(PREFIX) :]))
            except ValueError:
                continue
        return sorted(out)

    def verify(self, path: Path, config_hash: str | None = None) -> dict[str, Any]:
        """Check a checkpoint against its manifest; returns the manifest or raises."""
        mpath = path / "manifest.json"
        if not mpath.exists():
            raise CheckpointError("no manifest (the save did not finish)")
        try:
            manifest = json.loads(mpath.read_text())
            files = manifest["files"]
        except (ValueError, KeyError, TypeError):
            raise CheckpointError("manifest is unreadable") from None
        for name, entry in files.items():
            f = path / name
            if not f.exists():
                raise CheckpointError(f"{name} is missing")
            size = f.stat().st_size
            if size != entry["bytes"]:
                raise CheckpointError(f"{name} is {size} bytes, manifest says {entry['bytes']}")
            if _sha256(f) != entry["sha256"]:
                raise CheckpointError(f"{name} does not match its sha256")
        if config_hash is not None and manifest.get("config_hash") != config_hash:
            raise CheckpointError(
                f"made by a different configuration ({manifest.get('config_hash')} "
                f"vs {config_hash})"
            )
        return manifest

    def load(self, path: Path, config_hash: str | None = None) -> Loaded:
        manifest = self.verify(path, config_hash)
        try:
            with np.load(path / "state.npz") as z:
                arrays = {k: z[k] for k in z.files}
            meta = json.loads((path / "meta.json").read_text())
        except Exception as e:  # a file that hashes right but does not parse is still bad
            raise CheckpointError(f"cannot be read: {e}") from None
        return Loaded(step=int(manifest["step"]), path=path, arrays=arrays, meta=meta)

    def latest_good(
        self, config_hash: str | None = None
    ) -> tuple[Loaded | None, list[tuple[Path, str]]]:
        """Newest checkpoint that verifies, and the (path, reason) of each one skipped."""
        skipped = []
        for step in reversed(self.steps()):
            path = self.path_for(step)
            try:
                return self.load(path, config_hash), skipped
            except CheckpointError as e:
                skipped.append((path, str(e)))
        return None, skipped

    def listing(self) -> list[dict[str, Any]]:
        out = []
        for step in self.steps():
            path = self.path_for(step)
            try:
                manifest = self.verify(path)
                ok, created = True, manifest.get("created", 0.0)
                size = sum(e["bytes"] for e in manifest["files"].values())
            except CheckpointError:
                ok, created = False, path.stat().st_mtime
                size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
            out.append(
                {"step": step, "path": str(path), "bytes": size, "created": created, "ok": ok}
            )
        return out

    def clear(self) -> None:
        for step in self.steps():
            shutil.rmtree(self.path_for(step), ignore_errors=True)
