"""Fault injection: kill the server, its worker, or both, at random (seeded) moments, again
and again on one run folder, then check what the run kept.

After every round and at the end:
- the history's seq numbers run 1, 2, 3 ... with no gap and no repeat;
- within the run, each step follows the one before, except where a `restored` event says the
  run went back to a checkpoint (after a kill, always labelled a crash with the steps to redo);
- every checkpoint on disk verifies, and none is a half-written leftover;
- the run ends with the very weights of a run that was never interrupted (the data order and
  the maths are deterministic, so a crash only costs time).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from app.engine.checkpoint import CheckpointStore
from app.engine.config import RunConfig
from app.engine.trainer import Trainer

SEED = 20261130
ROUNDS = 6
ARGS = ("--gpus", "4", "--servers", "2", "--speed", "max", "--checkpoint-every", "5")
FAULTS = ("server", "worker", "both")
ROOT = Path(__file__).resolve().parents[2]


def health(url: str) -> dict:
    return httpx.get(url + "/api/health", timeout=5).json()


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def recorded(run_dir: Path) -> tuple[list[tuple[int, str, int]], list[tuple[str, int, dict]]]:
    # Closed on leaving (a `with` alone only commits): an open reader would keep the next
    # server from taking the record.
    with closing(sqlite3.connect(run_dir / "runs.sqlite")) as db:
        steps = list(db.execute("SELECT seq, run_id, step FROM steps ORDER BY seq"))
        events = [
            (k, s, json.loads(d))
            for k, s, d in db.execute(
                "SELECT kind, step, detail FROM events WHERE kind = 'restored' ORDER BY id"
            )
        ]
    return steps, events


def check_history(run_dir: Path) -> int:
    """The invariants of the record; returns the last recorded step."""
    steps, restored = recorded(run_dir)
    assert steps, "nothing was recorded"
    assert [s[0] for s in steps] == list(range(steps[0][0], steps[0][0] + len(steps)))
    assert len({s[1] for s in steps}) == 1, "one run throughout"
    # Every place the step number does not simply go on is a restore the record announces.
    announced = [(d["failed_step"], d["restored_step"]) for _, _, d in restored]
    jumps = []
    prev = None
    for _, _, step in steps:
        if prev is not None and step != prev + 1:
            jumps.append((prev, step - 1))
        prev = step
    for failed, restored_step in jumps:
        assert (failed, restored_step) in announced, (failed, restored_step, announced)
        assert restored_step % 5 == 0, "the run only goes back to a checkpoint"
    for _, _, d in restored:
        # After a kill -9 nothing was saved at the end: the restart says what is redone.
        if d["reason"] == "resume":
            assert d["steps_lost"] == 0
        else:
            assert (
                d["reason"] == "crash" and d["steps_lost"] == d["failed_step"] - d["restored_step"]
            )
    return steps[-1][2]


def check_checkpoints(run_dir: Path) -> list[int]:
    root = run_dir / "checkpoints"
    store = CheckpointStore(root, keep=3)
    listing = store.listing()
    assert all(c["ok"] for c in listing), listing
    return [c["step"] for c in listing]


def kill(srv, fault: str, rng: random.Random) -> None:
    pid = health(srv.url)["worker_pid"]
    if fault == "worker":
        os.kill(pid, signal.SIGKILL)
        # The runner restarts it from the last checkpoint; health says when it is back.
        wait_for(lambda: not health(srv.url)["ok"] or health(srv.url)["worker_pid"] != pid,
                 10, "the server to notice its worker died")  # fmt: skip
        wait_for(lambda: health(srv.url)["ok"], 60, "the worker to be restarted")
        step = health(srv.url)["step"]
        wait_for(lambda: health(srv.url)["step"] > step, 30, "steps after the restart")
        time.sleep(rng.uniform(0.0, 1.0))
        fault = "both"  # end the round with the server gone too
        pid = health(srv.url)["worker_pid"]
    if fault == "server":
        os.kill(srv.proc.pid, signal.SIGKILL)
        srv.proc.wait(10)
    else:
        srv.kill()
    wait_for(lambda: not alive(pid), 3, "the worker to die with its server")


def test_random_kills_lose_nothing_and_end_on_the_same_weights(live_server, tmp_path) -> None:
    rng = random.Random(SEED)
    run_dir = tmp_path / "run"
    last = 0
    for i in range(ROUNDS):
        srv = live_server(*ARGS, run_dir=run_dir)
        wait_for(
            lambda srv=srv, last=last: health(srv.url)["step"] > last + 2, 60, f"round {i} to train"
        )
        time.sleep(rng.uniform(0.0, 1.5))
        kill(srv, FAULTS[rng.randrange(len(FAULTS))], rng)
        last = check_history(run_dir)
        check_checkpoints(run_dir)
    # A last server finishes cleanly: a final checkpoint at the last step, nothing to redo.
    srv = live_server(*ARGS, run_dir=run_dir)
    wait_for(lambda: health(srv.url)["step"] > last + 2, 60, "the last round to train")
    assert srv.stop() == 0
    final = check_history(run_dir)
    steps = check_checkpoints(run_dir)
    assert max(steps) == final, "a clean stop saves the last step"
    assert not list((run_dir / "checkpoints").glob(".tmp-*"))

    # The same run, never interrupted, ends on the same weights.
    config = RunConfig(gpus=4, servers=2, checkpoint_every=5)
    resumed = Trainer(config, run_dir)
    try:
        assert resumed.step == final
        crashed = resumed.params_sha256()
    finally:
        resumed.close(final_checkpoint=False)
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "train", "--json", "--gpus", "4", "--servers", "2",
         "--checkpoint-every", "5", "--steps", str(final), "--run-dir", str(tmp_path / "straight")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    straight = json.loads(proc.stdout.splitlines()[-1])
    assert straight["steps"] == final and straight["params_sha256"] == crashed
