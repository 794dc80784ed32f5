"""The live stream against a real server: order, sync on reconnect, every control, bad input."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import httpx
import pytest
from wsclient import Client, is_error, is_event

from app.protocol import PROTOCOL_VERSION


@pytest.fixture(scope="module")
def srv(live_server_module):
    return live_server_module("--speed", "20", "--checkpoint-every", "10")


def run(coro):
    return asyncio.run(coro)


def test_hello_then_snapshot_then_steps_in_order(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        hello = await c.recv()
        snap = await c.recv()
        steps = [await c.until("step") for _ in range(5)]
        await c.close()
        return hello, snap, steps

    hello, snap, steps = run(go())
    assert (
        hello["type"] == "hello" and hello["protocol"] == PROTOCOL_VERSION and hello["can_control"]
    )
    assert len(hello["topology"]["gpus"]) == 8 and hello["config"]["gpus"] == 8
    assert hello["preset"]["name"] == "h100" and hello["n_params"] > 0
    assert snap["type"] == "snapshot" and snap["status"]["run_id"] == hello["run_id"]
    seqs = [s["seq"] for s in steps]
    assert seqs == sorted(seqs) and len(set(seqs)) == 5
    last_seen = snap["history"][-1]["seq"] if snap["history"] else 0
    assert seqs[0] > last_seen  # the stream picks up exactly after the snapshot
    assert all(len(s["memory"]) == 8 and s["ring"]["gpus"] == 8 for s in steps)


def test_late_joiner_snapshot_matches_the_live_state(srv) -> None:
    async def go():
        a = await Client.connect(srv.ws_url)
        await a.until("snapshot")
        last_a = await a.until("step")
        b = await Client.connect(srv.ws_url)
        await b.until("hello")
        snap = await b.until("snapshot")
        next_b = await b.until("step")
        await a.close()
        await b.close()
        return last_a, snap, next_b

    last_a, snap, next_b = run(go())
    hist = snap["history"]
    seqs = [p["seq"] for p in hist]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs)) and len(hist) <= 2000
    assert snap["last_step"]["seq"] == hist[-1]["seq"] >= last_a["seq"]
    assert snap["status"]["step"] == snap["last_step"]["step"]
    assert snap["status"]["loss"] == pytest.approx(snap["last_step"]["loss"])
    assert next_b["seq"] == hist[-1]["seq"] + 1  # nothing missed, nothing repeated


def test_every_control_is_applied_and_reported(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        await c.until("snapshot")
        out = {}
        await c.control("pause")
        out["paused"] = await c.until(is_event("paused"))
        out["run_paused"] = httpx.get(srv.url + "/api/run").json()
        await c.control("step")
        out["one_step"] = await c.until("step")
        await c.control("step")
        out["two_step"] = await c.until("step")
        await c.control("checkpoint_now")
        out["saved"] = await c.until(is_event("checkpoint_saved"))
        await c.control("speed", value="max")
        out["speed"] = await c.until(is_event("speed_changed"))
        await c.control("resume")
        out["resumed"] = await c.until(is_event("resumed"))
        out["after"] = await c.until("step")
        await c.control("fail_gpu", gpu=3)
        out["failed"] = await c.until(is_event("gpu_failed"))
        out["restored"] = await c.until(is_event("restored"))
        out["replaced"] = await c.until(is_event("gpu_replaced"))
        await c.control("speed", value=20)
        out["run"] = httpx.get(srv.url + "/api/run").json()
        await c.close()
        return out

    o = run(go())
    assert o["run_paused"]["state"] == "paused"
    assert o["two_step"]["step"] == o["one_step"]["step"] + 1
    assert o["saved"]["detail"]["reason"] == "on_demand"
    assert o["saved"]["detail"]["step"] == o["two_step"]["step"]
    assert o["speed"]["detail"]["speed"] == "max"
    assert o["failed"]["detail"]["gpu"] == 3 and o["replaced"]["detail"]["gpu"] == 3
    assert o["restored"]["detail"]["restored_step"] <= o["after"]["step"]
    assert o["run"]["restarts"] >= 1 and o["run"]["state"] == "running"
    ckpts = httpx.get(srv.url + "/api/checkpoints").json()
    assert any(c["step"] == o["two_step"]["step"] for c in ckpts)


BAD_INPUTS: list[tuple[object, str]] = [
    ("not json at all", "invalid_json"),
    ("{", "invalid_json"),
    ("[1, 2, 3]", "not_an_object"),
    ('"a string"', "not_an_object"),
    ("42", "not_an_object"),
    ("null", "not_an_object"),
    ({}, "missing_type"),
    ({"type": "hello"}, "unknown_type"),
    ({"type": 7}, "unknown_type"),
    ({"type": "control"}, "missing_action"),
    ({"type": "control", "action": "explode"}, "unknown_action"),
    ({"type": "control", "action": 5}, "unknown_action"),
    ({"type": "control", "action": "speed"}, "missing_field"),
    ({"type": "control", "action": "speed", "value": 0.01}, "out_of_range"),
    ({"type": "control", "action": "speed", "value": 5000}, "out_of_range"),
    ({"type": "control", "action": "speed", "value": "warp"}, "invalid_field"),
    ({"type": "control", "action": "fail_gpu"}, "missing_field"),
    ({"type": "control", "action": "fail_gpu", "gpu": -1}, "out_of_range"),
    ({"type": "control", "action": "fail_gpu", "gpu": 8}, "bad_gpu"),
    ({"type": "control", "action": "fail_gpu", "gpu": "three"}, "invalid_field"),
    ({"type": "control", "action": "reset", "seed": -5}, "out_of_range"),
    ({"type": "control", "action": "reset", "preset": "tpu9000"}, "bad_preset"),
    ({"type": "control", "action": "pause", "colour": "red"}, "unknown_field"),
    ({"type": "control", "action": "step"}, "not_paused"),
    ("x" * (64 * 1024 + 1), "too_large"),
    (b"\x00\x01binary", "binary_frame"),
]


def test_bad_input_gets_an_error_naming_it_and_the_run_goes_on(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        await c.until("snapshot")
        got = []
        for i, (payload, _code) in enumerate(BAD_INPUTS):
            if i and i % 15 == 0:
                await asyncio.sleep(1.6)  # stay inside the message budget (burst 20, 10/s)
            await c.send(payload)
            got.append(await c.until("error"))
        before = await c.until("step")
        after = await c.until("step")
        await c.close()
        return got, before, after

    got, before, after = run(go())
    assert len(BAD_INPUTS) >= 20
    assert [g["code"] for g in got] == [code for _, code in BAD_INPUTS]
    assert all(g["message"] for g in got)
    assert "gpu" in got[17]["message"] and "value" in got[13]["message"]
    assert after["seq"] > before["seq"]
    assert httpx.get(srv.url + "/api/run").json()["state"] == "running"


def test_control_flood_is_rate_limited(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        await c.until("snapshot")
        for _ in range(40):
            await c.send(json.dumps({"type": "control", "action": "speed", "value": 20}))
        err = await c.until(is_error("rate_limited"))
        step = await c.until("step")
        await c.close()
        return err, step

    err, step = run(go())
    assert err["code"] == "rate_limited" and step["type"] == "step"


async def _latencies(c: Client, seconds: float) -> list[tuple[float, int]]:
    got: list[tuple[float, int]] = []
    end = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < end:
        m = await c.recv()
        if m["type"] == "step":
            got.append((time.time() - m["sent_at"], m["seq"]))
    return got


def test_a_client_that_stops_reading_does_not_delay_others(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        await c.until("snapshot")
        await c.control("speed", value="max")
        alone = await _latencies(c, 3.0)  # this machine's own pace, as a yardstick
        # A tiny receive buffer, never read: the server's sends to it block within seconds.
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", srv.port))
        stalled = await Client.connect(srv.ws_url, sock=sock, max_queue=1)
        await asyncio.sleep(3.0)  # let the stalled socket fill up (c's frames queue meanwhile)
        await _latencies(c, 0.5)
        beside = await _latencies(c, 5.0)
        await c.control("speed", value=20)
        await c.close()
        stalled.ws.transport.abort()
        return alone, beside

    alone, beside = run(go())
    seqs = [s for _, s in beside]
    made = seqs[-1] - seqs[0] + 1  # steps the trainer finished meanwhile
    assert seqs == sorted(seqs)
    # Every step, or 20 frames/s when faster, give or take what a busy machine's scheduler
    # takes: a stream blocked behind the stalled client would bring next to none.
    assert len(beside) >= 0.6 * min(made, 5.0 * 20)

    def median(xs: list[tuple[float, int]]) -> float:
        return sorted(x for x, _ in xs)[len(xs) // 2]

    assert median(beside) < median(alone) + 0.5  # no slower than without the stalled client
