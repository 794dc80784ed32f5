"""The server's side of an attached run, without torch: the model that turns rank reports into
hello and step messages (app/attached/run.py), and the ingest endpoint (app/routes/attach.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.attached.run import QUIET_S, AttachedRun, AttachError
from app.attached.trace import step_trace
from app.protocol import AttachBatch, server_message_adapter
from app.routes import attach as attach_routes
from app.run.history import History
from app.settings import Settings
from app.web.app import create_app
from app.web.guard import Guard
from app.web.hub import Frame, Hub

from .conftest import rank_info


class RecordingHub(Hub):
    def __init__(self) -> None:
        super().__init__(max_fps=20, queue_limit=64, send_timeout_s=5)
        self.frames: list[dict[str, Any]] = []

    def publish(self, frame: Frame) -> None:
        msg = json.loads(frame.text)
        server_message_adapter.validate_python(msg)  # every frame honours the contract
        self.frames.append(msg)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f["type"] == kind]


def batch(
    rank: int, steps: list[int], *, world: int = 4, per_node: int = 2, run: str = "job-1", **kw: Any
) -> AttachBatch:
    info = rank_info(rank, world, per_node)
    reports = [
        {
            "step": s,
            "loss": 2.0 + rank / 10,
            "tokens": 100,
            "tokens_total": 100 * s,
            "data_s": 0.001,
            "forward_s": 0.002 * (rank + 1),
            "backward_s": 0.006,
            "optimizer_s": 0.001,
            "step_s": 0.011,
            "allreduce_s": 0.003,
            "allreduce_exposed_s": 0.002 + 0.001 * rank,
            "allreduce_bytes": 8000,
            "allreduce_elements": 2000,
            "allreduce_calls": 1,
        }
        for s in steps
    ]
    body = {"type": "attach", "protocol": 2, "run_id": run, "rank": info, "steps": reports}
    return AttachBatch.model_validate({**body, **kw})


def test_a_step_is_shown_once_every_rank_has_reported_it() -> None:
    hub = RecordingHub()
    run = AttachedRun(hub)
    for rank in range(3):
        run.ingest(batch(rank, [1, 2]))
    assert hub.of("step") == []  # rank 3 has not reported yet
    run.ingest(batch(3, [1]))
    (step,) = hub.of("step")
    assert step["step"] == 1 and len(step["gpu_losses"]) == 4
    assert step["loss"] == pytest.approx(2.15)
    run.ingest(batch(3, [2]))
    assert [s["step"] for s in hub.of("step")] == [1, 2]
    assert run.status().step == 2 and run.status().state == "running"


def test_hello_shows_the_jobs_real_shape_measured() -> None:
    hub = RecordingHub()
    run = AttachedRun(hub)
    for rank in range(4):
        run.ingest(batch(rank, [1]))
    hello = json.loads(run.hello_text(False))
    assert hello["measured"] is True
    assert hello["attached"] == {
        "backend": "gloo",
        "device": "cpu",
        "world_size": 4,
        "nodes": 2,
        "ranks_per_node": 2,
        "hosts": ["node0", "node1"],
    }
    topo = hello["topology"]
    assert [s["gpus"] for s in topo["servers"]] == [[0, 1], [2, 3]]
    assert [link["kind"] for link in topo["ring_links"]] == ["nvlink", "leaf", "nvlink", "leaf"]
    assert hello["plan"]["dp"] == 4 and hello["n_params"] == 1000
    assert "measured on your cluster" in hello["preset"]["label"].lower()


def test_the_trace_lays_each_ranks_measured_times_on_its_lane() -> None:
    reports = {r: batch(r, [1]).steps[0] for r in range(4)}
    trace = step_trace(reports, 4, ["nvlink", "leaf", "nvlink", "leaf"])
    fwd = {s.lanes[0]: s for s in trace.spans if s.kind == "forward"}
    assert [fwd[r].dur for r in range(4)] == pytest.approx([0.002, 0.004, 0.006, 0.008])
    assert all(s.wall_s == s.dur for s in fwd.values())
    (ring,) = trace.rings
    # The all-reduce cannot end before the slowest rank joins it; it lasts the shortest
    # wait any rank measured after its backward compute.
    joined = max(0.001 + 0.002 * (r + 1) + 0.006 - (0.002 + 0.001 * r) for r in range(4))
    assert ring.t0 == pytest.approx(joined)
    assert sum(s * n for s, n in ring.pass_s) == pytest.approx(0.002)
    assert sum(ring.chunk_bytes) == 8000 and ring.ring == [0, 1, 2, 3]
    # Every lane adds up to the step: ranks that got there early wait.
    for rank in range(4):
        lane = [s for s in trace.spans if s.lanes == [rank] and s.kind != "allreduce_hidden"]
        assert sum(s.dur for s in lane) + 0.002 == pytest.approx(trace.step_s)


def test_waiting_until_a_job_attaches_then_one_job_at_a_time(monkeypatch) -> None:
    hub = RecordingHub()
    run = AttachedRun(hub, url="http://127.0.0.1:8123")
    waiting = json.loads(run.hello_text(False))
    assert waiting["type"] == "attach_status" and waiting["waiting"] is True
    assert "http://127.0.0.1:8123" in waiting["message"]
    assert json.loads(run.snapshot_text())["status"]["state"] == "waiting"
    run.ingest(batch(0, [1]))
    with pytest.raises(AttachError) as exc:
        run.ingest(batch(0, [1], run="job-2"))
    assert exc.value.code == "another_run"
    with pytest.raises(AttachError) as exc:
        run.ingest(batch(1, [1], world=8))
    assert exc.value.code == "world_size_mismatch"
    # Once the first job has gone quiet, another may attach.
    run.last_report -= QUIET_S + 1
    run.ingest(batch(0, [1], run="job-2", world=2, per_node=2))
    assert run.view.run_id == "job-2" and run.world == 2


def test_reports_a_rank_dropped_are_said_once_each() -> None:
    hub = RecordingHub()
    run = AttachedRun(hub)
    run.ingest(batch(0, [1], dropped=0))
    run.ingest(batch(0, [2], dropped=40))
    run.ingest(batch(0, [3], dropped=40))
    events = [e for e in hub.of("event") if e["kind"] == "reports_dropped"]
    assert len(events) == 1 and events[0]["detail"] == {"rank": 0, "dropped": 40}
    assert run.status_msg().dropped == 40


def test_steps_are_recorded_and_a_restarted_server_resumes_the_picture(tmp_path: Path) -> None:
    history = History(tmp_path / "runs.sqlite")
    try:
        first = AttachedRun(RecordingHub(), history)
        asyncio.run(first.start())
        for step in (1, 2, 3):
            for rank in range(4):
                first.ingest(batch(rank, [step]))
        assert [r["step"] for r in history.steps("job-1")] == [1, 2, 3]
        assert history.step_trace("job-1", 2) is not None
        # The server restarts under the same job: its loss history and step come back.
        again = AttachedRun(RecordingHub(), history)
        asyncio.run(again.start())
        for rank in range(4):
            again.ingest(batch(rank, [4]))
        snap = json.loads(again.snapshot_text())
        assert [p["step"] for p in snap["history"]] == [1, 2, 3, 4]
        assert len({p["seq"] for p in snap["history"]}) == 4
    finally:
        history.close()


# --- the endpoint -------------------------------------------------------------------------


@pytest.fixture
def client(tmp_path: Path) -> Any:
    app = create_app(Settings(run_dir=tmp_path / "run"), watch=True)
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        yield c


def test_the_endpoint_takes_a_batch_and_refuses_bad_input_clearly(client: TestClient) -> None:
    assert client.get("/api/attach").json()["waiting"] is True
    good = batch(0, [1, 2], world=1, per_node=1).model_dump()
    r = client.post("/api/attach", json=good)
    assert r.status_code == 200 and r.json()["steps_shown"] == 2
    assert client.get("/api/run").json()["step"] == 2
    bad_field = {**good, "steps": [{**good["steps"][0], "loss_value": 1.0}]}
    r = client.post("/api/attach", json=bad_field)
    assert r.status_code == 422 and "loss_value" in json.dumps(r.json())
    r = client.post(
        "/api/attach",
        content=json.dumps(good).replace('"forward_s": 0.002', '"forward_s": NaN'),
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 422
    negative = {**good, "steps": [{**good["steps"][0], "step_s": -1.0}]}
    r = client.post("/api/attach", json=negative)
    assert r.status_code == 422 and "step_s" in json.dumps(r.json())
    r = client.post("/api/attach", json={**good, "rank": {**good["rank"], "rank": 3}})
    assert r.status_code == 400 and r.json()["code"] == "bad_rank"
    # The run goes on after all that.
    r = client.post("/api/attach", json=batch(0, [3], world=1, per_node=1).model_dump())
    assert r.status_code == 200
    assert client.get("/api/run").json()["step"] == 3


def test_a_public_server_needs_its_token(tmp_path: Path) -> None:
    settings = Settings(run_dir=tmp_path / "run", public=True, token="a-long-secret")
    app = create_app(settings, watch=True)
    body = batch(0, [1], world=1, per_node=1).model_dump()
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        r = c.post("/api/attach", json=body)
        assert r.status_code == 403 and "token" in r.json()["message"]
        assert c.post("/api/attach", json={**body, "token": "wrong-one"}).status_code == 403
        auth = {"Authorization": "Bearer a-long-secret"}
        assert c.post("/api/attach", json=body, headers=auth).status_code == 200


def test_a_server_with_its_own_run_says_to_use_watch(tmp_path: Path) -> None:
    app = FastAPI()
    app.state.guard = Guard(Settings(run_dir=tmp_path))
    app.include_router(attach_routes.router)
    body = batch(0, [1], world=1, per_node=1).model_dump()
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        r = c.post("/api/attach", json=body)
    assert r.status_code == 409 and "trainingrun watch" in r.json()["message"]
