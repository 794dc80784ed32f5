"""Fixtures for the engine's tests.

They run numpy's BLAS on one thread, as the product trains (app/cli/main.py sets it for
every command): the model's matrices are small, and on a shared machine more threads only
wait for each other. (The `trainingrun` subprocesses some tests start set it themselves.)
`shared_lake` lets a module's runs share one data lake instead of each writing its own."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.engine import backend
from app.engine.lake import DataLake


@pytest.fixture(autouse=True, scope="module")
def one_blas_thread() -> Iterator[None]:
    before = backend.blas_threads()
    backend.set_blas_threads(1)
    yield
    backend.set_blas_threads(before)


@pytest.fixture(scope="module")
def shared_lake(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path, int], Path]:
    """A module's runs on one built-in lake: each size of lake is written once, then copied
    into the run folder of each run that asks (the trainer opens `<run_dir>/lake`).

        t = Trainer(config, shared_lake(tmp_path / "run", config.corpus_stories))
    """
    built: dict[int, Path] = {}

    def into(run_dir: Path, stories: int) -> Path:
        if stories not in built:
            built[stories] = tmp_path_factory.mktemp("lake") / "lake"
            DataLake(built[stories], stories=stories)
        shutil.copytree(built[stories], run_dir / "lake")
        return run_dir

    return into
