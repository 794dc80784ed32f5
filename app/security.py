"""Who may reach the server, who may control the run, and how much a client may send.

On a loopback server everyone who can reach it is on this machine, so anyone may control.
On a public one (bound to a non-loopback address, or marked public) watching stays open to
all, but controls need the presenter token.

A browser will send a request to this server on behalf of any site: a page on a foreign
name that resolves to 127.0.0.1 (DNS rebinding) reaches it with that name as its Host. So
the server only answers to names it knows (loopback, the address it listens on, and
--allowed-host), and a browser's Origin must be one of them too, on /ws and on REST controls.

Everything a client sends is checked at the edge, before it costs anything: request bodies
are capped, JSON nesting is limited, validation errors never echo large input back, and the
presenter token is kept out of the server log.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import re
import secrets
import time
from itertools import accumulate
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from starlette.responses import Response

    from app.settings import Settings

# Host names any server answers to: only this machine can be behind them.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
# Listening on these means "every interface": they name no host a browser would use.
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
# Control messages are flat; anything nested deeper than this is not one of ours.
MAX_JSON_DEPTH = 32

_NAME = re.compile(r"^[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?$")


def split_host(value: str | None) -> str | None:
    """The host name in a Host header or URL authority ("name", "name:port", "[v6]:port"),
    lower case without a trailing dot; None when it is not one."""
    if not value:
        return None
    v = value.strip().lower()
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            return None
        try:
            name = ipaddress.IPv6Address(v[1:end]).compressed
        except ValueError:
            return None
        port = v[end + 1 :]
    else:
        name, colon, rest = v.partition(":")
        port = colon + rest
        name = name.rstrip(".")
    if port and not (port.startswith(":") and port[1:].isascii() and port[1:].isdigit()):
        return None
    return name or None


def host_entry(value: str) -> str:
    """A host name or address as an operator writes it (--allowed-host, --host), normalised
    like split_host; ValueError with a readable reason otherwise."""
    text = value.strip()
    try:
        return ipaddress.ip_address(text.strip("[]")).compressed  # bare IPv6 is fine here
    except ValueError:
        pass
    name = split_host(text)
    if name is None or not (_NAME.match(name) or name.count(":") > 1):
        raise ValueError(
            f"{text[:80]!r} is not a host name or address (for example 192.168.1.20 or "
            "classroom-pc.local; no http://, no path)"
        )
    return name


def _is_loopback(name: str) -> bool:
    from app.settings import is_loopback  # settings imports this module

    return is_loopback(name)


class Guard:
    def __init__(self, settings: Settings) -> None:
        self.public = settings.is_public
        # A public server always has a token: generated here when none was given.
        self.token = settings.token or (secrets.token_urlsafe(16) if self.public else None)
        self.allowed_origins = {o.rstrip("/").lower() for o in settings.allowed_origins}
        hosts = list(LOOPBACK_HOSTS)
        if settings.host.strip("[]") not in WILDCARD_HOSTS:
            try:
                hosts.append(host_entry(settings.host))
            except ValueError:
                pass  # not a name a browser could use; listening on it fails on its own
        hosts += [host_entry(h) for h in settings.allowed_hosts]
        self.allowed_hosts = list(dict.fromkeys(hosts))

    def may_control(self, token: str | None) -> bool:
        if not self.public:
            return True
        if not token or self.token is None:
            return False
        return hmac.compare_digest(token.encode(), self.token.encode())

    def host_ok(self, host: str | None) -> bool:
        """The Host a request names must be one this server is known by."""
        name = split_host(host)
        return name is not None and (name in self.allowed_hosts or _is_loopback(name))

    def origin_ok(self, origin: str | None) -> bool:
        """Browser pages from a known host (any port), or a listed origin; non-browser
        clients send no Origin and may connect."""
        if origin is None:
            return True
        origin = origin.rstrip("/").lower()
        if origin in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc:
            return False
        return self.host_ok(parts.netloc)

    def hosts_text(self) -> str:
        return ", ".join(f"[{h}]" if ":" in h else h for h in self.allowed_hosts)


# ---- the edge: ASGI middlewares -------------------------------------------------------------


def error_body(code: str, message: str) -> bytes:
    return json.dumps({"type": "error", "code": code, "message": message}).encode()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


async def _respond(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class HostCheck:
    """Every request, HTTP or websocket, must name a known host (DNS rebinding)."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        if self.guard.host_ok(host):
            await self.app(scope, receive, send)
            return
        shown = "no Host header" if not host else f"unknown host {host[:100]!r}"
        body = error_body(
            "bad_host",
            f"{shown}: this server answers to {self.guard.hosts_text()}; "
            "start it with --allowed-host NAME to add a name or address",
        )
        if scope["type"] == "http":
            await _respond(send, 400, body)
            return
        await receive()  # websocket.connect
        if "websocket.http.response" in scope.get("extensions", {}):
            headers = [(b"content-type", b"application/json")]
            await send({"type": "websocket.http.response.start", "status": 403, "headers": headers})
            await send({"type": "websocket.http.response.body", "body": body})
        else:
            await send({"type": "websocket.close", "code": 1008})  # the handshake gets 403


def json_depth(text: str) -> int:
    """How deeply arrays and objects nest in a JSON text, brackets in strings not counted.
    A scan, not a parse, so it cannot itself recurse too deep."""
    outside = _JSON_STRING.sub("", text)
    brackets = _NOT_BRACKET.sub("", outside)
    return max(0, max(accumulate(1 if c in "[{" else -1 for c in brackets), default=0))


# A string, or an unterminated one up to the end: each quote is scanned past once, so the
# scan stays linear however the quotes and backslashes are arranged.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]")


def _is_json(content_type: str | None) -> bool:
    if content_type is None:
        return True
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


class BodyLimit:
    """Request bodies up to `limit` bytes, read before the route sees them: a bigger
    Content-Length is refused at once, a streamed body as soon as it passes the limit, so
    the server never holds more than `limit` bytes of one. JSON nested deeper than
    MAX_JSON_DEPTH is refused here too, before a parser recurses into it."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    def too_large(self) -> bytes:
        return error_body("too_large", f"request bodies are limited to {self.limit} bytes")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _header(scope, b"content-length")
        if length is not None and (not length.strip().isdigit() or int(length) > self.limit):
            await _respond(send, 413, self.too_large())
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await _respond(send, 413, self.too_large())
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if (
            body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH
            and _is_json(_header(scope, b"content-type"))
            and json_depth(body.decode("utf-8", "replace")) > MAX_JSON_DEPTH
        ):
            message_text = f"JSON nested more than {MAX_JSON_DEPTH} levels deep"
            await _respond(send, 400, error_body("too_deep", message_text))
            return

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


# ---- validation errors without the client's bytes ------------------------------------------

_SHORT = 60


def short_repr(value: Any, limit: int = _SHORT) -> str:
    """A repr for messages: long input cut short, never an error of its own."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short_text(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 3] + "..."
    return value


def _safe_value(value: Any) -> Any:
    """Small plain values as they are; anything else (megabytes of text, a number JSON
    cannot carry, an exception) as a short repr."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) < 2**53:
        return value
    if isinstance(value, float) and abs(value) < 1e300:  # False for NaN and infinities
        return value
    if isinstance(value, str) and len(value) <= _SHORT:
        return value
    return short_repr(value)


def safe_errors(errors: Any) -> list[dict[str, Any]]:
    """Validation errors fit to send back: the shape FastAPI gives (loc, msg, type, input,
    ctx), with locations and messages kept short and input only as a short repr."""
    out = []
    for e in list(errors)[:20]:
        item: dict[str, Any] = {
            "type": str(e.get("type", "")),
            "loc": [_short_text(x, _SHORT) if isinstance(x, str) else x for x in e.get("loc", ())],
            "msg": _short_text(str(e.get("msg", "")), 300),
        }
        if "input" in e:
            item["input"] = _safe_value(e["input"])
        if isinstance(e.get("ctx"), dict):
            item["ctx"] = {str(k)[:_SHORT]: _safe_value(v) for k, v in e["ctx"].items()}
        out.append(item)
    return out


async def validation_error_handler(request: Request, exc: RequestValidationError) -> Response:
    from fastapi.responses import JSONResponse

    return JSONResponse({"detail": safe_errors(exc.errors())}, status_code=422)


# ---- the presenter token out of the log ------------------------------------------------------

_TOKEN_IN_URL = re.compile(r"([?&](?:token|access_token)=)[^&\s\"']*", re.IGNORECASE)


def redact(text: str) -> str:
    return _TOKEN_IN_URL.sub(r"\1***", text) if "token=" in text.lower() else text


def _redact_any(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else value


class RedactTokens(logging.Filter):
    """Replaces the value of `token=` in logged URLs (uvicorn logs each request's path and
    query) with ***, so the server log never holds the presenter token."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_redact_any(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: _redact_any(v) for k, v in record.args.items()}
        return True


REQUEST_LOGGERS = ("uvicorn.access", "uvicorn.error")


def install_log_redaction() -> None:
    for name in REQUEST_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactTokens) for f in logger.filters):
            logger.addFilter(RedactTokens())


class TokenBucket:
    """`rate` requests a second on average, bursts of up to `burst`."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self.at = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class BucketsByKey:
    """One bucket per client address for REST, where there is no connection to hang it on."""

    def __init__(self, rate: float, burst: int, max_keys: int = 4096) -> None:
        self.rate, self.burst, self.max_keys = rate, burst, max_keys
        self._buckets: dict[str, TokenBucket] = {}

    def take(self, key: str) -> bool:
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self.max_keys:
                self._buckets.clear()  # crude but bounded: forget everyone rather than grow
            bucket = self._buckets[key] = TokenBucket(self.rate, self.burst)
        return bucket.take()
