"""Deeply nested JSON is refused at the edge with one error frame, costs no traceback in the
server log, and leaves the connection usable; unexpected errors are logged once per client."""

from __future__ import annotations

import asyncio
import logging
import time
from types import SimpleNamespace

import httpx
import pytest
from wsclient import Client, is_error, is_event

from app.routes import ws as ws_route
from app.web.limits import MAX_JSON_DEPTH, json_depth

DEEP = 5000


def run(coro):
    return asyncio.run(coro)


def test_json_depth_counts_brackets_outside_strings() -> None:
    assert json_depth("{}") == 1 and json_depth("1") == 0 and json_depth('"[[["') == 0
    assert json_depth('{"a": [1, {"b": "]]]}"}]}') == 3
    assert json_depth(r'{"a": "\"[[", "b": [[]]}') == 3
    assert json_depth("[" * DEEP + "]" * DEEP) == DEEP
    assert json_depth("[" * 100_000) == 100_000  # no recursion, however deep
    # Quotes and backslashes arranged to make a naive scan quadratic: still quick.
    t0 = time.perf_counter()
    assert json_depth('"\\' * 32_768) == 0 and json_depth('"' + "\\" * 65_000) == 0
    assert time.perf_counter() - t0 < 1.0
    assert MAX_JSON_DEPTH == 32


def test_deep_json_gets_one_error_frame_and_no_traceback(live_server) -> None:
    srv = live_server()
    deep_array = "[" * DEEP + "]" * DEEP
    deep_inside = '{"type":"control","action":"pause","x":' + deep_array + "}"

    async def go():
        c = await Client.connect(srv.ws_url)
        await c.until("snapshot")
        await c.send(deep_array)
        first = await c.until("error")
        await c.send(deep_inside)
        second = await c.until("error")
        await c.control("pause")
        paused = await c.until(is_event("paused"))
        await c.control("resume")
        await c.until(is_event("resumed"))
        await asyncio.sleep(2.5)  # let the message budget refill
        flood = []
        for _ in range(20):
            await c.send(deep_array)
        for _ in range(20):
            flood.append(await c.until("error"))
        await c.close()
        return first, second, paused, flood

    first, second, paused, flood = run(go())
    assert is_error("too_deep")(first) and is_error("too_deep")(second)
    assert str(32) in first["message"]
    assert paused["kind"] == "paused"
    assert all(m["code"] in ("too_deep", "rate_limited") for m in flood)
    assert httpx.get(srv.url + "/api/health", timeout=10).json()["ok"]
    srv.stop()
    log = srv.log()
    assert "Traceback" not in log and "RecursionError" not in log, log[-3000:]
    assert sum("unexpected error" in line for line in log.splitlines()) <= 1


def test_deep_json_over_rest_is_refused_cleanly(live_server) -> None:
    srv = live_server()
    deep = "[" * DEEP + "]" * DEEP
    for path in ("/api/run/control", "/api/labs/memory"):
        r = httpx.post(
            srv.url + path,
            content=deep,
            headers={"Content-Type": "application/json"},
            timeout=10,
        )
        assert r.status_code == 400, (path, r.status_code)
        assert r.json()["code"] == "too_deep"
    srv.stop()
    assert "Traceback" not in srv.log()


class _FakeViewer:
    def __init__(self) -> None:
        self.frames: list[str] = []
        self.can_control = True

    def push(self, frame) -> None:
        self.frames.append(frame.text if hasattr(frame, "text") else str(frame))


class _FakeSocket:
    def __init__(self, messages: list[dict]) -> None:
        self.messages = list(messages)
        self.client = SimpleNamespace(host="127.0.0.1", port=4242)
        self.query_params: dict[str, str] = {}
        self.app = SimpleNamespace(
            state=SimpleNamespace(runs=None, guard=SimpleNamespace(may_control=lambda t: True))
        )

    async def receive(self) -> dict:
        if self.messages:
            return self.messages.pop(0)
        return {"type": "websocket.disconnect"}


def test_unexpected_errors_are_logged_once_per_connection(caplog, monkeypatch) -> None:
    from app.settings import Settings

    messages = [{"type": "websocket.receive", "text": "{}"} for _ in range(7)]
    session = ws_route.Session(_FakeSocket(messages), _FakeViewer(), Settings(), entry=None)

    async def boom(text, data):
        raise RuntimeError("something unforeseen")

    monkeypatch.setattr(session, "handle", boom)
    with caplog.at_level(logging.WARNING, logger="trainingrun.ws"):
        run(session.receive_loop())
        session.log_summary()
    records = [r for r in caplog.records if r.name == "trainingrun.ws"]
    tracebacks = [r for r in records if r.exc_info]
    assert len(tracebacks) == 1
    assert len(records) == 2 and "6 more" in records[1].getMessage()
    assert len(session.viewer.frames) == 7  # every message still gets its error frame


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1])
def test_depth_limit_is_exact(depth: int) -> None:
    text = "[" * depth + "]" * depth
    assert (json_depth(text) > MAX_JSON_DEPTH) is (depth > MAX_JSON_DEPTH)
