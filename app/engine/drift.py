"""What if the gradients were not shared? Two data-parallel copies trained for a few steps
on a side copy of the run, once without comparing notes and once with the all-reduce.

Each copy reads its own half of every batch, so each computes different gradients. Without
the all-reduce each applies only its own and the two copies drift apart into different
models; with it both apply the averaged gradient and stay bit-identical. Nothing here
touches the live run: it is a fresh `Trainer` on its own run folder, stepped by hand
through the step interface (stepengine.py) alone, so the same code trains the copies of any
plan: `drift()` uses two dense data-parallel GPUs, `train_copies()` takes any run whose
GPUs hold at least two copies of the model (a tensor- or pipeline-parallel one, or one
with experts, runs on the sharded engine).

    result = drift(RunConfig(gpus=2, servers=1, n_layer=4), steps=3, run_dir=tmp)
    result.apart.max_abs_diff > 0 and result.together.max_abs_diff == 0
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .config import RunConfig
from .trainer import Trainer

COPIES = 2  # the side copy's GPUs, each a whole copy; and the fewest copies to compare


@dataclass
class CopiesAfter:
    """The copies after `steps` updates (two, on the side copy): the 16 watched weights of
    each, and how far apart the whole models are."""

    shared: bool  # were the gradients averaged before each update?
    steps: int
    weights: list[list[float]]  # [copy][16]: the probe's 16 weights in each copy
    weights_name: str
    max_abs_diff: float  # over every weight of the model (each copy against the first)
    differing: int  # how many weights differ between the copies
    n_params: int
    identical: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DriftResult:
    apart: CopiesAfter  # each copy its own gradients
    together: CopiesAfter  # the averaged gradients (data parallelism)

    def to_dict(self) -> dict[str, Any]:
        return {"apart": self.apart.to_dict(), "together": self.together.to_dict()}


def side_config(config: RunConfig) -> RunConfig:
    """The side copy's config: the same model and data on two GPUs of one server, data
    parallel and dense (each GPU a whole copy), one microbatch; no checkpoints."""
    batch = config.batch_size if config.batch_size % COPIES == 0 else RunConfig.batch_for(COPIES)
    return config.with_(
        gpus=COPIES,
        servers=1,
        tp=1,
        pp=1,
        ep=1,
        microbatches=1,
        experts=0,
        batch_size=batch,
        checkpoint_every=0,
        loader_workers=1,
        prefetch=1,
    )


def train_copies(config: RunConfig, steps: int, shared: bool, run_dir: str | Path) -> CopiesAfter:
    """Train `config`'s run for `steps` steps, with the all-reduce (`shared`) or without,
    and compare its data-parallel copies. Raises ValueError when the plan holds fewer than
    two copies of the model."""
    t = Trainer(config, Path(run_dir), fresh=True)
    try:
        engine = t.engine
        if engine.copies < COPIES:
            raise ValueError(
                f"drift needs at least {COPIES} data-parallel copies of the model; this "
                f"plan's {config.gpus} GPUs hold {engine.copies}"
            )
        # The step through the engine's interface, with or without its all-reduce.
        for _ in range(steps):
            batch, _take = t.loader.next()
            _, work = engine.forward_backward(batch.idx, batch.targets)
            if shared:
                engine.sync_grads(work)  # every copy now holds the average
            engine.update(work, t.lr_at(t.step + 1))
            t.step += 1
        name = t.probe_weights_name
        copies = [engine.full_params(c) for c in range(engine.copies)]
        weights = [[float(x) for x in np.asarray(c[name])[t.probe_index]] for c in copies]
        diff = 0.0
        differing = 0
        for n in copies[0]:
            first = np.asarray(copies[0][n])
            d = np.zeros_like(first)
            for other in copies[1:]:
                np.maximum(d, np.abs(first - np.asarray(other[n])), out=d)
            diff = max(diff, float(d.max()))
            differing += int(np.count_nonzero(d))
        return CopiesAfter(
            shared=shared,
            steps=steps,
            weights=weights,
            weights_name=name,
            max_abs_diff=diff,
            differing=differing,
            n_params=int(t.n_params),
            identical=differing == 0,
        )
    finally:
        t.close(final_checkpoint=False)


def drift(config: RunConfig, steps: int = 3, run_dir: str | Path | None = None) -> DriftResult:
    """Train two copies for `steps` steps, apart and together; see the module docstring."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    side = side_config(config)
    with tempfile.TemporaryDirectory(dir=run_dir) as tmp:
        apart = train_copies(side, steps, False, Path(tmp) / "apart")
        together = train_copies(side, steps, True, Path(tmp) / "together")
    return DriftResult(apart=apart, together=together)
