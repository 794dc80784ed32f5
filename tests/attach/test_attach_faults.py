"""Faults of an attached job at a real `trainingrun watch` server (real uvicorn on loopback),
reported with real HTTP posts and watched by a real websocket viewer:

- many ranks registering, or a rank whose host name keeps changing, send each viewer a
  handful of hellos (coalesced), not one per rank or per post;
- a step no job could have reached is refused (422 `step_out_of_range`) and the display goes
  on with the real steps;
- a job that restarts at a lower step under the same run id is shown as a rollback (the
  built-in run's `restored` event), and the lower steps are drawn again."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from app.attached.run import HELLO_MAX_HOLD_S, MAX_STEP_JUMP
from app.protocol import server_message_adapter

from .conftest import WatchServer, rank_info


def rank_body(
    rank: int,
    steps: list[int],
    *,
    world: int,
    per_node: int = 8,
    host: str | None = None,
    run: str = "job-1",
    forward_s: float = 0.002,
) -> dict[str, Any]:
    info = rank_info(rank, world, per_node, host)
    reports = [
        {
            "step": s,
            "loss": 2.0,
            "tokens": 100,
            "data_s": 0.001,
            "forward_s": forward_s,
            "backward_s": 0.006,
            "optimizer_s": 0.001,
            "step_s": 0.01 + forward_s,
            "allreduce_s": 0.003,
            "allreduce_exposed_s": 0.002,
            "allreduce_bytes": 8000,
            "allreduce_elements": 2000,
            "allreduce_calls": 1,
        }
        for s in steps
    ]
    return {"type": "attach", "protocol": 2, "run_id": run, "rank": info, "steps": reports}


class Viewer:
    """A websocket viewer in a thread of its own: every frame it gets, with its size."""

    def __init__(self, url: str) -> None:
        self._conn = connect(url.replace("http://", "ws://") + "/ws", max_size=2**24)
        self.ws = self._conn.__enter__()
        self.frames: list[tuple[int, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while True:
                text = self.ws.recv()
                msg = json.loads(text)
                server_message_adapter.validate_python(msg)  # every frame honours the contract
                with self._lock:
                    self.frames.append((len(text.encode()), msg))
        except ConnectionClosed:
            pass

    def close(self) -> None:
        self._conn.__exit__(None, None, None)
        self._thread.join(5)

    def seen(self) -> list[tuple[int, dict[str, Any]]]:
        with self._lock:
            return list(self.frames)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [m for _, m in self.seen() if m["type"] == kind]

    def wait(self, pred: Callable[[dict[str, Any]], bool], what: str, timeout: float = 8.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            hit = [m for _, m in self.seen() if pred(m)]
            if hit:
                return hit[-1]
            time.sleep(0.02)
        raise AssertionError(f"the viewer never got {what}; last: {self.seen()[-3:]!r}")


def is_step(n: int) -> Callable[[dict[str, Any]], bool]:
    return lambda m: m["type"] == "step" and m["step"] == n


def is_restored(m: dict[str, Any]) -> bool:
    return m["kind"] == "restored"


@pytest.fixture
def watched(watch_server: WatchServer) -> Iterator[tuple[WatchServer, Viewer, httpx.Client]]:
    viewer = Viewer(watch_server.url)
    viewer.wait(lambda m: m["type"] == "snapshot", "its first frames")
    with httpx.Client(base_url=watch_server.url, timeout=10) as http:
        try:
            yield watch_server, viewer, http
        finally:
            viewer.close()


def post(http: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    return http.post("/api/attach", json=body)


# --- A: hellos are coalesced ------------------------------------------------------------


def test_many_ranks_registering_send_each_viewer_a_few_hellos(watched) -> None:
    server, viewer, _ = watched
    world = 128

    def register(ranks: range) -> set[int]:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            return {post(http, rank_body(r, [1], world=world)).status_code for r in ranks}

    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        codes = set().union(*pool.map(register, [range(i, world, 8) for i in range(8)]))
    took = time.monotonic() - t0
    assert codes == {200}
    viewer.wait(is_step(1), "the job's first step")
    last = viewer.wait(
        lambda m: m["type"] == "hello" and len(m["attached"]["hosts"]) == world // 8,
        "a hello with every machine",
    )
    assert last["attached"]["world_size"] == world
    frames = viewer.seen()
    hellos = [size for size, m in frames if m["type"] == "hello"]
    assert 1 <= len(hellos) <= 4, f"{len(hellos)} hellos: {world} ranks registering, {took:.1f} s"
    # What the viewer got is bounded by a few hellos of the whole job (each linear in the
    # ranks) and its step, not a hello per rank.
    step_bytes = sum(size for size, m in frames if m["type"] == "step")
    total = sum(size for size, _ in frames)
    assert total <= 4 * hellos[-1] + step_bytes + 64 * 1024, (total, hellos[-1], step_bytes)


def test_a_host_name_that_keeps_changing_does_not_send_a_hello_per_post(watched) -> None:
    _, viewer, http = watched
    assert post(http, rank_body(1, [1], world=2, per_node=1)).status_code == 200
    viewer.wait(lambda m: m["type"] == "hello", "the job's hello")
    before = len(viewer.of("hello"))
    t0 = time.monotonic()
    posts = 200
    for i in range(posts):
        r = post(http, rank_body(0, [i + 1], world=2, per_node=1, host=f"flap-{i}"))
        assert r.status_code == 200
    took = time.monotonic() - t0
    last = viewer.wait(
        lambda m: m["type"] == "hello" and f"flap-{posts - 1}" in m["attached"]["hosts"],
        "a hello with the latest host name",
    )
    assert last["attached"]["hosts"] == [f"flap-{posts - 1}", "node1"]
    sent = len(viewer.of("hello")) - before
    # Under a continuous storm one hello every HELLO_MAX_HOLD_S at most, plus the last.
    assert sent <= 2 + took / HELLO_MAX_HOLD_S, f"{sent} hellos for {posts} posts in {took:.1f} s"


# --- B: implausible steps, and a job that restarts at a lower step ---------------------------


def test_an_implausible_step_is_refused_and_the_display_goes_on(watched) -> None:
    server, viewer, http = watched
    assert post(http, rank_body(0, [1, 2, 3], world=1, per_node=1)).status_code == 200
    viewer.wait(is_step(3), "step 3")
    for bad in (2**53, 3 + MAX_STEP_JUMP + 1):
        r = post(http, rank_body(0, [4, bad], world=1, per_node=1))
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["code"] == "step_out_of_range" and str(bad) in r.json()["message"]
    for bad in (-1, "NaN", 1.5):  # not a step at all: the schema refuses it
        body = json.dumps(rank_body(0, [4], world=1, per_node=1))
        body = body.replace('"step": 4', f'"step": {bad}')
        r = http.post("/api/attach", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 422 and "step" in r.text, (bad, r.text)
    assert http.get("/api/run").json()["step"] == 3  # the run is as it was
    # The refused steps were not taken: the real ones go on being drawn.
    assert post(http, rank_body(0, [4], world=1, per_node=1)).status_code == 200
    viewer.wait(is_step(4), "step 4 after the refused reports", timeout=5.0)
    # The largest jump allowed is taken.
    r = post(http, rank_body(0, [4 + MAX_STEP_JUMP], world=1, per_node=1))
    assert r.status_code == 200 and r.json()["step"] == 4 + MAX_STEP_JUMP
    assert server.status()["steps_shown"] == 5


def test_a_job_restarting_at_a_lower_step_is_shown_as_a_rollback(watched) -> None:
    server, viewer, http = watched
    for first in (1, 6):
        for rank in (0, 1):
            body = rank_body(rank, list(range(first, first + 5)), world=2, per_node=1)
            assert post(http, body).status_code == 200
    viewer.wait(is_step(10), "step 10")
    # A batch sent again (its answer was lost) is not a restart.
    assert post(http, rank_body(1, list(range(6, 11)), world=2, per_node=1)).status_code == 200
    # The job restarts from its checkpoint at step 5: each rank reports step 6 onwards again.
    for rank in (0, 1):
        body = rank_body(rank, [6, 7, 8], world=2, per_node=1, forward_s=0.003)
        assert post(http, body).status_code == 200
    viewer.wait(lambda m: is_step(8)(m) and m["gpu_losses"], "step 8 after the restart")
    frames = [m for _, m in viewer.seen()]
    rollbacks = [i for i, m in enumerate(frames) if m["type"] == "event" and is_restored(m)]
    assert len(rollbacks) == 1, [frames[i] for i in rollbacks]
    event = frames[rollbacks[0]]
    assert event["step"] == 5
    assert event["detail"] == {
        "failed_step": 10,
        "restored_step": 5,
        "steps_lost": 5,
        "reason": "restart",
    }
    # Step frames to a viewer are paced (the hub sends the latest), so it may skip some...
    after = [m["step"] for m in frames[rollbacks[0] :] if m["type"] == "step"]
    assert after[-1] == 8 and set(after) <= {6, 7, 8}, after
    # ...but every step the job made again is drawn and recorded, after the rollback.
    recorded = http.get("/api/steps").json()["steps"]
    assert [r["step"] for r in recorded] == [*range(1, 11), 6, 7, 8]
    assert http.get("/api/run").json()["step"] == 8
    # A viewer that opens the page now is told about the rollback too.
    late = Viewer(server.url)
    try:
        snap = late.wait(lambda m: m["type"] == "snapshot", "its snapshot")
    finally:
        late.close()
    assert any(e["kind"] == "restored" for e in snap["events"])
    assert snap["status"]["step"] == 8
    # And the job goes on from there.
    for rank in (0, 1):
        body = rank_body(rank, [9], world=2, per_node=1, forward_s=0.003)
        assert post(http, body).status_code == 200
    viewer.wait(is_step(9), "step 9 after the restart")
    assert len([m for m in viewer.of("event") if m["kind"] == "restored"]) == 1
