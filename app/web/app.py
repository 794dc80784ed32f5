"""The web server: `create_app(settings)` builds the FastAPI app (`trainingrun serve`, in
app/cli/serve.py, runs it).

The app serves the page and its files (gzip-compressed, with cache headers), REST under
/api, the live stream on /ws and the OpenAPI docs on /docs. Its lifespan starts the training
worker and, on the way out, stops it after a final checkpoint, so a restart redoes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware

from app.attached.run import AttachedRun
from app.paths import STATIC_DIR
from app.protocol import CLASS_RUN
from app.routes import attach as attach_routes
from app.routes import http, join, traces, ws
from app.routes import locale as locale_routes
from app.routes import runs as runs_routes
from app.routes import steps as steps_routes
from app.routes import story as story_routes
from app.run.history import History
from app.run.runner import Runner
from app.settings import Settings
from app.web.errors import validation_error_handler
from app.web.guard import Guard, HostCheck
from app.web.hub import Hub
from app.web.limits import BodyLimit, BucketsByKey
from app.web.presenter import Presenter
from app.web.redact import install_log_redaction
from app.web.runs import RunEntry, Runs
from app.web.statics import CacheHeaders, LeanStaticHeaders

log = logging.getLogger("trainingrun")

# Frames up to 1 MiB reach the app, which answers anything over the 64 KiB limit with an
# error; beyond 1 MiB the websocket layer closes the connection (1009) before buffering it.
WS_MAX_SIZE = 1024 * 1024

try:  # the labs' REST routes; a checkout without them still serves the run
    from app.routes import labs as _labs
except ImportError as exc:  # pragma: no cover - only while the labs are being written
    _labs = None
    log.warning("lab routes unavailable (%s); /api/labs/* will 404", exc)


def create_app(settings: Settings | None = None, *, watch: bool = False) -> FastAPI:
    """`watch`: no built-in run; the page shows a real job that attaches (app/attached/run.py)."""
    settings = settings or Settings()
    guard = Guard(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        history = History(settings.db_path)

        def make_hub() -> Hub:
            return Hub(
                max_fps=settings.max_fps,
                queue_limit=settings.client_queue_limit,
                send_timeout_s=settings.send_timeout_s,
            )

        hub = make_hub()
        if watch:
            shown = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
            url = f"http://{shown}:{settings.port}"
            runner = app.state.attached = AttachedRun(hub, history, url=url)
        else:
            runner = Runner(settings.runner_options(), hub, history)
        app.state.hub, app.state.history, app.state.runner = hub, history, runner
        kind = "attached" if watch else "class"
        runs = app.state.runs = Runs(
            RunEntry(CLASS_RUN, kind, "the class run", runner, hub),
            side_runs=story_routes.side_run,
            recorded=story_routes.is_recorded,
            make_hub=make_hub,
            options=settings.runner_options(),
            max_side=settings.side_runs,
        )
        # The presenter speaks to every page, whichever run it watches.
        app.state.presenter = Presenter(runs)
        await runner.start()
        runs.start_reaper()
        try:
            yield
        finally:
            await runs.close()
            await hub.close_all()
            await runner.stop()
            history.close()

    app = FastAPI(
        title="Training Run",
        summary="A real, small training run on a simulated GPU cluster, streamed live.",
        version="0.1.0",
        lifespan=lifespan,
        # FastAPI's own docs pages load Swagger UI and ReDoc from a CDN; /docs is served
        # below from the vendored copy instead, so it works offline.
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.guard = guard
    app.state.rest_buckets = BucketsByKey(settings.control_rate, settings.control_burst)
    app.include_router(http.router)
    app.include_router(ws.router)
    app.include_router(runs_routes.router)
    app.include_router(traces.router)
    app.include_router(steps_routes.router)
    app.include_router(attach_routes.router)
    app.include_router(join.router)
    app.include_router(story_routes.router)
    app.include_router(locale_routes.router)
    if _labs is not None:
        app.include_router(_labs.router)
    _add_docs(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static")
    app.add_middleware(CacheHeaders)
    app.add_middleware(LeanStaticHeaders)
    app.add_middleware(GZipMiddleware, minimum_size=500)
    # Added last, so they run first: nothing else sees a foreign Host or an oversized body.
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    app.add_middleware(HostCheck, guard=guard)
    # FastAPI's own 422 repeats the input, which may be megabytes or not valid JSON (NaN).
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    install_log_redaction()
    return app


SWAGGER_UI = "/static/vendor/swagger-ui"


def _add_docs(app: FastAPI) -> None:
    """Swagger UI on /docs from the vendored swagger-ui-dist (see static/vendor/README.md)."""

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} - API docs",
            swagger_js_url=f"{SWAGGER_UI}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER_UI}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER_UI}/favicon-32x32.png",
            # The API has no OAuth flows, so no /docs/oauth2-redirect page either.
            oauth2_redirect_url=None,
            # Swagger UI would otherwise ask validator.swagger.io for a badge.
            swagger_ui_parameters={"validatorUrl": None},
        )
