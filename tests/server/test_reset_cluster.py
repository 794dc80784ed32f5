"""A new run on a different cluster: `reset` with `gpus` and `servers` over a real websocket.

The new hello carries the new topology and the steps that follow are trained on it; a
combination the server could not start with is refused with `bad_config` naming the rule,
and the old run goes on untouched.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from wsclient import Client, is_event

from app.engine.config import RunConfig
from app.protocol import ResetControl, control_adapter
from app.run.controls import ControlError, new_cluster
from app.settings import Settings


@pytest.fixture(scope="module")
def srv(live_server_module):
    return live_server_module("--speed", "20", "--checkpoint-every", "10")


def run(coro):
    return asyncio.run(coro)


def test_reset_to_16_gpus_on_2_servers_rebuilds_the_cluster(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        first = await c.until("hello")
        await c.until("snapshot")
        await c.until("step")
        await c.control("reset", gpus=16, servers=2, seed=3)
        event = await c.until(is_event("run_reset"))
        hello = await c.until("hello")
        snap = await c.until("snapshot")
        steps = [await c.until("step") for _ in range(3)]
        await c.close()
        return first, event, hello, snap, steps

    first, event, hello, snap, steps = run(go())
    assert len(first["topology"]["gpus"]) == 8
    assert event["detail"]["previous_run_id"] == first["run_id"]
    assert hello["run_id"] == event["detail"]["run_id"] != first["run_id"]
    assert hello["config"]["gpus"] == 16 and hello["config"]["servers"] == 2
    assert hello["config"]["seed"] == 3
    assert len(hello["topology"]["gpus"]) == 16 and len(hello["topology"]["servers"]) == 2
    # The batch still shares out evenly (128 over 16 GPUs: the same batch as before).
    assert hello["config"]["batch_size"] == first["config"]["batch_size"] == 128
    assert snap["status"]["run_id"] == hello["run_id"] and snap["status"]["step"] == 0
    assert [s["step"] for s in steps][0] == 1
    assert all(len(s["gpu_losses"]) == 16 and s["ring"]["gpus"] == 16 for s in steps)
    assert httpx.get(srv.url + "/api/run").json()["run_id"] == hello["run_id"]


BAD_CLUSTERS: list[tuple[dict[str, object], str, str]] = [
    ({"gpus": 12, "servers": 5}, "bad_config", "divide evenly"),
    ({"gpus": 4, "servers": 8}, "bad_config", "cannot outnumber"),
    ({"servers": 3}, "bad_config", "divide evenly"),  # 16 GPUs (or 8) over 3 servers
    ({"gpus": 0}, "out_of_range", "gpus"),
    ({"gpus": 4097}, "out_of_range", "gpus"),
    ({"servers": 0}, "out_of_range", "servers"),
    ({"gpus": "16"}, "invalid_field", "gpus"),
    ({"gpus": 16.0}, "invalid_field", "gpus"),
    ({"gpus": True}, "invalid_field", "gpus"),
]


def test_bad_clusters_are_refused_naming_the_rule_and_the_run_goes_on(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        hello = await c.until("hello")
        await c.until("snapshot")
        got = []
        for fields, _code, _word in BAD_CLUSTERS:
            await c.control("reset", **fields)
            got.append(await c.until("error"))
        before = await c.until("step")
        after = await c.until("step")
        await c.close()
        return hello, got, before, after

    hello, got, before, after = run(go())
    for (fields, code, word), err in zip(BAD_CLUSTERS, got, strict=True):
        assert err["code"] == code, (fields, err)
        assert word in err["message"], (fields, err)
    assert after["seq"] > before["seq"]
    status = httpx.get(srv.url + "/api/run").json()
    assert status["run_id"] == hello["run_id"] and status["state"] == "running"
    assert len(after["gpu_losses"]) == len(hello["topology"]["gpus"])


def test_the_new_cluster_keeps_or_recomputes_the_batch() -> None:
    base = RunConfig(gpus=8, servers=2, batch_size=128)
    assert new_cluster(base, 16, 2) == {"gpus": 16, "servers": 2, "batch_size": 128}
    assert new_cluster(base, 4, None) == {"gpus": 4, "servers": 2, "batch_size": 128}
    # 128 does not share out over 3 GPUs: the default batch for 3, rounded up to a multiple.
    assert new_cluster(base, 3, 1) == {"gpus": 3, "servers": 1, "batch_size": 129}
    assert new_cluster(base, 512, 64)["batch_size"] == 512  # one sequence per GPU at least
    with pytest.raises(ControlError) as err:
        new_cluster(base, 10, 4)
    assert err.value.code == "bad_config" and "10 % 4" in err.value.message


def test_the_gpu_cap_is_the_servers_own() -> None:
    """A reset may ask for exactly what the server itself could be started with."""

    def bound(model: type, name: str, kind: str) -> int:
        meta = model.model_fields[name].metadata
        return next(getattr(m, kind) for m in meta if getattr(m, kind, None) is not None)

    for name in ("gpus", "servers"):
        assert bound(ResetControl, name, "le") == bound(Settings, name, "le")
        assert bound(ResetControl, name, "ge") == bound(Settings, name, "ge") == 1
    top = bound(Settings, "gpus", "le")
    control_adapter.validate_python({"type": "control", "action": "reset", "gpus": top})
