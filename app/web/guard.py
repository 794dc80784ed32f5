"""Who may reach the server and who may control the run.

On a loopback server everyone who can reach it is on this machine, so anyone may control.
On a public one (bound to a non-loopback address, or marked public) watching stays open to
all, but controls need the presenter token.

A browser will send a request to this server on behalf of any site: a page on a foreign
name that resolves to 127.0.0.1 (DNS rebinding) reaches it with that name as its Host. So
the server only answers to names it knows (loopback, the address it listens on, and
--allowed-host), and a browser's Origin must be one of them too, on /ws and on REST controls.
What a client may send is limits.py's; errors that never echo it, errors.py's.
"""

from __future__ import annotations

import hmac
import secrets
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from app.web.asgi import header, respond
from app.web.errors import error_body
from app.web.hosts import LOOPBACK_HOSTS, WILDCARD_HOSTS, host_entry, is_loopback, split_host

if TYPE_CHECKING:
    from app.settings import Settings


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
        return name is not None and (name in self.allowed_hosts or is_loopback(name))

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


class HostCheck:
    """Every request, HTTP or websocket, must name a known host (DNS rebinding)."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = header(scope, b"host")
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
            await respond(send, 400, body)
            return
        await receive()  # websocket.connect
        if "websocket.http.response" in scope.get("extensions", {}):
            headers = [(b"content-type", b"application/json")]
            await send({"type": "websocket.http.response.start", "status": 403, "headers": headers})
            await send({"type": "websocket.http.response.body", "body": body})
        else:
            await send({"type": "websocket.close", "code": 1008})  # the handshake gets 403
