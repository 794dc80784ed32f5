"""Connections that never finish asking are closed: a request header must be complete within
`header_timeout_s` of the connection opening (or of the previous response on a kept-alive one).

uvicorn's own keep-alive timeout only runs between requests, and any byte a client sends stops
it, so a socket that connects and sends nothing, or half a header, stays open for ever; a
thousand of them use up the server's file descriptors (`ulimit -n 1024` is common) and new
pages and REST calls get connection resets. This is uvicorn's HTTP protocol (whichever one it
picks) with that one deadline added. A request being answered is never cut, and a connection
upgraded to a websocket belongs to the websocket protocol from then on, untouched by it.
"""

from __future__ import annotations

import asyncio
from typing import Any


class HeaderDeadline:
    """Mixed in before a uvicorn HTTP protocol class (h11 or httptools): both name their
    transport, loop and current request cycle the same way."""

    header_timeout_s: float = 5.0
    _header_deadline: asyncio.TimerHandle | None = None

    # What the protocol class provides.
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    cycle: Any

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._arm_header_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._arm_header_deadline()  # the next request's header has the same time

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        super().connection_lost(exc)  # type: ignore[misc]

    def handle_websocket_upgrade(self, *args: Any) -> None:
        super().handle_websocket_upgrade(*args)  # type: ignore[misc]
        # The connection is the websocket protocol's now, and this one never hears of it
        # again (its connection_lost is not called): let go of what uvicorn lets go of at
        # connection_lost. The httptools parser refers back to its protocol, so without this
        # every websocket leaves a cycle behind that only a full garbage collection frees,
        # and memory climbs as viewers come and go.
        self._disarm_header_deadline()
        if hasattr(self, "parser"):
            self.parser = None

    def _arm_header_deadline(self) -> None:
        self._disarm_header_deadline()
        if not self.transport.is_closing():
            self._header_deadline = self.loop.call_later(
                self.header_timeout_s, self._header_too_slow
            )

    def _disarm_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _header_too_slow(self) -> None:
        self._header_deadline = None
        transport = self.transport
        if transport.is_closing() or transport.get_protocol() is not self:
            return  # gone already, or a websocket now
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            return  # a whole header came and its request is being answered
        transport.close()


def header_deadline_protocol(
    header_timeout_s: float, base: type[asyncio.Protocol] | None = None
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (`base`, by default the one uvicorn picks itself) closing any
    connection whose request header is not complete `header_timeout_s` seconds after it
    opened or after its last response; pass it as `uvicorn.Config(http=...)`."""
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        base = AutoHTTPProtocol
    return type(
        f"HeaderDeadline{base.__name__}",
        (HeaderDeadline, base),
        {"header_timeout_s": header_timeout_s, "__module__": __name__},
    )
