"""Headers of the page's own files: vendored libraries may be cached, the rest revalidates,
and nothing a browser does not need goes on the wire."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class CacheHeaders:
    """Vendored libraries are pinned, so browsers may keep them; everything else revalidates."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/static/"):
            await self.app(scope, receive, send)
            return
        vendor = scope["path"].startswith("/static/vendor/")
        value = b"public, max-age=604800" if vendor else b"no-cache"

        async def send_with_cache(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k != b"cache-control"]
                headers.append((b"cache-control", value))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_cache)


class LeanStaticHeaders:
    """The page's files go out without the headers a browser does not need for them: ETag
    already makes revalidation cheap (no Last-Modified), and nothing asks for byte ranges. On
    a first load of some ninety files that is several KB fewer on the wire."""

    DROP = (b"last-modified", b"accept-ranges")

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/static/"):
            await self.app(scope, receive, send)
            return

        async def send_lean(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k not in self.DROP]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_lean)
