"""Recordings of real runs (app/run/recording.py), made by `trainingrun record` and played by a
server as a story's run (app/run/replay.py): every step a page is sent is the recorded step,
the hello says it is a recording, what a recording cannot do is refused with a reason, and a
damaged recording is set aside while the run is computed instead."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import websockets
from servers import ROOT, ServerProcess, get_json, next_message

from app.engine.config import RunConfig
from app.engine.trainer import Trainer
from app.routes.story import side_run
from app.run.recording import find_recording, read_recording, recording_path

pytestmark = pytest.mark.timeout(180)

# The story's model on one GPU (its "one" run is then tiny); the class run never rests.
SETTINGS = ("--gpus", "1", "--servers", "1", "--layers", "4", "--experts", "16",
            "--batch-size", "64", "--checkpoint-every", "0")  # fmt: skip
SERVE = (*SETTINGS, "--speed", "max", "--rest-after", "0", "--log-level", "warning")
REF = "one-gpu.one"
STEPS = 6


def record(run_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "record", *args, "--run-dir", str(run_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def story_config() -> dict:
    base = RunConfig(gpus=1, servers=1, n_layer=4, experts=16, batch_size=64, checkpoint_every=0)
    found = side_run(REF, base)
    assert found is not None
    return found[0].to_dict()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("recorded") / "run"
    done = record(run_dir, REF, "--steps", str(STEPS), *SETTINGS)
    assert done.returncode == 0, done.stderr
    assert f"{REF}: {STEPS} steps" in done.stdout
    return run_dir


def test_a_recording_is_what_the_engine_computes(recorded: Path) -> None:
    """The recording holds the steps of a real run of its config: a run trained here, now,
    from the same seed reaches the same losses step for step."""
    config = story_config()
    meta = find_recording(recorded, REF, config)
    assert meta is not None and meta.steps == STEPS and meta.first_step == 1
    assert meta.made_with == "trainingrun record"
    rec = read_recording(recording_path(recorded, REF, config))
    assert [s.figures.step for s in rec.steps] == list(range(1, STEPS + 1))
    trainer = Trainer(RunConfig.from_dict(config), recorded / "check", fresh=True, run_id="check")
    try:
        for s in rec.steps:
            report = trainer.train_step()
            assert report.step == s.figures.step
            assert report.loss == s.figures.loss and report.grad_norm == s.figures.grad_norm
            assert json.loads(s.body)["loss"] == report.loss
    finally:
        trainer.close(final_checkpoint=False)
    # Another config has no recording: a server with other settings computes its run.
    assert find_recording(recorded, REF, {**config, "seed": 1}) is None


def test_a_server_plays_the_recording_step_for_step(recorded: Path, tmp_path: Path) -> None:
    rec = read_recording(recording_path(recorded, REF, story_config()))
    srv = ServerProcess(recorded, *SERVE, log_name="played")
    srv.start()
    try:

        async def go() -> None:
            async with websockets.connect(f"{srv.ws_url}?run={REF}", max_size=None) as ws:
                hello = await next_message(ws, "hello")
                assert hello["watching"] == REF
                r = hello["recording"]
                assert r["kind"] == "recording" and r["ref"] == REF
                assert (r["steps"], r["first_step"], r["last_step"]) == (STEPS, 1, STEPS)
                # What a recording cannot do is refused, and said why; the run is unharmed.
                await ws.send(json.dumps({"type": "control", "action": "fail_gpu", "gpu": 0}))
                err = await next_message(ws, "error")
                assert err["code"] == "recording" and "recording" in err["message"]
                # A reset of the same run plays it again from its first step (six steps may
                # all have been played before this page was connected).
                await ws.send(json.dumps({"type": "control", "action": "reset"}))
                again = await next_message(ws, "hello")
                assert again["run_id"] != hello["run_id"] and again["recording"] == r
                got: dict[int, dict] = {}
                ended = None
                while ended is None:
                    msg = json.loads(await asyncio.wait_for(ws.recv(), 60))
                    if msg["type"] == "step":
                        got[msg["step"]] = msg
                        ends = [e for e in msg["events"] if e["kind"] == "recording_ended"]
                        ended = ends[0] if ends else None
                assert ended["step"] == STEPS and ended["detail"]["last_step"] == STEPS
                assert sorted(got) == list(range(1, STEPS + 1))
                for s in rec.steps:
                    body = json.loads(s.body)
                    sent = got[s.figures.step]
                    if s is rec.steps[-1]:
                        sent = {**sent, "events": sent["events"][:-1]}  # less the end's note
                    assert {k: sent[k] for k in body} == body  # every recorded field, as recorded

        asyncio.run(go())
        runs = {r["id"]: r for r in get_json(f"{srv.url}/api/runs")["runs"]}
        assert runs[REF]["source"] == "recording"
        assert runs[REF]["recording"]["steps"] == STEPS
        assert runs["class"]["source"] == "live" and runs["class"]["recording"] is None
    finally:
        srv.stop()


def test_a_recording_played_to_its_end_still_shows_its_last_step_after_a_crash(
    recorded: Path, tmp_path: Path
) -> None:
    """A server that played a recording to its end and then died without stopping: the next
    server opens the run where its record stands, at the last step. A page that joins is sent
    that step (nothing more will ever come): before, it got a hello at the last step and no
    step to show, and the story's chapter waited for one forever."""
    run_dir = tmp_path / "run"
    shutil.copytree(recorded, run_dir)
    first = ServerProcess(run_dir, *SERVE, log_name="played-to-the-end")
    first.start()
    try:

        async def play_to_the_end() -> None:
            async with websockets.connect(f"{first.ws_url}?run={REF}", max_size=None) as ws:
                await next_message(ws, "hello")
                await ws.send(json.dumps({"type": "control", "action": "reset"}))
                await next_message(ws, "hello")
                while True:
                    msg = await next_message(ws, "step")
                    if any(e["kind"] == "recording_ended" for e in msg["events"]):
                        return

        asyncio.run(play_to_the_end())
    finally:
        first.kill()
    second = ServerProcess(run_dir, *SERVE, log_name="after-the-crash")
    second.start()
    try:

        async def join() -> tuple[dict, dict]:
            async with websockets.connect(f"{second.ws_url}?run={REF}", max_size=None) as ws:
                return await next_message(ws, "hello"), await next_message(ws, "snapshot")

        hello, snapshot = asyncio.run(join())
        assert hello["watching"] == REF and snapshot["status"]["step"] == STEPS, snapshot
        last = snapshot["last_step"]
        assert last is not None and last["step"] == STEPS, last
        rec = read_recording(recording_path(recorded, REF, story_config()))
        assert last["loss"] == rec.steps[-1].figures.loss
        # The figures a page shows beside it are that step's too.
        assert snapshot["status"]["loss"] == rec.steps[-1].figures.loss, snapshot["status"]
    finally:
        second.stop()


def test_a_damaged_recording_is_set_aside_and_the_run_computed(
    recorded: Path, tmp_path: Path
) -> None:
    """A recording whose head reads but whose steps are cut short: the page still gets the
    run, computed live, and the damaged file is moved aside, not played again."""
    run_dir = tmp_path / "run"
    path = recording_path(run_dir, REF, story_config())
    path.parent.mkdir(parents=True)
    lines = gzip.decompress(recording_path(recorded, REF, story_config()).read_bytes())
    path.write_bytes(gzip.compress(b"\n".join(lines.split(b"\n")[:3]) + b"\n"))
    srv = ServerProcess(run_dir, *SERVE, log_name="damaged")
    srv.start(fresh=True)
    try:

        async def go() -> None:
            async with websockets.connect(f"{srv.ws_url}?run={REF}", max_size=None) as ws:
                hello = await next_message(ws, "hello")
                assert hello["watching"] == REF and hello["recording"] is None
                step = await next_message(ws, "step")
                assert step["step"] >= 1

        asyncio.run(go())
        assert not path.exists() and path.with_name(path.name + ".damaged").exists()
        assert "could not be played" in srv.log()
    finally:
        srv.stop()


def test_record_refuses_what_it_cannot_record(tmp_path: Path) -> None:
    done = record(tmp_path / "run", "one-gpu.nothing", "--steps", "2")
    assert done.returncode == 2
    assert "'one-gpu.nothing' is not a story run" in done.stderr and "one-gpu.team64" in done.stderr
    done = record(tmp_path / "run", REF, "--steps", "0")
    assert done.returncode == 2 and "--steps must be 1 or more" in done.stderr


# ---- recorded the first time it is watched ---------------------------------------------------


def test_a_heavy_run_is_recorded_the_first_time_it_is_watched_then_played(tmp_path: Path):
    """A story run in the story's "recorded" list, with no recording yet, is computed and its
    first steps are kept as its recording; started again, it plays them, the same steps."""
    from inproc import RecordingHub, options

    from app.protocol import CLASS_RUN
    from app.routes.story import side_run as story_side_run
    from app.web.runs import RECORDED_LIVE, RunEntry, Runs

    class Idle:  # the class run: not what this test is about
        view = None

    def story_runs(**kw) -> Runs:
        """A server's runs on this run dir, with REF the one heavy run."""
        return Runs(
            RunEntry(CLASS_RUN, "class", "the class run", Idle(), RecordingHub()),
            side_runs=story_side_run,
            make_hub=RecordingHub,
            options=options(tmp_path / "run", speed="max"),
            recorded=lambda ref: ref == REF,
            **kw,
        )

    async def go() -> None:
        runs = story_runs(record_steps=3)
        live = await runs.open(REF)
        assert live.runner.recording is None and live.runner.recorder is not None
        deadline = time.monotonic() + 60
        while live.runner.recorder.state in ("recording", "writing"):
            assert time.monotonic() < deadline, live.runner.recorder.state
            await asyncio.sleep(0.05)
        assert live.runner.recorder.state == "written", live.runner.recorder.error
        # The recorder takes a step on the training thread; the hub gets it a moment later on
        # the loop, so the third step may be written before the hub has it.
        while len([f for f in live.hub.steps() if f["step"] <= 3]) < 3:
            assert time.monotonic() < deadline, live.hub.steps()
            await asyncio.sleep(0.05)
        computed = [f for f in live.hub.steps() if f["step"] <= 3]
        await runs.close()

        config = live.runner.view.config.to_dict()
        meta = find_recording(tmp_path / "run", REF, config)
        assert meta is not None and meta.made_with == RECORDED_LIVE and meta.steps == 3
        again = story_runs()
        played = await again.open(REF)
        assert played.runner.recording["made_with"] == RECORDED_LIVE
        assert played.runner.recorder is None  # played, not recorded again
        deadline = time.monotonic() + 30
        while len(played.hub.steps()) < 3:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        got = played.hub.steps()[:3]
        await again.close()
        assert [s["loss"] for s in got] == [s["loss"] for s in computed[:3]]
        assert [s["step"] for s in got] == [1, 2, 3]

    asyncio.run(go())


def test_a_run_that_fails_a_gpu_is_not_recorded(tmp_path: Path) -> None:
    from app.protocol import EventMsg
    from app.run.recording import Recorder

    rec = Recorder(tmp_path / "r.rec.gz", REF, 3, "test")
    rec.saw([EventMsg(kind="checkpoint_saved", step=1, message="saved")])
    assert rec.state == "recording"
    rec.saw([EventMsg(kind="gpu_failed", step=2, message="GPU 1 failed")])
    assert rec.state == "abandoned" and not (tmp_path / "r.rec.gz").exists()
