"""Kill the real thing: the worker dies and health says so until it is back; the server dies
and its worker goes with it, so a restart redoes the lost steps openly, with no gap."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import httpx
from wsclient import Client

HEALTH_POLL_S = 0.05


def health(url: str) -> dict:
    return httpx.get(url + "/api/health", timeout=5).json()


def gone(pid: int) -> bool:
    """Not running: no such process, or a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_health_is_not_ok_while_the_worker_is_down(live_server, tmp_path: Path) -> None:
    srv = live_server("--speed", "20", run_dir=tmp_path / "run")
    before = health(srv.url)
    assert before["ok"] is True and before["problem"] is None
    pid = before["worker_pid"]
    assert isinstance(pid, int) and pid != srv.proc.pid
    os.kill(pid, signal.SIGKILL)
    bad = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        h = health(srv.url)
        if not h["ok"]:
            bad = h
            break
        time.sleep(HEALTH_POLL_S)
    assert bad is not None, "health stayed ok with the worker killed"
    assert "killed by SIGKILL" in bad["problem"] and "\n" not in bad["problem"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not health(srv.url)["ok"]:
        time.sleep(0.2)
    after = health(srv.url)
    assert after["ok"] is True and after["problem"] is None
    assert after["worker_pid"] not in (None, pid)


def steps_seen(url: str, until_step) -> dict:
    """Watch the stream until a step satisfies `until_step`; that step."""

    async def go() -> dict:
        c = await Client.connect(url)
        try:
            return await c.until(lambda m: m["type"] == "step" and until_step(m), timeout=60)
        finally:
            await c.close()

    return asyncio.run(go())


def test_the_worker_dies_with_the_server(live_server, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    # Long steps (about 0.3 s) back to back, a checkpoint every 4: the kill comes just after
    # step 4k+3 is shown, early in step 4k+4. A worker left running would finish that step
    # and save its checkpoint before it noticed, and the restart would resume there, past the
    # record, as if nothing had been lost.
    args = ("--speed", "max", "--batch-size", "1024", "--checkpoint-every", "4")
    first = live_server(*args, run_dir=run_dir)
    worker = health(first.url)["worker_pid"]
    step = steps_seen(first.ws_url, lambda m: m["step"] >= 7 and m["step"] % 4 == 3)
    os.kill(first.proc.pid, signal.SIGKILL)  # the server only, not its process group
    first.proc.wait(10)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and not gone(worker):
        time.sleep(0.02)
    assert gone(worker), "the worker outlived its server"
    time.sleep(1.0)  # a worker still running would have finished its step by now

    second = live_server(*args, run_dir=run_dir)

    async def restored() -> dict:
        c = await Client.connect(second.ws_url)
        try:
            snap = await c.until("snapshot")
            return [e for e in snap["events"] if e["kind"] == "restored"][-1]
        finally:
            await c.close()

    ev = asyncio.run(restored())
    assert ev["detail"]["reason"] == "crash", ev
    assert ev["detail"]["failed_step"] == step["step"]
    assert ev["detail"]["restored_step"] < step["step"]
    steps_seen(second.ws_url, lambda m: m["step"] > step["step"] + 1)
    second.stop()
    # Closed on leaving (a `with` alone only commits): an open reader would keep the next
    # server from taking the record.
    with closing(sqlite3.connect(run_dir / "runs.sqlite")) as db:
        rows = list(db.execute("SELECT seq, step FROM steps ORDER BY seq"))
    seqs = [s for s, _ in rows]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # no gap, no duplicate
    # Step numbers only go forward one at a time, or back to a checkpoint after the crash.
    for (_, a), (_, b) in zip(rows, rows[1:], strict=False):
        assert b == a + 1 or b <= a, (a, b)
