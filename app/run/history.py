"""The run's record in runs.sqlite: every step's key figures and every event, per run_id.

This is what lets a restarted server serve the whole history of a run, and what keeps the
`seq` counter going up across restarts and resets. SQLite in WAL mode, so a reader never
blocks the writer; one connection guarded by a lock, because steps are written from the
runner's reader thread and control events from the event loop.
"""

from __future__ import annotations

import json
import math
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    config TEXT NOT NULL,
    current INTEGER NOT NULL DEFAULT 0,
    last_frame TEXT,
    clean_stop INTEGER NOT NULL DEFAULT 0  -- 1 once a server stopped it cleanly
);
CREATE TABLE IF NOT EXISTS steps (
    seq INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    loss REAL NOT NULL,
    grad_norm REAL NOT NULL,
    lr REAL NOT NULL,
    tokens_total INTEGER NOT NULL,
    sim_step_s REAL NOT NULL,
    wall_step_s REAL NOT NULL,
    time REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS steps_run ON steps (run_id, seq);
CREATE INDEX IF NOT EXISTS steps_run_step ON steps (run_id, step, seq);
-- The step's trace (its lanes of timed events), zlib-compressed JSON; apart from `steps` so
-- that reading the loss history never pages through traces.
CREATE TABLE IF NOT EXISTS step_traces (
    seq INTEGER PRIMARY KEY,
    trace BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    seq INTEGER,
    kind TEXT NOT NULL,
    step INTEGER NOT NULL,
    message TEXT NOT NULL,
    detail TEXT NOT NULL,
    time REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS events_run ON events (run_id, id);
-- The probe (top next-word guesses and the watched weights) of each step that computed one,
-- as its step message carried it (ProbeMsg JSON): the rewind shows a past step's probe.
CREATE TABLE IF NOT EXISTS step_probes (
    seq INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    probe TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS step_probes_run ON step_probes (run_id, seq);
"""

# Most steps one page of GET /api/steps carries.
STEPS_PAGE_MAX = 1000

STEP_FIELDS = (
    "step",
    "epoch",
    "loss",
    "grad_norm",
    "lr",
    "tokens_total",
    "sim_step_s",
    "wall_step_s",
)


def new_run_id() -> str:
    """A run's name: when it started, and a few random characters to keep it unique."""
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


@dataclass
class RunRow:
    run_id: str
    created: float
    config: dict[str, Any]
    last_frame: str | None


class History:
    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a power cut may lose the last commits, never corrupt the file.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        # Records written before runs had `clean_stop` get it (no stop counts as clean).
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
        if "clean_stop" not in columns:
            self._db.execute("ALTER TABLE runs ADD COLUMN clean_stop INTEGER NOT NULL DEFAULT 0")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- runs -----------------------------------------------------------------------------

    def current_run(self) -> RunRow | None:
        with self._lock:
            row = self._db.execute(
                "SELECT run_id, created, config, last_frame FROM runs WHERE current = 1"
            ).fetchone()
        if row is None:
            return None
        return RunRow(row[0], row[1], json.loads(row[2]), row[3])

    def start_run(self, run_id: str, config: dict[str, Any]) -> None:
        """Record a new run and make it the current one (old runs keep their rows)."""
        with self._lock, self._db:
            self._db.execute("BEGIN")
            self._db.execute("UPDATE runs SET current = 0 WHERE current = 1")
            self._db.execute(
                "INSERT INTO runs (run_id, created, config, current) VALUES (?, ?, ?, 1)",
                (run_id, time.time(), json.dumps(config)),
            )

    def update_config(self, run_id: str, config: dict[str, Any]) -> None:
        """Same run, carried out differently (more GPUs, another checkpoint interval)."""
        with self._lock:
            self._db.execute(
                "UPDATE runs SET config = ? WHERE run_id = ?", (json.dumps(config), run_id)
            )

    def mark_clean_stop(self, run_id: str, frame: str | None) -> None:
        """The server stopped the run on purpose, with its final checkpoint: remember its
        last step frame, and that nothing was cut short."""
        with self._lock:
            self._db.execute(
                "UPDATE runs SET last_frame = ?, clean_stop = 1 WHERE run_id = ?", (frame, run_id)
            )

    def take_clean_stop(self, run_id: str) -> bool:
        """Did the last server stop this run cleanly? Asked once at start: the answer is
        cleared, so a crash of the server now starting is not taken for a clean stop."""
        with self._lock, self._db:
            self._db.execute("BEGIN")
            row = self._db.execute(
                "SELECT clean_stop FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            self._db.execute("UPDATE runs SET clean_stop = 0 WHERE run_id = ?", (run_id,))
        return bool(row and row[0])

    # --- steps ----------------------------------------------------------------------------

    def next_seq(self) -> int:
        with self._lock:
            (top,) = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM steps").fetchone()
        return int(top) + 1

    def add_step(
        self,
        seq: int,
        run_id: str,
        figures: dict[str, Any],
        events: list[dict[str, Any]],
        trace: bytes | None = None,
        probe: str | None = None,
    ) -> None:
        """One step, the events it carried, its compressed trace and its probe (JSON, when
        the step computed one), in one transaction."""
        bad = [
            k
            for k in STEP_FIELDS
            if isinstance(figures[k], float) and not math.isfinite(figures[k])
        ]
        if bad:
            # SQLite would store NaN as NULL and refuse it with a less telling message.
            named = ", ".join(f"{k} {figures[k]}" for k in bad)
            raise ValueError(f"step {figures['step']} has numbers that are not finite ({named})")
        now = time.time()
        with self._lock, self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT INTO steps (seq, run_id, step, epoch, loss, grad_norm, lr, tokens_total,"
                " sim_step_s, wall_step_s, time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (seq, run_id, *(figures[k] for k in STEP_FIELDS), now),
            )
            if trace is not None:
                self._db.execute("INSERT INTO step_traces (seq, trace) VALUES (?, ?)", (seq, trace))
            if probe is not None:
                self._db.execute(
                    "INSERT INTO step_probes (seq, run_id, probe) VALUES (?, ?, ?)",
                    (seq, run_id, probe),
                )
            for e in events:
                self._insert_event(run_id, seq, e, now)

    def add_event(self, run_id: str, event: dict[str, Any]) -> None:
        with self._lock:
            self._insert_event(run_id, None, event, time.time())

    def _insert_event(self, run_id: str, seq: int | None, e: dict[str, Any], now: float) -> None:
        self._db.execute(
            "INSERT INTO events (run_id, seq, kind, step, message, detail, time)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (run_id, seq, e["kind"], e["step"], e["message"], json.dumps(e.get("detail", {})), now),
        )

    def steps(self, run_id: str) -> list[dict[str, Any]]:
        with self._lock:
            cur = self._db.execute(
                "SELECT seq, step, epoch, loss, grad_norm, lr, tokens_total, sim_step_s,"
                " wall_step_s, time FROM steps WHERE run_id = ? ORDER BY seq",
                (run_id,),
            )
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur]

    def loss_points(self, run_id: str) -> list[tuple[int, int, float]]:
        with self._lock:
            return list(
                self._db.execute(
                    "SELECT seq, step, loss FROM steps WHERE run_id = ? ORDER BY seq", (run_id,)
                )
            )

    def each_loss_point(self, run_id: str, batch: int = 10_000) -> Iterator[tuple[int, int, float]]:
        """The same points as `loss_points`, read a batch at a time: a long run's history is
        never all in memory at once, and the lock is free between batches."""
        after = 0
        while True:
            with self._lock:
                rows = self._db.execute(
                    "SELECT seq, step, loss FROM steps WHERE run_id = ? AND seq > ?"
                    " ORDER BY seq LIMIT ?",
                    (run_id, after, batch),
                ).fetchall()
            yield from rows
            if len(rows) < batch:
                return
            after = rows[-1][0]

    def step_trace(self, run_id: str, step: int) -> tuple[int, bytes] | None:
        """(seq, compressed trace) of the latest recorded `step` of a run: after a rollback
        a step number is trained again, and the newer attempt is the one on the timeline."""
        with self._lock:
            row = self._db.execute(
                "SELECT s.seq, t.trace FROM steps s JOIN step_traces t ON t.seq = s.seq"
                " WHERE s.run_id = ? AND s.step = ? ORDER BY s.seq DESC LIMIT 1",
                (run_id, step),
            ).fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]))

    def steps_page(
        self,
        run_id: str,
        first: int,
        last: int,
        *,
        after_seq: int = 0,
        limit: int = STEPS_PAGE_MAX,
    ) -> list[dict[str, Any]]:
        """Recorded steps of a run numbered `first`..`last`, in the order they were trained
        (seq; after a rollback a step number comes twice), after `after_seq`, at most `limit`.

        Each row has the step's figures and `probe`: the probe as it stood at that step (the
        latest recorded at or before it, since only every few steps compute one), with
        `probe_step`, the step it was computed at; both None before the first probe."""
        limit = max(1, min(int(limit), STEPS_PAGE_MAX))
        with self._lock:
            cur = self._db.execute(
                "SELECT s.seq, s.step, s.epoch, s.loss, s.grad_norm, s.lr, s.tokens_total,"
                " s.sim_step_s, s.wall_step_s, s.time,"
                " (SELECT p.seq FROM step_probes p WHERE p.run_id = s.run_id AND p.seq <= s.seq"
                "  ORDER BY p.seq DESC LIMIT 1) AS probe_seq"
                " FROM steps s WHERE s.run_id = ? AND s.step BETWEEN ? AND ? AND s.seq > ?"
                " ORDER BY s.seq LIMIT ?",
                (run_id, int(first), int(last), int(after_seq), limit),
            )
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, row, strict=True)) for row in cur]
            wanted = sorted({r["probe_seq"] for r in rows if r["probe_seq"] is not None})
            probes: dict[int, tuple[int, dict[str, Any]]] = {}
            for seq in wanted:
                found = self._db.execute(
                    "SELECT s.step, p.probe FROM step_probes p JOIN steps s ON s.seq = p.seq"
                    " WHERE p.seq = ?",
                    (seq,),
                ).fetchone()
                if found is not None:
                    probes[seq] = (int(found[0]), json.loads(found[1]))
        for r in rows:
            got = probes.get(r.pop("probe_seq"))
            r["probe_step"], r["probe"] = got if got is not None else (None, None)
        return rows

    def step_span(self, run_id: str) -> tuple[int, int, int] | None:
        """(lowest step, highest step, steps recorded) of a run, or None before its first."""
        with self._lock:
            row = self._db.execute(
                "SELECT MIN(step), MAX(step), COUNT(*) FROM steps WHERE run_id = ?", (run_id,)
            ).fetchone()
        if row is None or row[2] == 0:
            return None
        return int(row[0]), int(row[1]), int(row[2])

    def run_config(self, run_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT config FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    def last_step(self, run_id: str) -> int | None:
        with self._lock:
            row = self._db.execute(
                "SELECT step FROM steps WHERE run_id = ? ORDER BY seq DESC LIMIT 1", (run_id,)
            ).fetchone()
        return None if row is None else int(row[0])

    # --- events ---------------------------------------------------------------------------

    def events(self, run_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Events of a run, oldest first (the most recent `limit` when given)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT kind, step, message, detail FROM events WHERE run_id = ?"
                " ORDER BY id DESC LIMIT ?",
                (run_id, -1 if limit is None else limit),
            ).fetchall()
        return [
            {"type": "event", "kind": k, "step": s, "message": m, "detail": json.loads(d)}
            for k, s, m, d in reversed(rows)
        ]
