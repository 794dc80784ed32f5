"""Who may control the run, which pages may open the websocket, and how often one may ask.

On a loopback server everyone who can reach it is on this machine, so anyone may control.
On a public one (bound to a non-loopback address, or marked public) watching stays open to
all, but controls need the presenter token. The websocket refuses browser pages from foreign
origins, so another site open in the same browser cannot drive or scrape the run.
"""

from __future__ import annotations

import hmac
import secrets
import time
from urllib.parse import urlsplit

from app.settings import Settings


class Guard:
    def __init__(self, settings: Settings) -> None:
        self.public = settings.is_public
        # A public server always has a token: generated here when none was given.
        self.token = settings.token or (secrets.token_urlsafe(16) if self.public else None)
        self.allowed_origins = {o.rstrip("/").lower() for o in settings.allowed_origins}

    def may_control(self, token: str | None) -> bool:
        if not self.public:
            return True
        if not token or self.token is None:
            return False
        return hmac.compare_digest(token.encode(), self.token.encode())

    def origin_ok(self, origin: str | None, host: str | None) -> bool:
        """Same-origin pages and non-browser clients (no Origin header) may connect."""
        if origin is None:
            return True
        origin = origin.rstrip("/").lower()
        if origin in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or not host:
            return False
        return parts.netloc == host.lower()


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
