"""Every recorded step's trace over REST: a Chrome trace whose lanes add up to the step time
the page shows, the compact form the step carried, and clear errors."""

from __future__ import annotations

import asyncio
import json
import types
import zlib

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from wsclient import Client

from app.engine.trace import expand, lane_sums, trace_from_dict
from app.protocol import StepMsg
from app.routes import traces
from app.run.history import History

ARGS = ("--gpus", "8", "--servers", "2", "--speed", "20", "--checkpoint-every", "4")


def steps_over_ws(url: str, n: int) -> list[dict]:
    async def go():
        c = await Client.connect(url)
        await c.until("snapshot")
        steps = [await c.until("step") for _ in range(n)]
        await c.close()
        return steps

    return asyncio.run(go())


@pytest.fixture(scope="module")
def served(live_server_module):
    srv = live_server_module(*ARGS)
    steps = steps_over_ws(srv.ws_url, 6)
    return srv, steps


def test_chrome_trace_of_a_served_step_sums_to_its_step_time(served) -> None:
    srv, steps = served
    for step in steps:
        StepMsg.model_validate(step)
        r = httpx.get(f"{srv.url}/api/steps/{step['step']}/trace", timeout=10)
        assert r.status_code == 200, r.text
        assert "attachment" in r.headers["content-disposition"]
        doc = r.json()
        slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
        threads = {e["tid"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
        assert threads == set(range(8))
        for g in range(8):
            total = sum(e["dur"] for e in slices if e["tid"] == g)
            # The HUD's step time is the step message's sim_step_s.
            assert total == pytest.approx(step["sim_step_s"] * 1e6, rel=1e-9)
        # GPUs 0-3 on server 0, 4-7 on server 1: one process each.
        assert {e["pid"] for e in slices if e["tid"] < 4} == {0}
        assert {e["pid"] for e in slices if e["tid"] >= 4} == {1}
        kinds = {e["name"].split(" ")[0] for e in slices}
        assert {"data", "forward", "backward", "allreduce", "optimizer"} <= kinds
        assert sum(e["ph"] == "s" for e in doc["traceEvents"]) == 8 * 2 * 7


def test_compact_and_lanes_forms_match_the_step_message(served) -> None:
    srv, steps = served
    step = steps[-1]
    compact = httpx.get(f"{srv.url}/api/steps/{step['step']}/trace?format=compact").json()
    assert compact == step["trace"]
    lanes = httpx.get(f"{srv.url}/api/steps/{step['step']}/trace?format=lanes").json()["lanes"]
    ours = expand(trace_from_dict(step["trace"]))
    assert [[e["kind"] for e in lane] for lane in lanes] == [[e.kind for e in l] for l in ours]
    for sums in lane_sums(trace_from_dict(compact)):
        assert sum(sums.values()) == pytest.approx(step["sim_step_s"], rel=1e-12)


def test_a_checkpoint_step_shows_its_write(served) -> None:
    srv, steps = served
    saved = [s for s in steps if any(e["kind"] == "checkpoint_saved" for e in s["events"])]
    assert saved, "the run checkpoints every 4 steps"
    doc = httpx.get(f"{srv.url}/api/steps/{saved[0]['step']}/trace").json()
    writes = [e for e in doc["traceEvents"] if e["name"] == "checkpoint"]
    # Data-parallel copies are identical: one GPU writes the model, the others wait for it.
    assert [e["tid"] for e in writes] == [0] and writes[0]["dur"] > 0
    waits = [e for e in doc["traceEvents"] if e["name"] == "wait" and e["ts"] == writes[0]["ts"]]
    assert sorted(e["tid"] for e in waits) == list(range(1, 8))
    assert all(e["dur"] == pytest.approx(writes[0]["dur"]) for e in waits)


def test_unknown_steps_and_bad_queries_get_clear_errors(served) -> None:
    srv, _ = served
    r = httpx.get(f"{srv.url}/api/steps/999999/trace")
    assert r.status_code == 404 and r.json()["code"] == "step_not_found"
    r = httpx.get(f"{srv.url}/api/steps/1/trace?run_id=nope")
    assert r.status_code == 404 and "nope" in r.json()["message"]
    assert httpx.get(f"{srv.url}/api/steps/-1/trace").status_code == 422
    assert httpx.get(f"{srv.url}/api/steps/1/trace?format=svg").status_code == 422
    assert httpx.get(f"{srv.url}/api/steps/1/trace?run_id=../../etc").status_code == 422
    # The server is still fine.
    assert httpx.get(f"{srv.url}/api/health").json()["ok"] is True
    assert json.loads(httpx.get(f"{srv.url}/api/run").text)["step"] > 0


def test_a_trace_too_big_for_a_file_is_refused_but_its_compact_form_is_given(tmp_path) -> None:
    """A 600-GPU ring has 718,800 sends: too many for one trace file."""
    history = History(tmp_path / "runs.sqlite")
    history.start_run("big", {"gpus": 600, "servers": 75, "batch_size": 600})
    g = 600
    compact = {
        "gpus": g,
        "step_s": 1.0,
        "spans": [],
        "rings": [
            {
                "kind": "allreduce",
                "t0": 0.0,
                "pass_s": [[1.0 / (2 * (g - 1)), 2 * (g - 1)]],
                "ring": list(range(g)),
                "links": ["nvlink"] * g,
                "chunk_bytes": [4] * g,
                "wall_s": None,
            }
        ],
    }
    figures = dict.fromkeys(
        ("epoch", "loss", "grad_norm", "lr", "tokens_total", "sim_step_s", "wall_step_s"), 0
    )
    blob = zlib.compress(json.dumps(compact).encode())
    history.add_step(1, "big", {"step": 1, **figures}, [], blob)
    app = FastAPI()
    app.include_router(traces.router)
    app.state.history = history
    app.state.runner = types.SimpleNamespace(view=types.SimpleNamespace(run_id="big"))
    with TestClient(app) as client:
        r = client.get("/api/steps/1/trace")
        assert r.status_code == 413 and r.json()["code"] == "trace_too_large"
        assert "718,800" in r.json()["message"]
        assert client.get("/api/steps/1/trace?format=compact").json() == compact
    history.close()
