"""Which run a starting server takes up: the one it was running, or a new one.

The server resumes the run its history calls current unless the options describe a
different run (another model, batch or seed). A record with no current run (a fresh one, after
a damaged record was set aside) takes up the run of the newest good checkpoint in the run dir,
when the options describe that run, so training resumes from it instead of starting over.
`RunnerOptions` are the plain values the runner starts from (the web settings are turned into
them by app/settings.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.engine.checkpoint import CheckpointError, CheckpointStore
from app.engine.config import RunConfig
from app.run.history import History, new_run_id

# Config fields a stored run keeps across restarts unless they are named again: a reset
# may have changed them.
STICKY_FIELDS = ("seed", "preset", "lr")


@dataclass(frozen=True)
class RunnerOptions:
    """What the runner needs to start, as plain values."""

    run_dir: Path  # data lake, checkpoints
    config: RunConfig  # the run to start (or to resume, when it is the stored one)
    explicit: frozenset[str]  # RunConfig fields named explicitly rather than defaulted
    fresh: bool  # start a new run even when the stored one matches
    speed: str | float  # "lesson", "max" or steps per second
    paused: bool  # start paused: no step until a viewer resumes the run or steps it
    lesson_interval_s: float  # seconds between steps at lesson speed
    rest_after_s: float  # stop stepping after this long with no viewer; 0 never rests


def choose_run(options: RunnerOptions, history: History) -> tuple[RunConfig, str, bool]:
    """(config, run_id, fresh): resume the current run unless the options describe a
    different one; a new run is recorded as the current one.

    A reset may have changed the seed or preset; those stick across restarts unless they
    are named again.
    """
    o = options
    current = None if o.fresh else history.current_run()
    config = o.config
    if current is not None:
        stored = RunConfig.from_dict(current.config)
        keep = {k: getattr(stored, k) for k in STICKY_FIELDS if k not in o.explicit}
        config = config.with_(**keep)
        if config.identity() == stored.identity():
            if config.to_dict() != stored.to_dict():
                history.update_config(current.run_id, config.to_dict())
            return config, current.run_id, False
    elif not o.fresh:
        found = checkpointed_run(o.run_dir)
        if found is not None:
            run_id, stored = found
            keep = {k: getattr(stored, k) for k in STICKY_FIELDS if k not in o.explicit}
            adopted = config.with_(**keep)
            if adopted.identity() == stored.identity():
                history.start_run(run_id, adopted.to_dict())
                return adopted, run_id, False
    run_id = new_run_id()
    history.start_run(run_id, config.to_dict())
    # A new run never inherits checkpoints left by another one in the same folder.
    return config, run_id, True


def checkpointed_run(run_dir: Path) -> tuple[str, RunConfig] | None:
    """(run id, config) of the newest checkpoint in `run_dir` that checks out (its files
    match their manifest, its meta names a run and a config), or None."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return None
    store = CheckpointStore(root)
    for _step, path in reversed(store.entries()):
        try:
            meta = store.load(path).meta
            run_id, config = meta.get("run_id"), meta.get("config")
            if not isinstance(run_id, str) or not run_id or not isinstance(config, dict):
                continue
            return run_id, RunConfig.from_dict(config)
        except (CheckpointError, TypeError, ValueError):
            continue
    return None
