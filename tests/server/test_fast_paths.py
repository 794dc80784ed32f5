"""The texts built without a full model dump (a step frame, a snapshot, event frames) are
valid messages and say exactly what the protocol's models would."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from inproc import options, until

from app.protocol import (
    EventMsg,
    HistoryPoint,
    PauseControl,
    RunStatus,
    SnapshotMsg,
    SpeedControl,
    StepFields,
    StepMsg,
    server_message_adapter,
)
from app.run import events as run_events
from app.run import view as view_module
from app.run.choice import RunnerOptions
from app.run.history import History
from app.run.pipe import StepReady
from app.run.runner import Runner
from app.run.view import RunView, snapshot_text, step_frame_text
from app.run.worker import Worker, run_info
from app.web.hub import Frame, Hub


def same_message(text: str, model: Any) -> None:
    """`text` is a valid server message equal, field for field, to `model`."""
    parsed = json.loads(text)
    server_message_adapter.validate_python(parsed)
    assert parsed == json.loads(model.model_dump_json())


def a_step(worker: Worker) -> StepReady:
    worker.do_step()
    msg = worker.conn.last()  # type: ignore[attr-defined]
    assert isinstance(msg, StepReady)
    return msg


def test_a_step_frame_is_the_step_message(tiny_worker: Worker) -> None:
    msg = a_step(tiny_worker)
    text = step_frame_text(msg.body, seq=41, sent_at=1_700_000_000.123456)
    fields = StepFields.model_validate_json(msg.body).model_dump()
    same_message(text, StepMsg(**fields, seq=41, sent_at=1_700_000_000.123456))


def test_a_snapshot_is_the_snapshot_message(tiny_worker: Worker, tmp_path: Path) -> None:
    history = History(tmp_path / "runs.sqlite")
    view = RunView(history)
    view.adopt(run_info(tiny_worker.trainer, "run-a"), reset=True)
    status = view.status("paused", "lesson", viewers=2)
    empty = view.snapshot_text(status)
    same_message(
        empty,
        SnapshotMsg(status=status, last_step=None, history=[], events=[], checkpoints=[]),
    )

    msg = a_step(tiny_worker)
    frame = step_frame_text(msg.body, seq=1, sent_at=12.5)
    assert view.take_step(1, msg, frame)
    speed, paused = run_events.speed_changed(view.step, 2.5), run_events.paused(view.step)
    view.record_event(speed)
    view.record_event(paused)
    status = view.status("paused", 2.5, viewers=3)
    text = view.snapshot_text(status)
    assert text is view.snapshot_text(status)  # built once until something changes
    same_message(
        text,
        SnapshotMsg(
            status=status,
            last_step=StepMsg.model_validate_json(frame),
            history=[HistoryPoint(seq=1, step=msg.figures.step, loss=msg.figures.loss)],
            events=[*msg.events, speed, paused],
            checkpoints=run_info(tiny_worker.trainer, "run-a").checkpoints,
        ),
    )
    history.close()


def test_snapshot_text_keeps_the_step_frame_as_sent() -> None:
    frame = '{"type":"step","seq":3}'  # spliced, not re-serialised
    status = RunStatus(
        state="running",
        speed="max",
        step=3,
        epoch=0,
        loss=2.5,
        tokens_total=48,
        restarts=0,
        viewers=0,
        run_id="run-a",
    )
    text = snapshot_text(status, frame, [], [], [])
    assert f'"last_step":{frame},' in text
    assert json.loads(text)["status"] == json.loads(status.model_dump_json())


def test_an_unclean_stop_is_told_by_one_restored_event(tmp_path: Path, tiny_worker: Worker) -> None:
    history = History(tmp_path / "runs.sqlite")
    info = run_info(tiny_worker.trainer, "run-a")
    history.start_run("run-a", info.config)
    figures = {"step": info.step + 5, "epoch": 0, "loss": 3.0, "grad_norm": 1.0, "lr": 0.1}
    figures |= {"tokens_total": 10, "sim_step_s": 0.1, "wall_step_s": 0.1}
    history.add_step(1, "run-a", figures, [])
    resumed = EventMsg(kind="restored", step=info.step, message="Resumed", detail={})
    for startup, from_checkpoint in (([], False), ([resumed], True)):
        events = RunView(history).adopt(replace(info, startup_events=startup), reset=False)
        restored = run_events.restored_after_unclean_stop(
            info.step, info.step + 5, from_checkpoint=from_checkpoint
        )
        assert events == [restored]
        assert restored.detail == {
            "failed_step": info.step + 5,
            "restored_step": info.step,
            "steps_lost": 5,
            "reason": "crash",
        }
    history.close()


class RecordingHub(Hub):
    def __init__(self) -> None:
        super().__init__(max_fps=20, queue_limit=64, send_timeout_s=5)
        self.frames: list[Frame] = []

    def publish(self, frame: Frame) -> None:
        self.frames.append(frame)


def test_the_runner_publishes_frames_the_models_would(tiny_worker: Worker, tmp_path: Path) -> None:
    async def go() -> tuple[Runner, RecordingHub, StepReady, dict[str, Any]]:
        history = History(tmp_path / "runs.sqlite")
        options = RunnerOptions(
            run_dir=tmp_path,
            config=tiny_worker.trainer.config,
            explicit=frozenset(),
            fresh=False,
            speed="lesson",
            paused=False,
            lesson_interval_s=2.0,
            rest_after_s=0,
        )
        hub = RecordingHub()
        runner = Runner(options, hub, history)
        runner._loop = asyncio.get_running_loop()
        runner.adopt(run_info(tiny_worker.trainer, "run-a"), reset=True)
        hub.frames.clear()  # the run's startup events, if any
        step = a_step(tiny_worker)
        step = StepReady(step.run_id, step.body, step.figures, step.trace, [run_events.resumed(1)])
        runner._take_step(step)  # as the reader thread does
        await asyncio.sleep(0.01)
        # No worker is running: the speed still changes and is announced.
        reply = await runner.control(SpeedControl(action="speed", value=4))
        history.close()
        return runner, hub, step, reply

    runner, hub, step, reply = asyncio.run(go())
    step_frame, speed_frame = hub.frames
    assert step_frame.is_step and runner.view.last_frame == step_frame.text
    sent = json.loads(step_frame.text)
    fields = StepFields.model_validate_json(step.body).model_dump()
    same_message(step_frame.text, StepMsg(**fields, seq=sent["seq"], sent_at=sent["sent_at"]))
    [event_frame] = step_frame.events
    same_message(event_frame.text, run_events.resumed(1))
    speed = run_events.speed_changed(step.figures.step, 4)
    same_message(speed_frame.text, speed)
    assert reply["events"] == [speed.model_dump()] and reply["status"]["speed"] == 4


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        (run_events.paused(3), "paused"),
        (run_events.resumed(3), "resumed"),
        (run_events.speed_changed(3, "max"), "speed_changed"),
        (
            run_events.run_reset(0, run_id="b", previous_run_id="a", seed=1, preset="a100"),
            "run_reset",
        ),
        (run_events.restored_after_unclean_stop(0, 9, from_checkpoint=False), "restored"),
    ],
)
def test_runner_events_are_protocol_events(event: EventMsg, kind: str) -> None:
    assert event.kind == kind and event.message
    same_message(event.model_dump_json(), event)


@pytest.mark.timeout(60)
def test_viewers_coming_and_going_build_the_snapshot_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every join and leave changes the count of viewers, and nothing else: the snapshot is
    serialised once and the count spliced in, not rebuilt per viewer (which, at a class
    opening the page, churned the server's memory)."""
    builds: list[int] = []
    real = view_module.snapshot_text

    def counting(status: RunStatus, *args: Any) -> str:
        builds.append(status.viewers)
        return real(status, *args)

    monkeypatch.setattr(view_module, "snapshot_text", counting)
    history = History(tmp_path / "runs.sqlite")

    async def go() -> list[str]:
        hub = Hub(max_fps=20, queue_limit=64, send_timeout_s=5)
        runner = Runner(options(tmp_path / "run", speed="lesson"), hub, history)
        await runner.start()
        await runner.control(PauseControl(action="pause"))
        sent: list[str] = []

        async def send(text: str) -> None:
            sent.append(text)

        try:
            builds.clear()
            first = lambda: [runner.snapshot_text()]  # noqa: E731
            viewers = [hub.add(send, can_control=False, first=first) for _ in range(50)]
            await until(lambda: len(sent) == 50, 10, "50 snapshots sent")
            for v in viewers[:25]:
                await hub.remove(v)
            hub.add(send, can_control=False, first=first)
            await until(lambda: len(sent) == 51, 10, "one more snapshot sent")
            for v in hub.viewers():
                await hub.remove(v)
        finally:
            await runner.stop()
        return sent

    sent = asyncio.run(go())
    assert len(builds) == 1, f"the snapshot was built {len(builds)} times for 51 joins"
    counts = [json.loads(t)["status"]["viewers"] for t in sent]
    assert sorted(counts) == sorted([*range(1, 51), 26])
    for text in sent[:3]:
        server_message_adapter.validate_python(json.loads(text))
    history.close()
