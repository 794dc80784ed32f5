"""A client that floods controls without reading keeps its connection: the messages over the
rate are answered with one `rate_limited` error a second at most, each counting the messages
refused since the last, and the stream goes on."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from wsclient import Client, is_error, is_event

pytestmark = pytest.mark.timeout(120)

AT_ONCE = 5000
FLOOD = 7000
BURSTS = 20
BURST = 20  # the default bucket: 10 a second, bursts of 20
RATE = 10.0


def refused(error: dict) -> int:
    """How many messages one rate_limited error answers (one, where it does not say)."""
    return error.get("dropped") or 1


def test_a_control_flood_is_answered_once_a_second_and_the_connection_goes_on(
    live_server,
) -> None:
    srv = live_server("--checkpoint-every", "0")
    speed = json.dumps({"type": "control", "action": "speed", "value": 10})

    async def go():
        c = await Client.connect(srv.ws_url)
        await c.until("snapshot")
        start = time.monotonic()
        # As fast as the socket takes them, reading nothing: at once, then in bursts for
        # two seconds more.
        for _ in range(AT_ONCE):
            await c.ws.send(speed)
        for _ in range(BURSTS):
            for _ in range((FLOOD - AT_ONCE) // BURSTS):
                await c.ws.send(speed)
            await asyncio.sleep(0.1)
        sent = time.monotonic()
        # Each control let through is applied and told as a speed_changed event; each one
        # refused is counted in a rate_limited error: together they account for every one.
        limited: list[dict] = []
        applied = 0
        while applied + sum(refused(m) for m in limited) < FLOOD:
            m = await c.until(lambda m: m["type"] in ("error", "event"), timeout=15)
            if is_error("rate_limited")(m):
                limited.append(m)
            elif is_event("speed_changed")(m):
                applied += 1
            elif m["type"] == "error":
                raise AssertionError(f"unexpected error during the flood: {m}")
        told = time.monotonic()
        step = await c.until("step")
        await c.control("pause")  # the connection still carries controls both ways
        paused = await c.until(is_event("paused"))
        await c.close()
        return limited, applied, start, sent, told, step, paused

    limited, applied, start, sent, told, step, paused = asyncio.run(go())
    took = told - start
    assert sum(refused(m) for m in limited) + applied == FLOOD
    # The burst and the rate while the flood lasted went through, nothing more.
    assert BURST <= applied <= BURST + RATE * (sent - start) + 2, (applied, sent - start)
    # One error at once, then at most one a second, however many messages came.
    assert sent - start > 1.5
    assert 3 <= len(limited) <= 2 + took, (len(limited), took)
    assert limited[0]["dropped"] == 1 and all(m["dropped"] >= 1 for m in limited)
    assert all(m["message"] for m in limited)
    assert step["type"] == "step" and paused["kind"] == "paused"
    log = srv.log()
    assert "Traceback" not in log, log[-3000:]
