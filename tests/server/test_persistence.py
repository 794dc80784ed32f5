"""Restarting the server resumes the run with its whole history; a crash redoes steps openly."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing

import httpx
from wsclient import Client, is_event

ARGS = ("--speed", "max", "--checkpoint-every", "5")


def snapshot_and_steps(url: str, n: int) -> tuple[dict, dict, list[dict]]:
    async def go():
        c = await Client.connect(url)
        hello = await c.until("hello")
        snap = await c.until("snapshot")
        steps = [await c.until("step") for _ in range(n)]
        await c.close()
        return hello, snap, steps

    return asyncio.run(go())


def db_seqs(run_dir) -> list[tuple[int, str, int]]:
    # Closed on leaving (a `with` alone only commits): an open reader would keep the next
    # server from taking the record.
    with closing(sqlite3.connect(run_dir / "runs.sqlite")) as db:
        return list(db.execute("SELECT seq, run_id, step FROM steps ORDER BY seq"))


def test_clean_restart_resumes_with_history(live_server, tmp_path) -> None:
    run_dir = tmp_path / "run"
    first = live_server(*ARGS, run_dir=run_dir)
    hello1, _, steps1 = snapshot_and_steps(first.ws_url, 8)
    assert first.stop() == 0
    rows1 = db_seqs(run_dir)
    last_step = rows1[-1][2]
    assert last_step >= steps1[-1]["step"]

    second = live_server(*ARGS, run_dir=run_dir)
    hello2, snap, steps2 = snapshot_and_steps(second.ws_url, 3)
    assert hello2["run_id"] == hello1["run_id"]
    hist = snap["history"]
    assert [p["seq"] for p in hist[: len(rows1)]] == [r[0] for r in rows1]
    # The final checkpoint means nothing is redone: the next step follows the last one.
    first_new = min(steps2, key=lambda s: s["seq"])
    assert first_new["seq"] > rows1[-1][0]
    restored = [e for e in snap["events"] if e["kind"] == "restored"]
    assert restored and restored[-1]["detail"]["steps_lost"] == 0
    second.stop()
    seqs = [r[0] for r in db_seqs(run_dir)]
    assert seqs == sorted(set(seqs))  # nothing duplicated


def test_crash_restart_redoes_steps_after_a_restored_event(live_server, tmp_path) -> None:
    run_dir = tmp_path / "run"
    # No periodic checkpoint before the kill, so the crash always loses recorded steps
    # (with one every few steps the kill could land right after a save and lose nothing).
    args = ("--speed", "max", "--checkpoint-every", "100000")
    first = live_server(*args, run_dir=run_dir)
    snapshot_and_steps(first.ws_url, 12)
    first.kill()
    rows1 = db_seqs(run_dir)
    second = live_server(*args, run_dir=run_dir)
    _, snap, steps2 = snapshot_and_steps(second.ws_url, 2)
    restored = [e for e in snap["events"] if e["kind"] == "restored"][-1]
    d = restored["detail"]
    assert d["failed_step"] == rows1[-1][2]
    assert d["reason"] == "crash" and d["restored_step"] == 0
    assert d["steps_lost"] == d["failed_step"] - d["restored_step"] > 0
    assert min(s["seq"] for s in steps2) > rows1[-1][0]
    second.stop()
    seqs = [r[0] for r in db_seqs(run_dir)]
    assert seqs == sorted(set(seqs))


def test_reset_starts_a_new_run_and_keeps_the_old_history(live_server, tmp_path) -> None:
    srv = live_server("--speed", "20", run_dir=tmp_path / "run")

    async def go():
        c = await Client.connect(srv.ws_url)
        hello = await c.until("hello")
        await c.until("step")
        await c.control("reset", seed=7, preset="a100")
        ev = await c.until(is_event("run_reset"), timeout=60)
        hello2 = await c.until("hello")
        snap2 = await c.until("snapshot")
        step = await c.until("step")
        await c.close()
        return hello, ev, hello2, snap2, step

    hello, ev, hello2, snap2, step = asyncio.run(go())
    assert hello2["run_id"] != hello["run_id"] == ev["detail"]["previous_run_id"]
    assert hello2["config"]["seed"] == 7 and hello2["preset"]["name"] == "a100"
    assert snap2["status"]["run_id"] == hello2["run_id"]
    assert all(p["seq"] < step["seq"] for p in snap2["history"])
    assert httpx.get(srv.url + "/api/run").json()["run_id"] == hello2["run_id"]
    # The server holds runs.sqlite while it runs: ask it. The old run's steps are on record.
    old = httpx.get(srv.url + "/api/steps", params={"run_id": hello["run_id"]}).json()
    assert old["run_id"] == hello["run_id"] and old["recorded"] > 0
