"""/ws: hello and snapshot on connect, then live steps and events; controls come back here.

Anything a client sends is checked in order (rate, size, nesting, JSON with finite numbers,
shape, permission) and each problem is answered with an `error` frame naming it; the
connection and the run go on. Messages over the rate are answered together: one
`rate_limited` error a second at most, with the number refused since the last one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from app.protocol import (
    CLASS_RUN,
    ErrorMsg,
    control_adapter,
    following_adapter,
    own_run_adapter,
    present_adapter,
    watch_adapter,
)
from app.run.controls import ControlError, reset_config
from app.settings import Settings
from app.web.errors import short_repr
from app.web.guard import Guard
from app.web.hub import Frame, Viewer
from app.web.limits import MAX_JSON_DEPTH, Refusals, TokenBucket, json_depth
from app.web.presenter import Presenter, PresentError
from app.web.runs import RunEntry, RunError, Runs

log = logging.getLogger("trainingrun.ws")
router = APIRouter()

# Close codes: 1008 policy violation (foreign origin), 1013 try again later (too slow).
CLOSE_POLICY = 1008
CLOSE_TOO_SLOW = 1013
WARM_AT_ONCE = 2  # runs one connection may have starting for it in the background
RATE_LIMITED = "too many messages: at most 10 a second, please"
FOREIGN_ORIGIN = "pages from other sites may not open this server's websocket"

_RANGE_ERRORS = {
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "string_too_long",
    "string_too_short",
}


def error_text(code: str, message: str) -> str:
    return ErrorMsg(code=code, message=message).model_dump_json(exclude_none=True)


class NotFinite(ValueError):
    """A number JSON allows only by Python's leniency (NaN, Infinity) or beyond a float."""


def _constant(name: str) -> float:
    raise NotFinite(f"numbers must be finite: {name} is not allowed")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NotFinite(f"numbers must be finite: {text[:24]} is beyond the largest float")
    return value


def parse_json(text: str) -> Any:
    """json.loads, strict about numbers: NaN, Infinity and 1e400 (inf) raise NotFinite."""
    return json.loads(text, parse_constant=_constant, parse_float=_finite)


def describe_validation(exc: ValidationError) -> tuple[str, str]:
    """A short code and one readable sentence per problem, naming the field."""
    errors = exc.errors(include_url=False)
    kinds = {e["type"] for e in errors}
    if "union_tag_not_found" in kinds:
        code = "missing_action"
    elif "union_tag_invalid" in kinds:
        code = "unknown_action"
    elif "missing" in kinds:
        code = "missing_field"
    elif "extra_forbidden" in kinds:
        code = "unknown_field"
    elif kinds & _RANGE_ERRORS:
        code = "out_of_range"
        # A number out of range also "is not 'lesson' or 'max'": only the range matters.
        errors = [e for e in errors if e["type"] in _RANGE_ERRORS]
    else:
        code = "invalid_field"
    parts = []
    for e in errors:
        # The first element of the location is the union tag (the action); skip it.
        loc = [str(x) for x in e["loc"][1:]] if len(e["loc"]) > 1 else [str(x) for x in e["loc"]]
        # A speed that is neither name nor number fails both branches: say it once.
        loc = [x for x in loc if not x.startswith(("literal[", "constrained-", "float"))]
        where = ".".join(loc) or "message"
        # A misspelt field's name comes from the client: never echo much of it.
        where = where if len(where) <= 40 else short_repr(where, 40)
        parts.append(f"{where}: {e['msg']}")
    return code, "; ".join(list(dict.fromkeys(parts))[:5])


class Session:
    """One websocket client: its viewer in the hub and its inbound message budget."""

    def __init__(self, ws: WebSocket, viewer: Viewer, settings: Settings, entry: RunEntry) -> None:
        self.ws = ws
        self.viewer = viewer
        self.settings = settings
        self.bucket = TokenBucket(settings.control_rate, settings.control_burst)
        self.refusals = Refusals(settings.rate_limited_every_s)
        self._tell_refused_later: asyncio.TimerHandle | None = None
        app = ws.app
        self.entry = entry  # the run this page watches; its controls go to that run
        self.key = viewer_key(ws.query_params.get("key"))  # the page's own key, if any
        self._warming: set[asyncio.Future[Any]] = set()
        viewer.key = self.key
        self.runs: Runs = app.state.runs
        self.guard: Guard = app.state.guard
        # Unexpected failures on this connection: the first is logged in full, the rest
        # only counted, so one client cannot flood the log.
        self.failures = 0

    @property
    def peer(self) -> str:
        client = self.ws.client
        return f"{client.host}:{client.port}" if client else "?"

    def reply_error(self, code: str, message: str) -> None:
        self.viewer.push(Frame(error_text(code, message)))

    def refused(self) -> None:
        """One message over the rate: told of now, or counted into the next telling."""
        count = self.refusals.refuse()
        if count:
            self._tell_refused(count)
        elif self._tell_refused_later is None:
            loop = asyncio.get_running_loop()
            self._tell_refused_later = loop.call_later(self.refusals.due_in(), self._tell_held)

    def _tell_held(self) -> None:
        self._tell_refused_later = None
        count = self.refusals.take()
        if count:
            self._tell_refused(count)

    def _tell_refused(self, count: int) -> None:
        msg = ErrorMsg(code="rate_limited", message=RATE_LIMITED, dropped=count)
        self.viewer.push(Frame(msg.model_dump_json(exclude_none=True)))

    def close(self) -> None:
        if self._tell_refused_later is not None:
            self._tell_refused_later.cancel()
            self._tell_refused_later = None

    def present(self, kind: str, raw: dict[str, Any]) -> None:
        """A presenter's start, move or stop, or a follower breaking away or rejoining."""
        presenter: Presenter | None = getattr(self.ws.app.state, "presenter", None)
        if presenter is None:
            self.reply_error("unavailable", "presenting is not available on this server")
            return
        try:
            if kind == "following":
                presenter.following(self.viewer, following_adapter.validate_python(raw))
                return
            msg = present_adapter.validate_python(raw)
            may = self.viewer.can_control or self.guard.may_control(msg.token)
            presenter.handle(self.viewer, msg, may)
        except ValidationError as exc:
            self.reply_error(*describe_validation(exc))
        except PresentError as exc:
            self.reply_error(exc.code, exc.message)

    async def watch(self, raw: dict[str, Any]) -> None:
        """Watch another run: the page is handed to that run's viewers, its hello first."""
        try:
            msg = watch_adapter.validate_python(raw)
            entry = await self.runs.open(msg.run)
        except ValidationError as exc:
            self.reply_error(*describe_validation(exc))
            return
        except RunError as exc:
            self.reply_error(exc.code, exc.message)
            return
        if self.viewer.closed.is_set():
            return
        first = first_frames(entry, entry.hub.may_control(self.viewer))
        if entry is self.entry:
            for text in first():  # already watching it: said again, so the page knows
                self.viewer.push(Frame(text))
            return
        self.entry.hub.hand_over(self.viewer, entry.hub, first)
        self.entry = entry

    def warm(self, raw: dict[str, Any]) -> None:
        """Start a run a watch will soon ask for, in the background: nothing is answered."""
        try:
            msg = watch_adapter.validate_python(raw)
        except ValidationError as exc:
            self.reply_error(*describe_validation(exc))
            return
        if msg.run in self.runs.entries or len(self._warming) >= WARM_AT_ONCE:
            return
        task = asyncio.ensure_future(self.runs.open(msg.run))
        self._warming.add(task)
        task.add_done_callback(self._warmed)

    def _warmed(self, task: asyncio.Future[Any]) -> None:
        self._warming.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.info("a run to warm did not start: %s", task.exception())

    async def own_run(self, raw: dict[str, Any]) -> None:
        """Start a run of this page's own (no rights needed) and watch it."""
        try:
            msg = own_run_adapter.validate_python(raw)
            config = reset_config(self.runs.base_config(), msg)
            self.key = self.viewer.key = msg.key
            entry = await self.runs.own(msg.key, config)
        except ValidationError as exc:
            self.reply_error(*describe_validation(exc))
            return
        except (ControlError, RunError) as exc:
            self.reply_error(exc.code, exc.message)
            return
        left = self.entry
        if self.viewer.closed.is_set():
            await self.runs.retire(entry)
            return
        left.hub.hand_over(self.viewer, entry.hub, first_frames(entry, True))
        self.entry = entry
        if left.owned_by(msg.key):
            await self.runs.retire(left)  # the page's previous run of its own

    async def receive_loop(self) -> None:
        while True:
            msg = await self.ws.receive()
            if msg["type"] == "websocket.disconnect":
                return
            try:
                await self.handle(msg.get("text"), msg.get("bytes"))
            except Exception:
                # Never let one message take the connection down.
                self.failures += 1
                if self.failures == 1:
                    log.exception("unexpected error handling a message from %s", self.peer)
                self.reply_error("internal", "the server could not handle that message")

    def log_summary(self) -> None:
        if self.failures > 1:
            log.warning(
                "%d more unexpected errors from %s were not logged", self.failures - 1, self.peer
            )

    async def handle(self, text: str | None, data: bytes | None) -> None:
        if not self.bucket.take():
            self.refused()
            return
        limit = self.settings.max_message_bytes
        if text is None:
            if data is not None and len(data) > limit:
                self.reply_error("too_large", f"messages are limited to {limit} bytes")
            else:
                self.reply_error("binary_frame", "send JSON as text frames")
            return
        if len(text) > limit or len(text.encode("utf-8", "surrogatepass")) > limit:
            self.reply_error("too_large", f"messages are limited to {limit} bytes")
            return
        if json_depth(text) > MAX_JSON_DEPTH:
            self.reply_error("too_deep", f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
            return
        try:
            raw: Any = parse_json(text)
        except NotFinite as exc:
            self.reply_error("out_of_range", str(exc))
            return
        except (ValueError, RecursionError) as exc:
            self.reply_error("invalid_json", f"not valid JSON: {str(exc)[:200]}")
            return
        if not isinstance(raw, dict):
            self.reply_error("not_an_object", "a message must be a JSON object with a type")
            return
        kind = raw.get("type")
        if kind is None:
            self.reply_error("missing_type", "a message needs a 'type' field (e.g. 'control')")
            return
        if kind in ("present", "following"):
            self.present(kind, raw)
            return
        if kind == "watch":
            await self.watch(raw)
            return
        if kind == "warm":
            self.warm(raw)
            return
        if kind == "own_run":
            await self.own_run(raw)
            return
        if kind != "control":
            shown = kind if isinstance(kind, str) else type(kind).__name__
            self.reply_error("unknown_type", f"unknown message type {str(shown)[:40]!r}")
            return
        try:
            ctl = control_adapter.validate_python(raw)
        except ValidationError as exc:
            self.reply_error(*describe_validation(exc))
            return
        mine = self.entry.owned_by(self.key)
        if not (self.viewer.can_control or mine or self.guard.may_control(ctl.token)):
            self.reply_error("forbidden", "controlling this run needs the presenter token")
            return
        try:
            await self.entry.runner.control(ctl)
        except ControlError as exc:
            self.reply_error(exc.code, exc.message)
        except TimeoutError:
            self.reply_error("timeout", "the training worker did not answer in time")


def viewer_key(key: str | None) -> str | None:
    """The page's own key from `?key=` when it is one (`OwnRunMsg.key`'s shape), else None."""
    ok = key is not None and 8 <= len(key) <= 64 and re.fullmatch(r"[A-Za-z0-9_-]+", key)
    return key if ok else None


def first_frames(entry: RunEntry, can_control: bool) -> Callable[[], list[str]]:
    """What a page watching `entry` gets before anything else: the run's hello and snapshot."""

    def first() -> list[str]:
        return [entry.runner.hello_text(can_control), entry.runner.snapshot_text()]

    return first


async def _wanted_run(runs: Runs, wanted: str | None) -> tuple[RunEntry, list[str]]:
    """The run `?run=` names, else the class run, with an error frame saying why not."""
    if not wanted or wanted == CLASS_RUN:
        return runs.class_run, []
    try:
        msg = watch_adapter.validate_python({"type": "watch", "run": wanted})
        return await runs.open(msg.run), []
    except ValidationError as exc:
        return runs.class_run, [error_text(*describe_validation(exc))]
    except RunError as exc:
        return runs.class_run, [error_text(exc.code, exc.message)]


@router.websocket("/ws")
async def websocket_endpoint(ws: WebSocket) -> None:
    app = ws.app
    runs: Runs = app.state.runs
    guard: Guard = app.state.guard
    settings: Settings = app.state.settings
    if not guard.origin_ok(ws.headers.get("origin")):
        # Before accept: the handshake gets a 403, with the reason where the server can say it.
        if "websocket.http.response" in ws.scope.get("extensions", {}):
            reason = {"type": "error", "code": "forbidden_origin", "message": FOREIGN_ORIGIN}
            await ws.send_denial_response(JSONResponse(reason, status_code=403))
        else:
            await ws.close(code=CLOSE_POLICY)
        return
    can_control = guard.may_control(ws.query_params.get("token"))
    await ws.accept()
    # A page may ask for another run than the class run (`?run=`): a side run starts on the
    # first ask; one that cannot be watched leaves the page on the class run, told why.
    entry, told = await _wanted_run(runs, ws.query_params.get("run"))
    first = first_frames(
        entry, can_control or entry.owned_by(viewer_key(ws.query_params.get("key")))
    )
    viewer = entry.hub.add(ws.send_text, can_control=can_control, first=lambda: first() + told)
    presenter: Presenter | None = getattr(app.state, "presenter", None)
    if presenter is not None:
        presenter.joined(viewer)  # a page joining late lands on the presenter's view
    session = Session(ws, viewer, settings, entry)
    receiving = asyncio.create_task(session.receive_loop())
    dropped = asyncio.create_task(viewer.closed.wait())
    try:
        await asyncio.wait({receiving, dropped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (receiving, dropped):
            task.cancel()
        session.close()
        session.log_summary()
        await session.entry.hub.remove(viewer)
        if presenter is not None:
            presenter.left(viewer)
        if dropped.done() and not dropped.cancelled() and not receiving.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    ws.close(code=CLOSE_TOO_SLOW, reason=viewer.close_reason[:100]), 5
                )
