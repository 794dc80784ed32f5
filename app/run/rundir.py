"""Whether a folder can hold a run (data lake, checkpoints, runs.sqlite), said in one line.

The command line asks before it starts anything, so a bad `--run-dir` is one clear sentence
instead of a traceback from deep inside the engine; the same words serve anywhere else a
run folder is opened.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

# Less free space than this cannot hold a lake and a checkpoint: a full disk, in effect.
MIN_FREE_BYTES = 16 * 1024 * 1024


def check_run_dir(path: str | os.PathLike[str]) -> str | None:
    """A one-line problem with `path` as a run folder, or None when it can be used.

    The folder may not exist yet (it is created when the run starts): then its nearest
    existing parent must be a folder one can write in. Nothing is left behind.
    """
    run_dir = Path(path).expanduser()
    if run_dir.exists() and not run_dir.is_dir():
        return f"run dir {run_dir} is a file, not a folder"
    existing = run_dir
    while not existing.exists():
        if existing.parent == existing:
            return f"cannot create run dir {run_dir}: nothing above it exists"
        existing = existing.parent
    if not existing.is_dir():
        return f"cannot create run dir {run_dir}: {existing} is a file, not a folder"
    problem = _writable(existing)
    if problem is not None:
        if existing == run_dir:
            return f"run dir {run_dir} is not writable: {problem}"
        return f"cannot create run dir {run_dir}: {existing} is not writable: {problem}"
    try:
        free = shutil.disk_usage(existing).free
    except OSError:
        return None
    if free < MIN_FREE_BYTES:
        return f"run dir {run_dir}: only {free // 1024} KiB free on its disk"
    return None


def _writable(folder: Path) -> str | None:
    """None when a file can be created in `folder` (the only sure test: permissions, a
    read-only mount and quotas all show), else why not."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".trainingrun-check-"):
            pass
    except OSError as exc:
        return exc.strerror or exc.__class__.__name__
    return None
