"""A damaged run record never keeps the server from starting: it is set aside, renamed with
the reason and never deleted, and the run resumes from its newest good checkpoint, bit-exact,
with a fresh record; health, viewers and the record itself say what happened."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest
from wsclient import Client

# Checkpoints every 5 steps; slow enough that the kill lands where the test wants it.
ARGS = ("--speed", "20", "--checkpoint-every", "5")


def health(url: str) -> dict:
    return httpx.get(url + "/api/health", timeout=5).json()


def checkpoint_steps(run_dir: Path) -> list[int]:
    root = run_dir / "checkpoints"
    return sorted(int(p.name[5:]) for p in root.glob("step-*") if (p / "manifest.json").is_file())


@pytest.fixture(scope="module")
def trained(live_server_module, tmp_path_factory) -> tuple[Path, str, int, float]:
    """A real run killed two steps after a checkpoint: (its run dir, run id, the newest
    checkpoint's step S, the loss the run recorded for step S + 1)."""
    srv = live_server_module(*ARGS)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        h = health(srv.url)
        if h["step"] >= 12 and h["step"] % 5 == 2:
            break
        time.sleep(0.01)
    else:
        pytest.fail("the run never reached a step two past a checkpoint")
    run_id = h["run_id"]
    srv.kill()  # a crash: nothing is tidied up, the record keeps its -wal file
    run_dir = srv.run_dir
    s = checkpoint_steps(run_dir)[-1]
    # Read a copy, so the record under test is exactly as the crash left it.
    probe = tmp_path_factory.mktemp("probe")
    for f in run_dir.glob("runs.sqlite*"):
        shutil.copy(f, probe / f.name)
    with closing(sqlite3.connect(probe / "runs.sqlite")) as db:
        rows = dict(db.execute("SELECT step, loss FROM steps WHERE run_id = ?", (run_id,)))
    assert s + 1 in rows, f"the run recorded no step after its checkpoint at {s}: {sorted(rows)}"
    return run_dir, run_id, s, rows[s + 1]


def damage(record: Path, how: str) -> None:
    if how != "directory":
        # Fold the WAL in first, so the damage lands on the record's real pages.
        with closing(sqlite3.connect(record)) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for side in ("-wal", "-shm"):
            Path(f"{record}{side}").unlink(missing_ok=True)
    size = record.stat().st_size if record.is_file() else 0
    if how == "header":
        with record.open("r+b") as f:
            f.write(os.urandom(100))
    elif how == "middle":
        assert size >= 8 * 4096, size
        with record.open("r+b") as f:
            f.seek((size // 2) // 4096 * 4096)
            f.write(os.urandom(3 * 4096))
    elif how == "truncated":
        assert size > 4096, size
        os.truncate(record, 4096)
    else:
        record.unlink()
        record.mkdir()


REASONS = {
    "header": "not-a-database",
    "middle": "malformed",
    "truncated": "malformed",
    "directory": "cannot-open",
}


@pytest.mark.parametrize("how", list(REASONS))
def test_a_damaged_record_is_set_aside_and_the_run_resumes_from_its_checkpoint(
    how, trained, live_server, tmp_path
) -> None:
    src, run_id, s, loss_after = trained
    run_dir = tmp_path / "run"
    shutil.copytree(src, run_dir)
    record = run_dir / "runs.sqlite"
    had_wal = Path(f"{record}-wal").exists()
    damage(record, how)

    srv = live_server(*ARGS, run_dir=run_dir)  # fails here if the server does not start
    h = health(srv.url)
    reason = REASONS[how]
    [aside] = [p for p in run_dir.iterdir() if p.name.startswith("runs.sqlite.")
               and p.name.endswith(f"-{reason}")]  # fmt: skip
    assert h["notice"] and aside.name in h["notice"], h
    assert h["ok"], h
    assert h["run_id"] == run_id  # the checkpoint's run, not a new one
    if how == "directory":
        assert aside.is_dir()
        if had_wal:  # its WAL went with it: a fresh record must never replay it
            assert Path(f"{aside}-wal").is_file()

    async def joined() -> list[dict]:
        c = await Client.connect(srv.ws_url)
        try:
            hello = await c.until("hello")
            snap = await c.until("snapshot")
            assert hello["run_id"] == run_id
            return [e for e in snap["events"] if e["kind"] == "record_set_aside"]
        finally:
            await c.close()

    [told] = asyncio.run(joined())
    assert told["detail"]["moved_to"] == aside.name and told["detail"]["reason"] == reason

    # The fresh record starts at the step after the checkpoint, with the very same loss.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        page = httpx.get(srv.url + "/api/steps", params={"limit": 5}, timeout=5).json()
        if page["steps"]:
            break
        time.sleep(0.05)
    first = page["steps"][0]
    assert first["step"] == s + 1, (first, s)
    assert first["loss"] == loss_after
    assert srv.stop() == 0
