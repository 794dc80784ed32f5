"""The runs a server holds (app/web/runs.py): a page watching a story chapter's run never
changes the class run or what another page sees of it; pages switch runs on one connection;
`GET /api/runs` lists them; side runs are bounded in number and stopped when nobody watches.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import websockets
from servers import ServerProcess, get_json, next_message

from app.engine.config import RunConfig
from app.protocol import CLASS_RUN, RunStatus
from app.web import runs as runs_mod
from app.web.hub import Hub
from app.web.runs import RunEntry, RunError, Runs

pytestmark = pytest.mark.timeout(180)

# The story's model on one GPU, so its runs are small; the class run rests never.
SERVE = ("--gpus", "1", "--servers", "1", "--layers", "4", "--experts", "16", "--batch-size",
         "64", "--speed", "max", "--checkpoint-every", "0", "--rest-after", "0")  # fmt: skip


async def _step_after(ws, step: int) -> dict:
    while True:
        msg = await next_message(ws, "step")
        if msg["step"] > step:
            return msg


def test_a_story_run_leaves_the_class_run_and_its_pages_alone(live_server) -> None:
    srv = live_server(*SERVE)

    async def go() -> None:
        async with websockets.connect(srv.ws_url) as room:
            hello = await next_message(room, "hello")
            assert hello["watching"] == CLASS_RUN and hello["config"]["gpus"] == 1
            class_id = hello["run_id"]
            async with websockets.connect(f"{srv.ws_url}?run=one-gpu.dp2") as story:
                side = await next_message(story, "hello")
                assert side["watching"] == "one-gpu.dp2"
                assert side["config"]["gpus"] == 2 and side["run_id"] != class_id
                first = await _step_after(story, 0)
                await _step_after(story, first["step"])  # the side run trains
                listed = {r["id"]: r for r in get_json(f"{srv.url}/api/runs")["runs"]}
                assert listed[CLASS_RUN]["run_id"] == class_id
                assert listed["one-gpu.dp2"]["config"]["gpus"] == 2
                assert listed["one-gpu.dp2"]["viewers"] == 1 and listed[CLASS_RUN]["viewers"] == 1
                # The other page saw no new hello: its run, plan and pace are as they were.
                step = await _step_after(room, 0)
                await _step_after(room, step["step"])
            assert get_json(f"{srv.url}/api/run")["run_id"] == class_id
            assert get_json(f"{srv.url}/api/run")["state"] == "running"

    asyncio.run(go())


def test_a_page_switches_runs_on_one_connection_and_bad_asks_are_answered(live_server) -> None:
    srv = live_server(*SERVE)

    async def go() -> None:
        async with websockets.connect(f"{srv.ws_url}?run=nothing.here") as ws:
            hello = await next_message(ws, "hello")  # on the class run instead, told why
            assert hello["watching"] == CLASS_RUN
            class_id = hello["run_id"]
            err = await next_message(ws, "error", 5)
            assert err["code"] == "unknown_run" and "nothing.here" in err["message"]
            await ws.send(json.dumps({"type": "watch", "run": "one-gpu.ep2"}))
            side = await next_message(ws, "hello")
            assert side["watching"] == "one-gpu.ep2" and side["plan"]["ep"] == 2
            snap = await next_message(ws, "snapshot")
            assert snap["status"]["run_id"] == side["run_id"]
            # Bad asks: each an error frame; the connection and the run go on.
            for bad, code in (
                ({"type": "watch", "run": "<b>x</b>"}, "invalid_field"),
                ({"type": "watch"}, "missing_field"),
                ({"type": "watch", "run": "one-gpu.nope"}, "unknown_run"),
            ):
                await ws.send(json.dumps(bad))
                assert (await next_message(ws, "error"))["code"] == code, bad
            await _step_after(ws, 0)
            # Warming a run starts it for a watch to come; this page keeps what it watches.
            await ws.send(json.dumps({"type": "warm", "run": "one-gpu.one"}))
            deadline = time.monotonic() + 60
            while "one-gpu.one" not in {r["id"] for r in get_json(f"{srv.url}/api/runs")["runs"]}:
                assert time.monotonic() < deadline, "the warmed run did not start"
                await asyncio.sleep(0.2)  # a poll interval
            await ws.send(json.dumps({"type": "watch", "run": CLASS_RUN}))
            back = await next_message(ws, "hello")  # the first hello since: none came for the warm
            assert back["watching"] == CLASS_RUN and back["run_id"] == class_id

    asyncio.run(go())


# ---- the registry on its own: bounds and idle stops, with stand-in runners ----------------


class _FakeRunner:
    started: list[str] = []

    def __init__(self, options, hub, history) -> None:
        self.options = options
        self.view = SimpleNamespace(watching="", info=None)
        self.stopped = False

    async def start(self) -> None:
        _FakeRunner.started.append(self.view.watching)

    async def stop(self) -> None:
        self.stopped = True

    def status(self) -> RunStatus:
        return RunStatus(
            state="running", speed="max", step=0, epoch=0, loss=None, tokens_total=0,
            restarts=0, viewers=0, run_id="r",
        )  # fmt: skip


def _hub() -> Hub:
    return Hub(max_fps=10, queue_limit=10, send_timeout_s=1)


def _runs(tmp_path: Path, clock, **kw) -> Runs:
    from inproc import options

    class_entry = RunEntry(
        CLASS_RUN, "class", "the class run", _FakeRunner(None, None, None), _hub()
    )
    known = {"s.a", "s.b", "s.c"}
    return Runs(
        class_entry,
        side_runs=lambda ref, base: (base, ref) if ref in known else None,
        make_hub=_hub,
        options=options(tmp_path / "run", speed="max"),
        clock=clock,
        **kw,
    )


def test_side_runs_are_bounded_shared_and_stopped_when_nobody_watches(tmp_path, monkeypatch):
    monkeypatch.setattr(runs_mod, "Runner", _FakeRunner)
    now = [0.0]

    async def go() -> None:
        runs = _runs(tmp_path, lambda: now[0], max_side=2, idle_s=60, max_own=1, own_idle_s=10)
        a = await runs.open("s.a")
        assert await runs.open("s.a") is a  # shared, started once
        b = await runs.open("s.b")
        with pytest.raises(RunError) as refused:
            await runs.open("s.c")
        assert refused.value.code == "too_many_runs" and "at most 2" in refused.value.message
        with pytest.raises(RunError, match="no run 's.x'"):
            await runs.open("s.x")
        assert [r["id"] for r in runs.describe()] == [CLASS_RUN, "s.a", "s.b"]
        # b is watched; a is not: a goes after a minute unwatched, b stays.
        viewer = b.hub.add(_sink, can_control=False, first=list)
        assert await runs.reap() == []
        now[0] += 59
        assert await runs.reap() == []
        now[0] += 2
        assert await runs.reap() == ["s.a"] and a.runner.stopped
        assert runs.viewers() == [viewer]
        # With a freed place, the third run starts.
        assert (await runs.open("s.c")).id == "s.c"
        # Pages' own runs: bounded apart from the story's, one page's new one replaces its
        # last, and one nobody watches goes after a shorter while.
        mine = await runs.own("key-one-1", RunConfig())
        assert mine.id.startswith("mine.") and mine.owned_by("key-one-1")
        assert not mine.owned_by("key-two-2") and not mine.owned_by(None)
        with pytest.raises(RunError) as too_many:
            await runs.own("key-two-2", RunConfig())
        assert too_many.value.code == "too_many_runs"
        with pytest.raises(RunError) as too_big:
            await runs.own("key-one-1", RunConfig().with_(gpus=128, servers=16))
        assert too_big.value.code == "too_big"
        again = await runs.own("key-one-1", RunConfig())  # the same page: not over the bound
        await runs.retire(mine)
        assert mine.id not in runs.entries and mine.runner.stopped
        assert await runs.reap() == []
        now[0] += 11
        assert await runs.reap() == [again.id]
        await runs.close()
        assert b.runner.stopped and not runs.class_run.runner.stopped
        # A server started with --side-runs 0 holds none: each ask says so.
        none = _runs(tmp_path, lambda: now[0], max_side=0)
        with pytest.raises(RunError) as held:
            await none.open("s.a")
        assert held.value.code == "no_side_runs"

    asyncio.run(go())


async def _sink(text: str) -> None:
    return None


def test_a_side_run_is_the_story_chapters_plan_on_the_class_settings() -> None:
    from app.routes.story import side_run

    base = RunConfig().with_(seed=7)
    config, label = side_run("one-gpu.team64", base)
    assert (config.gpus, config.servers, config.n_layer, config.pp, config.ep) == (64, 8, 32, 8, 8)
    assert config.seed == 7 and config.batch_size % 64 == 0 and "One GPU" in label
    assert side_run("one-gpu.nope", base) is None and side_run("two-gpus.one", base) is None


def test_any_page_starts_a_run_of_its_own_and_only_it_controls_that_run(live_server) -> None:
    """On a public server a page without the token starts its own run: it controls that run
    (and again after a reconnect, by its key), no other page does, and the class run is
    neither changed nor controllable by it."""
    srv = live_server(*SERVE, "--public", "--token", "teacher-token-1")
    key = "page-key-0123"

    async def go() -> None:
        class_id = get_json(f"{srv.url}/api/run")["run_id"]
        async with websockets.connect(srv.ws_url) as ws:
            assert (await next_message(ws, "hello"))["can_control"] is False
            await ws.send(json.dumps({"type": "own_run", "key": key, "gpus": 128}))
            assert (await next_message(ws, "error"))["code"] == "too_big"
            await ws.send(json.dumps({"type": "own_run", "key": key, "gpus": 3, "servers": 2}))
            assert (await next_message(ws, "error"))["code"] == "bad_config"
            await ws.send(json.dumps({"type": "own_run", "key": key, "gpus": 2, "seed": 5}))
            mine = await next_message(ws, "hello")
            assert mine["watching"].startswith("mine.") and mine["can_control"] is True
            assert mine["config"]["gpus"] == 2 and mine["config"]["seed"] == 5
            await ws.send(json.dumps({"type": "control", "action": "pause"}))
            assert (await next_message(ws, "event"))["kind"] == "paused"
        # Back after a reconnect, by its key: still its run to control.
        own = f"{srv.ws_url}?run={mine['watching']}"
        async with websockets.connect(f"{own}&key={key}") as ws:
            hello = await next_message(ws, "hello")
            assert hello["run_id"] == mine["run_id"] and hello["can_control"] is True
            await ws.send(json.dumps({"type": "control", "action": "resume"}))
            assert (await next_message(ws, "event"))["kind"] == "resumed"
        # Another page may watch it, but not steer it; nor may the owner steer the class run.
        async with websockets.connect(own) as ws:
            assert (await next_message(ws, "hello"))["can_control"] is False
            await ws.send(json.dumps({"type": "control", "action": "pause"}))
            assert (await next_message(ws, "error"))["code"] == "forbidden"
        async with websockets.connect(f"{srv.ws_url}?key={key}") as ws:
            assert (await next_message(ws, "hello"))["watching"] == CLASS_RUN
            await ws.send(json.dumps({"type": "control", "action": "pause"}))
            assert (await next_message(ws, "error"))["code"] == "forbidden"
        listed = {r["id"]: r for r in get_json(f"{srv.url}/api/runs")["runs"]}
        assert listed[mine["watching"]]["kind"] == "own"
        assert listed[CLASS_RUN]["run_id"] == class_id and listed[CLASS_RUN]["state"] == "running"

    asyncio.run(go())


def test_a_watch_server_lists_its_attached_run_and_starts_a_pages_own(tmp_path) -> None:
    """Under `trainingrun watch` the class run is the attached job: it is listed as such, and
    a page's own run starts from the server's own settings."""
    srv = ServerProcess(tmp_path / "watch", "--log-level", "warning", command="watch").start()

    async def go() -> None:
        listed = get_json(f"{srv.url}/api/runs")["runs"]
        assert [(r["id"], r["kind"], r["config"]) for r in listed] == [(CLASS_RUN, "attached", {})]
        async with websockets.connect(srv.ws_url) as ws:
            await next_message(ws, "snapshot")  # no hello until a job attaches
            await ws.send(
                json.dumps({"type": "own_run", "key": "watch-page-1", "gpus": 2, "servers": 1})
            )
            mine = await next_message(ws, "hello")
            assert mine["watching"].startswith("mine.") and mine["config"]["gpus"] == 2

    try:
        asyncio.run(go())
    finally:
        srv.stop()
