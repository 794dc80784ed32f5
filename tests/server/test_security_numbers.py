"""Numbers from clients are finite and of the right kind: NaN, Infinity and 1e400 are refused
with a clear 422 or error frame (never a 500), true is not 1, and the labs' inputs stay in
ranges where every figure they answer with is a finite number."""

from __future__ import annotations

import asyncio
import json
import math

import httpx
import pytest
from wsclient import Client

NON_FINITE = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400")


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def srv(live_server_module):
    return live_server_module()


def _post_text(srv, path: str, text: str) -> httpx.Response:
    return httpx.post(
        srv.url + path, content=text, headers={"Content-Type": "application/json"}, timeout=60
    )


def _status(srv) -> dict:
    return httpx.get(srv.url + "/api/run", timeout=10).json()


def test_rest_control_refuses_non_finite_and_loose_values(srv) -> None:
    before = _status(srv)
    for number in NON_FINITE:
        r = _post_text(srv, "/api/run/control", f'{{"action":"speed","value":{number}}}')
        assert r.status_code == 422, (number, r.status_code, r.text[:300])
        assert all("value" in d["loc"] for d in r.json()["detail"]), r.text[:300]
        assert "finite" in r.text
    r = _post_text(srv, "/api/run/control", '{"action":"fail_gpu","gpu":1e400}')
    assert r.status_code == 422
    for body in (
        {"action": "speed", "value": True},
        {"action": "speed", "value": "5"},
        {"action": "reset", "seed": True},
        {"action": "reset", "seed": 1.5},
        {"action": "reset", "seed": "7"},
        {"action": "fail_gpu", "gpu": True},
        {"action": "fail_gpu", "gpu": "1"},
    ):
        r = httpx.post(srv.url + "/api/run/control", json=body, timeout=60)
        assert r.status_code == 422, (body, r.status_code, r.text[:300])
    after = _status(srv)
    assert after["run_id"] == before["run_id"] and after["speed"] == before["speed"]
    # Whole numbers are still numbers of steps per second.
    r = httpx.post(srv.url + "/api/run/control", json={"action": "speed", "value": 5}, timeout=60)
    assert r.status_code == 200 and r.json()["status"]["speed"] == 5


def test_websocket_control_refuses_non_finite_and_loose_values(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        hello = await c.recv()
        await c.until("snapshot")
        errors = []
        texts = [f'{{"type":"control","action":"speed","value":{n}}}' for n in NON_FINITE]
        texts += [
            '{"type":"control","action":"reset","seed":1e999}',
            '{"type":"control","action":"speed","value":' + "9" * 400 + "}",
        ]
        for obj in (
            {"type": "control", "action": "speed", "value": True},
            {"type": "control", "action": "reset", "seed": True},
            {"type": "control", "action": "reset", "seed": 2.0},
            {"type": "control", "action": "fail_gpu", "gpu": False},
        ):
            texts.append(json.dumps(obj))
        for text in texts:
            await c.send(text)
            errors.append((text, await c.until("error")))
        await c.close()
        return hello, errors

    hello, errors = run(go())
    for text, err in errors:
        assert err["code"] in ("out_of_range", "invalid_field"), (text, err)
        assert len(err["message"]) < 300
    status = _status(srv)
    assert status["run_id"] == hello["run_id"]  # no reset went through
    assert status["speed"] != 1  # `true` did not become one step a second


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/labs/memory", {"params": "1e308"}),
        ("/api/labs/memory", {"params": "1e17"}),
        ("/api/labs/memory", {"params": "nan"}),
        ("/api/labs/memory", {"params": "inf"}),
        ("/api/labs/cost", {"params": "1e308", "tokens": "1e308"}),
        ("/api/labs/cost", {"tokens": "1e17", "params": "70B"}),
        ("/api/labs/cost", {"utilisation": "nan"}),
        ("/api/labs/cost", {"utilisation": "1e-300"}),
        ("/api/labs/cost", {"peak_tflops": "1e-300"}),
        ("/api/labs/cost", {"peak_tflops": "inf"}),
        ("/api/labs/cost", {"power_w": "1e308"}),
        ("/api/labs/cost", {"price_per_gpu_hour": "1e308"}),
        ("/api/labs/cost", {"kwh_price": "1e308"}),
        ("/api/labs/cost", {"pue": "nan"}),
    ],
)
def test_lab_inputs_out_of_range_are_422(srv, path: str, params: dict) -> None:
    r = httpx.get(srv.url + path, params=params, timeout=10)
    assert r.status_code == 422, (params, r.status_code, r.text[:300])
    field = next(iter(params))
    assert any(d["loc"][-1] == field for d in r.json()["detail"]), r.text[:300]


def test_lab_limits_are_stated_and_the_largest_inputs_give_finite_figures(srv) -> None:
    r = httpx.get(srv.url + "/api/labs/memory", params={"params": "1e17"}, timeout=10)
    assert "1e+16" in r.text or "10,000T" in r.text or "1e16" in r.text, r.text[:300]
    worst = {
        "params": "1e16",
        "tokens": "1e16",
        "gpus": 1,
        "utilisation": 0.001,
        "peak_tflops": 0.001,
        "power_w": 1e6,
        "pue": 5,
        "price_per_gpu_hour": 1e6,
        "kwh_price": 1e3,
    }
    r = httpx.post(srv.url + "/api/labs/cost", json=worst, timeout=10)
    assert r.status_code == 200, r.text[:300]
    figures = {k: v for k, v in r.json().items() if isinstance(v, int | float)}
    assert figures and all(math.isfinite(v) for v in figures.values()), figures
    r = httpx.post(srv.url + "/api/labs/memory", json={"params": 1e16}, timeout=10)
    assert r.status_code == 200
    assert all(math.isfinite(v) for v in r.json().values() if isinstance(v, int | float))
    r = _post_text(srv, "/api/labs/cost", '{"params": NaN}')
    assert r.status_code == 422
    r = httpx.post(srv.url + "/api/labs/cost", json={"gpus": True}, timeout=10)
    assert r.status_code == 422
