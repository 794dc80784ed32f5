"""The web server: `create_app(settings)` builds the FastAPI app, `serve_main` runs it.

The app serves the page and its files (gzip-compressed, with cache headers), REST under
/api, the live stream on /ws and the OpenAPI docs on /docs. Its lifespan starts the training
worker and, on the way out, stops it after a final checkpoint, so a restart redoes nothing.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import webbrowser
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.history import History
from app.hub import Hub
from app.paths import STATIC_DIR
from app.protocol import parse_speed
from app.routes import http, ws
from app.runner import Runner
from app.security import BucketsByKey, Guard
from app.settings import Settings

log = logging.getLogger("trainingrun")

# Frames up to 1 MiB reach the app, which answers anything over the 64 KiB limit with an
# error; beyond 1 MiB the websocket layer closes the connection (1009) before buffering it.
WS_MAX_SIZE = 1024 * 1024

try:  # the labs' REST routes; a checkout without them still serves the run
    from app.routes import labs as _labs
except ImportError as exc:  # pragma: no cover - only while the labs are being written
    _labs = None
    log.warning("lab routes unavailable (%s); /api/labs/* will 404", exc)


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


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    guard = Guard(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        history = History(settings.db_path)
        hub = Hub(
            max_fps=settings.max_fps,
            queue_limit=settings.client_queue_limit,
            send_timeout_s=settings.send_timeout_s,
        )
        runner = Runner(settings, hub, history)
        app.state.hub, app.state.history, app.state.runner = hub, history, runner
        await runner.start()
        try:
            yield
        finally:
            await hub.close_all()
            await runner.stop()
            history.close()

    app = FastAPI(
        title="Training Run",
        summary="A real, small training run on a simulated GPU cluster, streamed live.",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.guard = guard
    app.state.rest_buckets = BucketsByKey(settings.control_rate, settings.control_burst)
    app.include_router(http.router)
    app.include_router(ws.router)
    if _labs is not None:
        app.include_router(_labs.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static")
    app.add_middleware(CacheHeaders)
    app.add_middleware(GZipMiddleware, minimum_size=500)
    return app


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="trainingrun serve",
        description="Serve the live training run (settings also from TRAININGRUN_* variables).",
    )
    p.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default 8000; 0 picks a free one)")
    p.add_argument("--run-dir", help="data lake, checkpoints, runs.sqlite (./runs/default)")
    p.add_argument("--preset", help="simulated hardware: h100, a100 or b200")
    p.add_argument("--gpus", type=int, help="simulated GPUs in total (default 32)")
    p.add_argument("--servers", type=int, help="servers they are spread over (default 4)")
    p.add_argument("--seed", type=int, help="the run's seed (default 0)")
    p.add_argument("--batch-size", type=int, help="global batch (default 128, or one per GPU)")
    p.add_argument("--checkpoint-every", type=int, help="steps between checkpoints (50)")
    p.add_argument("--speed", help="lesson (a step every 2 s), max, or steps per second")
    p.add_argument("--fresh", action="store_true", default=None, help="start a new run")
    p.add_argument("--open", dest="open_browser", action="store_true", default=None)
    p.add_argument("--token", help="presenter token needed for controls on a public server")
    p.add_argument(
        "--public", action="store_true", default=None, help="require the token even on loopback"
    )
    p.add_argument("--rest-after", dest="rest_after_s", type=float, help="idle seconds (0: never)")
    p.add_argument("--max-fps", type=float, help="most step frames per second to each viewer")
    p.add_argument("--log-level", help="uvicorn log level (info)")
    return p


def settings_from_args(argv: list[str]) -> Settings:
    args = build_parser().parse_args(argv)
    given: dict[str, Any] = {k: v for k, v in vars(args).items() if v is not None}
    if "speed" in given:
        try:
            given["speed"] = parse_speed(given["speed"])
        except ValueError as exc:
            build_parser().error(str(exc))
    return Settings(**given)


def serve_main(argv: list[str] | None = None) -> int:
    import uvicorn

    settings = settings_from_args(list(sys.argv[1:] if argv is None else argv))
    app = create_app(settings)
    guard: Guard = app.state.guard
    shown = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    url = f"http://{shown}:{settings.port}/"
    print(f"Training Run: {url}  (run dir {settings.run_dir})", flush=True)
    if guard.public:
        print(f"Public server: anyone can watch; to control open {url}?token={guard.token}")
    if settings.open_browser:
        threading.Timer(1.5, webbrowser.open, args=(url,)).start()
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        ws_max_size=WS_MAX_SIZE,
        # Frames are serialised once and sent to every viewer as they are; per-message
        # compression would redo that work for each viewer and each frame.
        ws_per_message_deflate=False,
        timeout_graceful_shutdown=5,
    )
    try:
        uvicorn.Server(config).run()
    except KeyboardInterrupt:
        pass  # uvicorn re-raises Ctrl+C after its clean shutdown; that is a normal exit
    return 0
