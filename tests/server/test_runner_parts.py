"""The runner's seams: a handler for every control and request, typed pipe messages that
survive pickling, plain options instead of the web settings, and the worker's answers."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import get_args

from app.engine.config import RunConfig
from app.protocol import Control, EventMsg
from app.run import pipe
from app.run.controls import HANDLERS
from app.run.pipe import (
    Ask,
    CheckpointNow,
    FailGpu,
    Hold,
    Pace,
    Reply,
    Request,
    StepOnce,
    StepReady,
    WorkerState,
)
from app.run.worker import Worker
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def control_actions() -> set[str]:
    union, _discriminator = get_args(Control)
    return {
        action
        for model in get_args(union)
        for action in get_args(model.model_fields["action"].annotation)
    }


def test_every_control_action_has_a_handler() -> None:
    assert control_actions() == set(HANDLERS)


def test_every_worker_request_has_a_handler() -> None:
    assert set(get_args(Ask)) == set(Worker._ASKS)


def test_the_runner_and_worker_do_not_import_the_web_settings() -> None:
    code = (
        "import json, sys\n"
        "import app.run.runner, app.run.controls, app.run.worker\n"
        "import app.run.worker_link, app.run.view\n"
        "web = ('app.settings', 'app.web.app', 'app.routes', 'fastapi', 'starlette')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(web))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == []


def test_pipe_messages_survive_pickling() -> None:
    ev = EventMsg(kind="paused", step=3, message="Paused at step 3")
    state = WorkerState(events=[ev], step=3, restarts=1, checkpoints=[])
    msgs = [
        Pace(running=True, interval_s=0.5),
        *(Request(i, ask) for i, ask in enumerate([Hold(), StepOnce(), FailGpu(2)])),
        Request(9, pipe.Reset({"seed": 1}, "run-b")),
        Reply(4, result=state),
        Reply(5, error="gpu must be between 0 and 1, got 2"),
        pipe.Fatal("Traceback ..."),
    ]
    for msg in msgs:
        assert pickle.loads(pickle.dumps(msg)) == msg


def test_settings_become_plain_runner_options(tmp_path: Path) -> None:
    s = Settings(run_dir=tmp_path, seed=4, gpus=8, servers=2, speed="max", rest_after_s=0)
    o = s.runner_options()
    assert o.run_dir == tmp_path and o.speed == "max" and o.rest_after_s == 0
    assert o.config == s.run_config() and o.config.seed == 4
    # Only RunConfig fields named explicitly: the stored run keeps its preset.
    assert o.explicit == {"seed", "gpus", "servers"}
    assert isinstance(o.config, RunConfig)


def test_the_worker_answers_each_request(tiny_worker: Worker) -> None:
    w, sent = tiny_worker, tiny_worker.conn.sent  # type: ignore[attr-defined]
    w.handle(Pace(running=True, interval_s=0.25))
    assert w.running and w.interval == 0.25
    w.handle(Request(1, Hold()))
    assert sent[-1] == Reply(1) and not w.running
    w.handle(Request(2, StepOnce()))
    step, reply = sent[-2:]
    assert isinstance(step, StepReady) and step.run_id == "run-a" and reply == Reply(2)
    assert step.figures.step == w.trainer.step
    w.handle(Request(3, CheckpointNow()))
    saved = sent[-1].result
    assert isinstance(saved, WorkerState) and saved.step == w.trainer.step
    assert [e.kind for e in saved.events] == ["checkpoint_saved"]
    assert [c.step for c in saved.checkpoints] == [w.trainer.step]
    w.handle(Request(4, FailGpu(7)))
    assert sent[-1].req_id == 4 and "gpu" in sent[-1].error and sent[-1].result is None
