"""REST: health, run status and controls, scenes, checkpoints, and the pages themselves."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import FileResponse, JSONResponse, Response

from app.paths import STATIC_DIR
from app.protocol import PROTOCOL_VERSION, CheckpointMsg, Control, RunStatus
from app.run.controls import ControlError
from app.run.runner import Runner
from app.scenes import SceneInvalid, SceneNotFound, list_scenes, load_scene
from app.web.guard import Guard
from app.web.limits import BucketsByKey

router = APIRouter()

# Pages change with the code: always revalidate (ETag / Last-Modified make that cheap).
PAGE_HEADERS = {"Cache-Control": "no-cache"}


def _runner(request: Request) -> Runner:
    return request.app.state.runner


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"type": "error", "code": code, "message": message}, status_code=status)


@router.get("/api/health", tags=["run"])
async def health(request: Request) -> dict[str, Any]:
    """`ok` only while the run can go on; otherwise `problem` says what is wrong, in one line
    (the worker stopped and is being restarted, the link to it broke, steps are not recorded).
    `notice`: what this start had to do that viewers should know (a damaged run record set
    aside), or None."""
    runner = _runner(request)
    problem = runner.problem()
    history = getattr(request.app.state, "history", None)
    return {
        "ok": problem is None,
        "problem": problem,
        "notice": history.notice if history is not None else None,
        "worker_pid": runner.worker_pid,
        "protocol": PROTOCOL_VERSION,
        "run_id": runner.view.run_id,
        "state": runner.state,
        "step": runner.view.step,
        "viewers": runner.hub.count,
    }


@router.get("/api/run", response_model=RunStatus, tags=["run"])
async def run_status(request: Request) -> RunStatus:
    return _runner(request).status()


@router.post(
    "/api/run/control",
    tags=["run"],
    responses={400: {}, 403: {}, 409: {}, 429: {}, 503: {}},
)
async def run_control(
    request: Request, control: Annotated[Control, Body(discriminator="action")]
) -> Any:
    """Same body as the websocket `control` message. The presenter token, when the server
    needs one, goes in the body's `token` or an `Authorization: Bearer <token>` header.
    Browsers may send it only from a page on one of this server's own names (its Origin)."""
    guard: Guard = request.app.state.guard
    if not guard.origin_ok(request.headers.get("origin")):
        return _error(403, "forbidden_origin", "controls are not accepted from other sites")
    buckets: BucketsByKey = request.app.state.rest_buckets
    client = request.client.host if request.client else "?"
    if not buckets.take(client):
        return _error(429, "rate_limited", "too many control requests: at most 10 a second")
    header = request.headers.get("authorization", "")
    token = control.token or (header[7:] if header.lower().startswith("bearer ") else None)
    if not guard.may_control(token):
        return _error(403, "forbidden", "controlling this run needs the presenter token")
    try:
        return await _runner(request).control(control)
    except ControlError as exc:
        return _error(exc.status, exc.code, exc.message)
    except TimeoutError:
        return _error(504, "timeout", "the training worker did not answer in time")


@router.get("/api/checkpoints", response_model=list[CheckpointMsg], tags=["run"])
async def checkpoints(request: Request) -> list[CheckpointMsg]:
    return _runner(request).view.checkpoints


@router.get("/api/scenes", tags=["scenes"])
async def scenes() -> list[dict[str, str]]:
    return list_scenes()


@router.get("/api/scenes/{name}", tags=["scenes"])
async def scene(name: str) -> Any:
    try:
        return load_scene(name).model_dump(mode="json")
    except SceneNotFound:
        return _error(404, "scene_not_found", f"no scene named {name[:64]!r}")
    except SceneInvalid as exc:
        return _error(500, "scene_invalid", str(exc))


def _page(name: str) -> Response:
    path = STATIC_DIR / name
    if not path.is_file():
        return _error(404, "not_found", f"{name} is missing from {STATIC_DIR}")
    return FileResponse(path, headers=PAGE_HEADERS)


@router.get("/", include_in_schema=False)
async def index() -> Response:
    return _page("index.html")


@router.get("/sheet", include_in_schema=False)
async def sheet() -> Response:
    """The printable question sheet: the students' copy (`?teacher` gives the teacher's)."""
    return _page("sheet.html")


@router.get("/sheet/teacher", include_in_schema=False)
async def sheet_teacher() -> Response:
    """The teacher's copy of the sheet: the same page, which shows the notes at this path."""
    return _page("sheet.html")
