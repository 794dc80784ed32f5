"""The run's record in runs.sqlite: every step's key figures and every event, per run_id.

This is what lets a restarted server serve the whole history of a run, and what keeps the
`seq` counter going up across restarts and resets. SQLite in WAL mode with one connection,
guarded by a lock, because steps are written from the runner's reader thread and control
events from the event loop.

The connection holds the file exclusively (`locking_mode=EXCLUSIVE`, set before WAL): SQLite
then keeps the WAL index in heap memory instead of an mmapped `-shm` file, whose pages a
full or failing disk turns into SIGBUS, and a second server on the same run dir is refused
(`RecordInUse`) instead of sharing it.

A record that cannot be opened (not a database, damaged, a folder in its place) is never
deleted: it is set aside, renamed with the time and the reason, with its -wal file, and a
fresh record is started; `History.set_aside` says so. A write that fails because storage
fails (disk full, I/O error) is kept in memory, in order, and written with the next write
that works; `write_problem` says what is wrong meanwhile, and past `MAX_PENDING_WRITES`
further writes are dropped and counted (`dropped`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("trainingrun.history")

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

# How long opening the record waits for a lock another process holds (another server on the
# same run dir, or one still shutting down) before saying it is in use.
LOCK_WAIT_S = 2.0
# Writes held in memory while storage fails; past this, further writes are dropped and counted.
MAX_PENDING_WRITES = 5000
# The files SQLite keeps beside the record; each goes with it when it is set aside.
SIDE_FILES = ("-wal", "-shm", "-journal")

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


class RecordInUse(Exception):
    """Another process holds the record (another server on the same run dir): one line."""


class RecordUnavailable(Exception):
    """The record can neither be opened nor set aside (a folder one cannot write in)."""


class RecordWriteError(Exception):
    """A write failed because storage failed; it is kept in memory and tried again."""


class _Damaged(Exception):
    def __init__(self, reason: str, why: str) -> None:
        super().__init__(why)
        self.reason, self.why = reason, why


@dataclass(frozen=True)
class SetAside:
    """A record that could not be opened and was renamed, with why."""

    reason: str  # not-a-database, malformed or cannot-open: also the end of its new name
    why: str  # SQLite's own words, one line
    moved_to: Path
    at: float  # time.time()

    @property
    def notice(self) -> str:
        return (
            f"The run record could not be opened ({self.why}); it was set aside as "
            f"{self.moved_to.name} and a fresh record was started"
        )


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _classify(exc: sqlite3.Error, path: Path) -> Exception:
    """What an error at open means: damage to set aside, another owner, or neither."""
    name = getattr(exc, "sqlite_errorname", "")
    why = _one_line(str(exc))
    if name.startswith("SQLITE_BUSY") or name.startswith("SQLITE_LOCKED"):
        return RecordInUse(
            f"{path} is in use by another process (another trainingrun server on the same "
            "run dir?): stop it, or give this one another --run-dir"
        )
    if name == "SQLITE_NOTADB":
        return _Damaged("not-a-database", why)
    if name.startswith("SQLITE_CORRUPT"):
        return _Damaged("malformed", why)
    if name.startswith("SQLITE_CANTOPEN") and (path.is_dir() or not os.access(path, os.R_OK)):
        return _Damaged("cannot-open", why)
    return RecordUnavailable(f"the run record {path} cannot be opened: {why}")


def _connect(path: Path) -> sqlite3.Connection:
    """The record, opened, checked and held exclusively; raises _Damaged, RecordInUse or
    RecordUnavailable."""
    db = None
    try:
        db = sqlite3.connect(
            path, check_same_thread=False, isolation_level=None, timeout=LOCK_WAIT_S
        )
        # Before anything reads the file: only then does WAL mode keep its index in memory.
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a power cut may lose the last commits, never corrupt the file.
        db.execute("PRAGMA synchronous=NORMAL")
        # Damage in the middle of the file shows now, not at the first read of that page.
        found = [str(row[0]) for row in db.execute("PRAGMA quick_check(3)")]
        if found != ["ok"]:
            raise _Damaged("malformed", _one_line(" ".join(found)))
        db.executescript(SCHEMA)
        # Records written before runs had `clean_stop` get it (no stop counts as clean).
        columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        if "clean_stop" not in columns:
            db.execute("ALTER TABLE runs ADD COLUMN clean_stop INTEGER NOT NULL DEFAULT 0")
    except sqlite3.Error as exc:
        if db is not None:
            db.close()
        raise _classify(exc, path) from None
    except BaseException:
        if db is not None:
            db.close()
        raise
    return db


def record_in_use(path: str | Path) -> str | None:
    """One line when another process holds the record (a server already on this run dir),
    else None. Only looks: a damaged record is left for History to set aside."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(path, isolation_level=None, timeout=LOCK_WAIT_S)
        try:
            # Exclusive and WAL, as History opens it: this needs the lock History will hold
            # (so a reader with the file open counts as well), and makes no -shm file.
            db.execute("PRAGMA locking_mode=EXCLUSIVE")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        found = _classify(exc, path)
        if isinstance(found, RecordInUse):
            return str(found)
    return None


def set_aside(path: Path, reason: str, why: str) -> SetAside:
    """Rename the record (and its -wal, -shm, -journal files) to
    `<name>.<UTC time>-<reason>`, never over anything already there."""
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    base = f"{path.name}.{stamp}-{reason}"
    target, n = path.with_name(base), 1
    while any(Path(f"{target}{s}").exists() for s in ("", *SIDE_FILES)):
        n += 1
        target = path.with_name(f"{base}-{n}")
    try:
        for suffix in ("", *SIDE_FILES):
            side = Path(f"{path}{suffix}")
            if side.exists() or side.is_symlink():
                os.rename(side, f"{target}{suffix}")
    except OSError as exc:
        raise RecordUnavailable(
            f"the run record {path} cannot be opened ({why}) nor set aside: "
            f"{exc.strerror or exc.__class__.__name__}"
        ) from None
    return SetAside(reason=reason, why=why, moved_to=target, at=now)


def _storage_failure(exc: BaseException) -> bool:
    """Storage failing (disk full, I/O error, a locked or vanished file), as opposed to a
    write that is wrong in itself (a duplicate key), which trying again would not mend."""
    return type(exc) in (sqlite3.OperationalError, sqlite3.DatabaseError)


@dataclass
class RunRow:
    run_id: str
    created: float
    config: dict[str, Any]
    last_frame: str | None


class History:
    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.set_aside: SetAside | None = None
        try:
            self._db = _connect(path)
        except _Damaged as damaged:
            self.set_aside = set_aside(path, damaged.reason, damaged.why)
            log.error("%s", self.set_aside.notice)
            self._db = _connect(path)
        # Writes storage refused, oldest first, each a list of (sql, parameters).
        self._pending: list[list[tuple[str, tuple[Any, ...]]]] = []
        self.write_problem: str | None = None  # set while storage refuses writes
        self.dropped = 0  # writes lost because too many were held

    @property
    def notice(self) -> str | None:
        """Said once to everyone: earlier history was set aside at this start."""
        return None if self.set_aside is None else self.set_aside.notice

    def close(self) -> None:
        with self._lock:
            if self._pending:
                with contextlib.suppress(RecordWriteError):
                    self._flush()
            if self._pending:
                log.error(
                    "%d writes to the run record were lost at shutdown: %s",
                    len(self._pending),
                    self.write_problem,
                )
            self._db.close()

    # --- writing ----------------------------------------------------------------------------

    def _write(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """One write (a transaction), after any held ones; call with the lock held.

        When storage fails the write is held, and RecordWriteError says so."""
        if not self._pending:
            try:
                self._transaction([statements])
            except sqlite3.Error as exc:
                if not _storage_failure(exc):
                    raise
                self._pending.append(statements)
                self._failed(exc)
            return
        if len(self._pending) >= MAX_PENDING_WRITES:
            self.dropped += 1
        else:
            self._pending.append(statements)
        self._flush()

    def _transaction(self, writes: list[list[tuple[str, tuple[Any, ...]]]]) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
            for statements in writes:
                for sql, params in statements:
                    self._db.execute(sql, params)
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            raise

    def _flush(self) -> None:
        """Write the held writes, in order, in one transaction."""
        try:
            self._transaction(self._pending)
        except sqlite3.Error as exc:
            if _storage_failure(exc):
                self._failed(exc)
            # One of them is wrong in itself: write each alone, dropping what is refused.
            for i, statements in enumerate(self._pending):
                try:
                    self._transaction([statements])
                except sqlite3.Error as one:
                    if _storage_failure(one):
                        self._pending = self._pending[i:]
                        self._failed(one)
                    self.dropped += 1
                    log.error("a held write to the run record was refused: %s", one)
        held, self._pending = len(self._pending), []
        if self.write_problem is not None:
            log.warning(
                "the run record can be written again: %d held writes written, %d dropped",
                held,
                self.dropped,
            )
            self.write_problem = None

    def _failed(self, exc: sqlite3.Error) -> None:
        reason = _one_line(str(exc))
        if self.write_problem is None:
            log.error("the run record cannot be written: %s; writes are held in memory", reason)
        self.write_problem = reason
        raise RecordWriteError(
            f"{reason} (held in memory, {len(self._pending)} so far, until it can be written)"
        ) from None

    def retry(self) -> bool:
        """Try the held writes again; True when nothing is held any more."""
        with self._lock:
            if self._pending:
                with contextlib.suppress(RecordWriteError):
                    self._flush()
            return not self._pending

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
        self._write_held(
            [
                ("UPDATE runs SET current = 0 WHERE current = 1", ()),
                (
                    "INSERT INTO runs (run_id, created, config, current) VALUES (?, ?, ?, 1)",
                    (run_id, time.time(), json.dumps(config)),
                ),
            ]
        )

    def _write_held(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """A write the caller need not wait for: when storage fails it is held and
        `write_problem` says so."""
        with self._lock, contextlib.suppress(RecordWriteError):
            self._write(statements)

    def update_config(self, run_id: str, config: dict[str, Any]) -> None:
        """Same run, carried out differently (more GPUs, another checkpoint interval)."""
        self._write_held(
            [("UPDATE runs SET config = ? WHERE run_id = ?", (json.dumps(config), run_id))]
        )

    def mark_clean_stop(self, run_id: str, frame: str | None) -> None:
        """The server stopped the run on purpose, with its final checkpoint: remember its
        last step frame, and that nothing was cut short."""
        self._write_held(
            [("UPDATE runs SET last_frame = ?, clean_stop = 1 WHERE run_id = ?", (frame, run_id))]
        )

    def take_clean_stop(self, run_id: str) -> bool:
        """Did the last server stop this run cleanly? Asked once at start: the answer is
        cleared, so a crash of the server now starting is not taken for a clean stop."""
        with self._lock:
            row = self._db.execute(
                "SELECT clean_stop FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            with contextlib.suppress(RecordWriteError):
                self._write([("UPDATE runs SET clean_stop = 0 WHERE run_id = ?", (run_id,))])
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
        statements: list[tuple[str, tuple[Any, ...]]] = [
            (
                "INSERT INTO steps (seq, run_id, step, epoch, loss, grad_norm, lr, tokens_total,"
                " sim_step_s, wall_step_s, time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (seq, run_id, *(figures[k] for k in STEP_FIELDS), now),
            )
        ]
        if trace is not None:
            statements.append(("INSERT INTO step_traces (seq, trace) VALUES (?, ?)", (seq, trace)))
        if probe is not None:
            statements.append(
                (
                    "INSERT INTO step_probes (seq, run_id, probe) VALUES (?, ?, ?)",
                    (seq, run_id, probe),
                )
            )
        statements += [self._event_row(run_id, seq, e, now) for e in events]
        with self._lock:
            self._write(statements)

    def add_event(self, run_id: str, event: dict[str, Any]) -> None:
        """Raises RecordWriteError when storage fails (the event is held meanwhile)."""
        with self._lock:
            self._write([self._event_row(run_id, None, event, time.time())])

    @staticmethod
    def _event_row(
        run_id: str, seq: int | None, e: dict[str, Any], now: float
    ) -> tuple[str, tuple[Any, ...]]:
        return (
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
