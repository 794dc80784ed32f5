"""How much a client may send: request bodies capped before they are read, JSON nesting
limited before a parser recurses into it, and a token bucket per client for its messages."""

from __future__ import annotations

import math
import re
import time
from itertools import accumulate

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.web.asgi import header, respond
from app.web.errors import error_body

# Control messages are flat; anything nested deeper than this is not one of ours.
MAX_JSON_DEPTH = 32


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
        length = header(scope, b"content-length")
        if length is not None and (not length.strip().isdigit() or int(length) > self.limit):
            await respond(send, 413, self.too_large())
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
                await respond(send, 413, self.too_large())
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if (
            body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH
            and _is_json(header(scope, b"content-type"))
            and json_depth(body.decode("utf-8", "replace")) > MAX_JSON_DEPTH
        ):
            message_text = f"JSON nested more than {MAX_JSON_DEPTH} levels deep"
            await respond(send, 400, error_body("too_deep", message_text))
            return

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


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


class Refusals:
    """Messages refused by a rate limit, told of at most once every `every_s` seconds: the
    first at once, the ones after it counted and told together. A flood then costs the
    flooder one frame a second, never one per message, so its own queue cannot overflow."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self.count = 0
        self.told_at = -math.inf

    def refuse(self) -> int:
        """Count one refusal; how many to tell of now, or 0 to hold them until `due_in()`."""
        self.count += 1
        if time.monotonic() - self.told_at >= self.every_s:
            return self.take()
        return 0

    def due_in(self) -> float:
        """Seconds until the refusals held now may be told."""
        return max(0.0, self.told_at + self.every_s - time.monotonic())

    def take(self) -> int:
        """The refusals not yet told, now told."""
        count, self.count = self.count, 0
        if count:
            self.told_at = time.monotonic()
        return count
