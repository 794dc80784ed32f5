"""Fixtures for the runner's parts in-process: a tiny training worker on a recording pipe."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import pytest

from app.engine.config import RunConfig
from app.run.pipe import WorkerSpec
from app.run.worker import Worker

# Small enough that opening the run and a step take a fraction of a second.
TINY = RunConfig(
    gpus=2,
    servers=1,
    batch_size=4,
    corpus_stories=40,
    n_layer=1,
    n_head=2,
    n_embd=16,
    checkpoint_every=0,
)


class RecordingPipe:
    """The worker's end of the pipe; each message goes through pickle, as a real one does."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, msg: Any) -> None:
        self.sent.append(pickle.loads(pickle.dumps(msg)))

    def last(self) -> Any:
        return self.sent[-1]


@pytest.fixture(scope="module")
def tiny_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    run_dir = str(tmp_path_factory.mktemp("run"))
    spec = WorkerSpec(config=TINY.to_dict(), run_dir=run_dir, fresh=True, run_id="run-a")
    worker = Worker(RecordingPipe(), spec)  # type: ignore[arg-type]
    try:
        yield worker
    finally:
        worker.trainer.close(final_checkpoint=False)
