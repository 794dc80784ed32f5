"""Faults at scale injected over a real websocket (and REST): each kind is announced, shows in
the steps it is set for, and bad requests are refused with a clear error while the run goes on."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from wsclient import Client, is_error, is_event

from app.engine.steptrace import FAULT_KINDS
from app.engine.timing import REROUTE, STRAGGLER_FACTOR
from app.protocol import InjectFaultControl


@pytest.fixture(scope="module")
def srv(live_server_module):
    return live_server_module("--speed", "20", "--checkpoint-every", "5")


def run(coro):
    return asyncio.run(coro)


def in_window(event: dict[str, Any]) -> Any:
    d = event["detail"]
    return lambda m: m["type"] == "step" and d["start"] <= m["step"] < d["start"] + d["steps"]


async def inject(c: Client, kind: str, target: int, steps: int = 2) -> dict[str, Any]:
    await c.control("inject_fault", kind=kind, target=target, steps=steps)
    return await c.until(is_event("fault_injected"))


def has_event(kind: str) -> Any:
    """An event on its own or raised inside a step (a scheduled failure happens in one)."""
    return lambda m: (
        is_event(kind)(m) or (m["type"] == "step" and any(e["kind"] == kind for e in m["events"]))
    )


def event_of(msg: dict[str, Any], kind: str) -> dict[str, Any]:
    return msg if msg["type"] == "event" else next(e for e in msg["events"] if e["kind"] == kind)


def spans(step: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for s in step["trace"]["spans"] if s["kind"] == kind]


def test_the_control_names_the_engines_fault_kinds() -> None:
    kinds = InjectFaultControl.model_fields["kind"].annotation.__args__  # type: ignore[union-attr]
    assert tuple(kinds) == FAULT_KINDS


def test_a_straggler_is_slow_and_the_others_wait_for_it(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        await c.until("snapshot")
        ev = await inject(c, "straggler", 5)
        step = await c.until(in_window(ev))
        await c.close()
        return ev, step

    ev, step = run(go())
    assert ev["detail"] == {
        "kind": "straggler",
        "target": 5,
        "start": ev["step"] + 1,
        "steps": 2,
        "gpu": 5,
        "factor": STRAGGLER_FACTOR,
    }
    assert "GPU 6 runs" in ev["message"] and "slower" in ev["message"]  # id 5, from 1
    fwd = {tuple(s["lanes"] or []): s["dur"] for s in spans(step, "forward")}
    assert fwd[(5,)] == pytest.approx(STRAGGLER_FACTOR * fwd[(0, 1, 2, 3, 4, 6, 7)])
    waits = [s for s in spans(step, "wait") if s["lanes"] and 5 not in s["lanes"]]
    assert waits and waits[0]["lanes"] == [0, 1, 2, 3, 4, 6, 7]


def test_a_stalled_loader_keeps_every_gpu_waiting_for_its_batch(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        await c.until("snapshot")
        ev = await inject(c, "data_stall", 4)
        step = await c.until(in_window(ev))
        await c.close()
        return ev, step

    ev, step = run(go())
    assert ev["detail"]["ms"] == 4 and "stall 4 ms" in ev["message"]
    first = min(step["trace"]["spans"], key=lambda s: s["t0"])
    assert first["kind"] == "wait" and first["lanes"] is None
    assert first["dur"] == pytest.approx(0.004)


def test_a_cut_link_sends_the_ring_the_longer_way(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        hello = await c.until("hello")
        ev = await inject(c, "link", 1)
        step = await c.until(in_window(ev))
        await c.close()
        return hello, ev, step

    hello, ev, step = run(go())
    ring = hello["topology"]["ring"]
    hop = hello["topology"]["ring_links"][ring.index(1)]
    d = ev["detail"]
    assert (d["kind"], d["src"], d["dst"], d["link"]) == ("link", 1, hop["dst"], hop["kind"])
    assert d["via"] == REROUTE.get(hop["kind"], hop["kind"]) != hop["kind"]
    assert f"GPU 2 → GPU {hop['dst'] + 1}" in ev["message"]  # ids 1 and dst, from 1
    rings = [r for r in step["trace"]["rings"] if 1 in r["ring"]]
    assert rings and all(r["links"][r["ring"].index(1)] == d["via"] for r in rings)


def test_a_dead_gpu_rolls_the_run_back(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        await c.until("snapshot")
        ev = await inject(c, "dead", 6, steps=1)
        got = await c.until(has_event("gpu_failed"))
        failed = event_of(got, "gpu_failed")
        restored = event_of(got, "restored")
        after = got if got["type"] == "step" else await c.until("step")
        await c.close()
        return ev, failed, restored, after

    ev, failed, restored, after = run(go())
    assert ev["detail"]["gpu"] == 6 and "roll" in ev["message"]
    assert failed["detail"]["gpu"] == 6
    assert restored["detail"]["restored_step"] < ev["detail"]["start"]
    # The run goes on from the checkpoint: the first step after it redoes what was lost.
    assert after["step"] == restored["detail"]["restored_step"] + 1


BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"kind": "meteor", "target": 1}, "invalid_field", "kind"),
    ({"target": 1}, "missing_field", "kind"),
    ({"kind": "straggler"}, "missing_field", "target"),
    ({"kind": "straggler", "target": 8}, "bad_gpu", "between 0 and 7"),
    ({"kind": "link", "target": -1}, "out_of_range", "target"),
    ({"kind": "straggler", "target": "3"}, "invalid_field", "target"),
    ({"kind": "data_stall", "target": 0}, "bad_fault", "milliseconds"),
    ({"kind": "data_stall", "target": 5, "steps": 0}, "out_of_range", "steps"),
    ({"kind": "dead", "target": 1, "when": 3}, "unknown_field", "when"),
]


def test_bad_faults_are_refused_by_name_and_the_run_goes_on(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        await c.until("snapshot")
        got = []
        for body, _code, _word in BAD:
            await c.control("inject_fault", **body)
            got.append(await c.until("error"))
        before = await c.until("step")
        after = await c.until("step")
        await c.close()
        return got, before, after

    got, before, after = run(go())
    assert [g["code"] for g in got] == [code for _, code, _ in BAD]
    for g, (_, _, word) in zip(got, BAD, strict=True):
        assert word in g["message"], g
    assert after["seq"] > before["seq"]
    assert httpx.get(srv.url + "/api/health").json()["ok"]


def test_rest_injects_too_and_refuses_the_same_way(srv) -> None:
    url = srv.url + "/api/run/control"
    ok = httpx.post(url, json={"action": "inject_fault", "kind": "data_stall", "target": 2})
    bad = httpx.post(url, json={"action": "inject_fault", "kind": "straggler", "target": 99})
    assert ok.status_code == 200, ok.text
    (event,) = ok.json()["events"]
    assert event["kind"] == "fault_injected" and event["detail"]["steps"] == 3
    assert bad.status_code == 400 and bad.json()["code"] == "bad_gpu"


def test_lane_faults_need_a_data_parallel_plan(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        await c.until("snapshot")
        await c.control("reset", tp=2)
        await c.until(lambda m: m["type"] == "hello" and m["plan"]["tp"] == 2)
        await c.control("inject_fault", kind="straggler", target=1)
        err = await c.until(is_error("bad_fault"))
        await c.control("inject_fault", kind="dead", target=1, steps=1)
        dead = await c.until(is_event("fault_injected"))
        await c.control("reset", tp=1)
        await c.until(lambda m: m["type"] == "hello" and m["plan"]["tp"] == 1)
        step = await c.until("step")
        await c.close()
        return err, dead, step

    err, dead, step = run(go())
    assert "data-parallel" in err["message"] and "tp 2" in err["message"]
    assert dead["detail"]["gpu"] == 1
    assert step["type"] == "step"
