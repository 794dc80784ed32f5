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
    already makes revalidation cheap (no Last-Modified), nothing asks for byte ranges, and the
    ETag itself is 16 hex digits (64 bits of the file's version), not 32. On a first load of
    some ninety files that is several KB fewer on the wire. A browser revalidating with the
    short ETag gets its 304 here."""

    DROP = (b"last-modified", b"accept-ranges")
    ETAG_HEX = 16

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    @classmethod
    def short(cls, etag: bytes) -> bytes:
        weak = etag.startswith(b"W/")
        core = etag[2:] if weak else etag
        return (b"W/" if weak else b"") + b'"' + core.strip(b'"')[: cls.ETAG_HEX] + b'"'

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/static/"):
            await self.app(scope, receive, send)
            return
        # The app knows only its long ETags: the browser's short one is compared here.
        asked = b",".join(v for k, v in scope["headers"] if k == b"if-none-match")
        if asked:
            scope = {
                **scope,
                "headers": [(k, v) for k, v in scope["headers"] if k != b"if-none-match"],
            }
        wanted = {t.strip() for t in asked.split(b",")} if asked else set()
        unchanged = False

        async def send_lean(message: Message) -> None:
            nonlocal unchanged
            if message["type"] == "http.response.start":
                headers = []
                for k, v in message.get("headers", []):
                    if k in self.DROP:
                        continue
                    headers.append((k, self.short(v) if k == b"etag" else v))
                etag = next((v for k, v in headers if k == b"etag"), None)
                fresh = etag is not None and (
                    b"*" in wanted
                    or etag.removeprefix(b"W/") in {w.removeprefix(b"W/") for w in wanted}
                )
                if message["status"] == 200 and fresh:
                    unchanged = True
                    keep = (b"etag", b"cache-control", b"vary", b"date")
                    headers = [(k, v) for k, v in headers if k in keep]
                    message = {"type": "http.response.start", "status": 304, "headers": headers}
                else:
                    message = {**message, "headers": headers}
            elif unchanged and message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # the file's bytes: not sent, the browser has them
                message = {"type": "http.response.body", "body": b""}
            await send(message)

        await self.app(scope, receive, send_lean)
