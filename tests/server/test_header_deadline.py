"""The header deadline on each of uvicorn's HTTP protocols (h11 and httptools), on a real
uvicorn in this process: a silent socket and a half-sent header are closed, also on a
connection kept alive after a response (where uvicorn's keep-alive timer no longer runs once
a byte comes), while a slow answer and an open websocket are left alone; and once a
connection is a websocket, its HTTP protocol is freed at once, not left in a reference cycle
for the next full garbage collection (memory climbed as viewers came and went)."""

from __future__ import annotations

import asyncio
import gc
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
import websockets
from servers import free_port
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.web.idle import header_deadline_protocol

pytestmark = pytest.mark.timeout(60)

DEADLINE_S = 0.3
HALF = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


async def app(scope, receive, send) -> None:
    if scope["type"] == "websocket":
        await receive()  # connect
        await send({"type": "websocket.accept"})
        while True:
            msg = await receive()
            if msg["type"] == "websocket.disconnect":
                return
            await send({"type": "websocket.send", "text": msg.get("text", "")})
    if scope["type"] != "http":
        return  # lifespan: nothing to do
    if scope["path"] == "/slow":
        await asyncio.sleep(DEADLINE_S * 4)
    headers = [(b"content-length", b"2")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture(params=[H11Protocol, HttpToolsProtocol], ids=["h11", "httptools"])
def protocol(request: pytest.FixtureRequest) -> type[asyncio.Protocol]:
    return header_deadline_protocol(DEADLINE_S, request.param)


@pytest.fixture
def port(protocol: type[asyncio.Protocol]) -> Iterator[int]:
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        http=protocol,
        timeout_keep_alive=60,  # long: what closes these connections is the header deadline
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    end = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < end, "uvicorn did not start"
        time.sleep(0.01)
    yield port
    server.should_exit = True
    thread.join(10)


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def closed_within(s: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed `s` (reading and dropping what it sends), or None."""
    start = time.monotonic()
    s.settimeout(0.05)
    while time.monotonic() - start < seconds:
        try:
            if not s.recv(4096):
                return time.monotonic() - start
        except TimeoutError:
            continue
        except ConnectionResetError:
            return time.monotonic() - start
    return None


def response(s: socket.socket, path: str = "/") -> bytes:
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    got = b""
    while not got.endswith(b"ok"):
        chunk = s.recv(4096)
        assert chunk, f"closed before the answer: {got!r}"
        got += chunk
    return got


def test_a_silent_socket_and_a_half_header_are_closed(port: int) -> None:
    silent, half = connect(port), connect(port)
    half.sendall(HALF)
    took = closed_within(silent, 5)
    assert took is not None and took >= DEADLINE_S * 0.8, took
    half.sendall(b"x")  # a trickle does not buy more time
    assert closed_within(half, 5) is not None


def test_a_half_header_after_a_kept_alive_response_is_closed(port: int) -> None:
    s = connect(port)
    assert response(s).startswith(b"HTTP/1.1 200")
    assert response(s).startswith(b"HTTP/1.1 200")  # kept alive: a second request is fine
    s.sendall(HALF)
    assert closed_within(s, 5) is not None


def test_a_slow_answer_is_not_cut(port: int) -> None:
    s = connect(port)
    assert response(s, "/slow").startswith(b"HTTP/1.1 200")  # longer than the deadline


def test_an_open_websocket_outlives_the_deadline(port: int) -> None:
    async def go() -> list[str]:
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
            echoes = []
            for word in ("one", "two", "three", "four"):
                await ws.send(word)
                echoes.append(await asyncio.wait_for(ws.recv(), 5))
                await asyncio.sleep(DEADLINE_S)  # four deadlines pass while it is open
            return echoes

    assert asyncio.run(go()) == ["one", "two", "three", "four"]


def test_a_websockets_http_side_is_freed_without_the_garbage_collector(
    port: int, protocol: type[asyncio.Protocol]
) -> None:
    async def go() -> None:
        for _ in range(20):
            async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
                await ws.send("hi")
                assert await asyncio.wait_for(ws.recv(), 5) == "hi"

    def alive() -> int:
        return sum(type(o) is protocol for o in gc.get_objects())

    gc.collect()
    gc.disable()  # what is freed now is freed by reference counting alone
    try:
        before = alive()
        asyncio.run(go())
        end = time.monotonic() + 5
        while alive() > before and time.monotonic() < end:
            time.sleep(0.05)  # a poll interval: the server thread lets go as each one closes
        left = alive() - before
    finally:
        gc.enable()
    assert left == 0, f"{left} of 20 websockets' HTTP protocols are still alive"
