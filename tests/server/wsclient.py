"""A small websocket test client: read typed messages with deadlines, send controls."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import websockets

from app.protocol import server_message_adapter


class Client:
    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws

    @classmethod
    async def connect(cls, url: str, **kw: Any) -> Client:
        return cls(await websockets.connect(url, max_size=2**22, **kw))

    async def recv(self, timeout: float = 15.0) -> dict[str, Any]:
        text = await asyncio.wait_for(self.ws.recv(), timeout)
        msg = json.loads(text)
        server_message_adapter.validate_python(msg)  # every frame honours the contract
        return msg

    async def until(self, pred: Any, timeout: float = 20.0) -> dict[str, Any]:
        """Read until a message matches `pred` (a type name or a callable)."""
        test = (lambda m: m["type"] == pred) if isinstance(pred, str) else pred
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            msg = await self.recv(max(0.01, end - loop.time()))
            if test(msg):
                return msg

    async def send(self, obj: Any) -> None:
        await self.ws.send(obj if isinstance(obj, str | bytes) else json.dumps(obj))

    async def control(self, action: str, **kw: Any) -> None:
        await self.send({"type": "control", "action": action, **kw})

    async def close(self) -> None:
        await self.ws.close()


def is_event(kind: str) -> Any:
    return lambda m: m["type"] == "event" and m["kind"] == kind


def is_error(code: str) -> Any:
    return lambda m: m["type"] == "error" and m["code"] == code
