"""POST /api/attach: the steps of a real torch.distributed job, one rank's batch at a time.

A rank's reporter (app/reporter/) sends an `AttachBatch` (app/protocol.py): who it is and its
latest measured steps. The body is validated like every control (unknown fields, wrong types
and numbers that are not finite are refused with a 422 naming the field, a step no job could
have reached with a 422 `step_out_of_range`); a server that is not loopback-only needs its
token (in the body or as `Authorization: Bearer`); a server that runs its own simulated run
(`trainingrun serve`) answers 409 and says to use `trainingrun watch`. GET /api/attach says
where the server stands with the job.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from app.attached.run import AttachedRun, AttachError
from app.protocol import AttachBatch, AttachStatusMsg
from app.web.guard import Guard

router = APIRouter()

NOT_WATCHING = (
    "this server runs its own simulated run; start `trainingrun watch` to show a real job"
)


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"type": "error", "code": code, "message": message}, status_code=status)


def _attached(request: Request) -> AttachedRun | None:
    return getattr(request.app.state, "attached", None)


@router.post("/api/attach", tags=["attach"], responses={403: {}, 409: {}, 422: {}})
async def attach(request: Request, batch: AttachBatch) -> Any:
    """One rank's measured steps. Answers `{ok, step, steps_shown}`."""
    guard: Guard = request.app.state.guard
    if not guard.origin_ok(request.headers.get("origin")):
        return _error(403, "forbidden_origin", "reports are not accepted from other sites")
    header = request.headers.get("authorization", "")
    token = batch.token or (header[7:] if header.lower().startswith("bearer ") else None)
    if not guard.may_control(token):
        return _error(
            403,
            "forbidden",
            "this server is not loopback-only: reporting to it needs its token "
            "(Reporter(url, token=...) or TRAININGRUN_TOKEN)",
        )
    run = _attached(request)
    if run is None:
        return _error(409, "not_watching", NOT_WATCHING)
    try:
        return run.ingest(batch)
    except AttachError as exc:
        return _error(exc.status, exc.code, exc.message)


@router.get("/api/attach", response_model=AttachStatusMsg, tags=["attach"])
async def attach_status(request: Request) -> Any:
    """Whether a job is attached, how many of its ranks report, and how many reports they
    dropped while they could not send."""
    run = _attached(request)
    if run is None:
        return _error(409, "not_watching", NOT_WATCHING)
    return run.status_msg()
