"""REST: the recorded run, page by page (`GET /api/steps?from=&to=`), for the page's rewind.

Every step's figures are in runs.sqlite from the moment it is shown; the probe of each step
that computed one is kept beside them, so a past step shows the probe as it stood then. A
step's drawing comes from its recorded trace (`GET /api/steps/{step}/trace?format=compact`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from app.protocol import RecordedStepMsg, StepsPage
from app.run.history import STEPS_PAGE_MAX, History

router = APIRouter(tags=["run"])

RUN_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
STEP_MAX = 2**31 - 1


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"type": "error", "code": code, "message": message}, status_code=status)


@router.get(
    "/api/steps",
    response_model=StepsPage,
    responses={400: {}, 404: {}},
    summary="Recorded steps from..to of the run, a page at a time",
)
def steps_page(
    request: Request,
    from_step: Annotated[int, Query(alias="from", ge=0, le=STEP_MAX)] = 0,
    to_step: Annotated[int, Query(alias="to", ge=0, le=STEP_MAX)] = STEP_MAX,
    limit: Annotated[int, Query(ge=1, le=STEPS_PAGE_MAX)] = 200,
    after_seq: Annotated[int, Query(ge=0, le=2**62)] = 0,
    run_id: Annotated[str | None, Query(pattern=RUN_ID_PATTERN)] = None,
) -> StepsPage | JSONResponse:
    """Steps numbered `from` to `to` (both included) in the order they were trained, at most
    `limit` (1 to 1000) a page. When more remain, `next_after_seq` is set: ask again with
    `after_seq` set to it. The run is the current one unless `run_id` names another."""
    if from_step > to_step:
        return _error(400, "bad_range", f"from ({from_step}) must not be after to ({to_step})")
    history: History = request.app.state.history
    runner = request.app.state.runner
    run = run_id or getattr(getattr(runner, "view", None), "run_id", None)
    if not run:
        return _error(404, "no_run", "no run has been recorded yet")
    if run_id is not None and history.run_config(run_id) is None:
        return _error(404, "run_not_found", f"no recorded run {run_id!r}")
    rows = history.steps_page(run, from_step, to_step, after_seq=after_seq, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    span = history.step_span(run)
    kept = []
    if run == getattr(getattr(runner, "view", None), "run_id", None):
        kept = sorted(c.step for c in getattr(runner.view, "checkpoints", []) if c.ok)
    return StepsPage(
        run_id=run,
        from_step=from_step,
        to_step=to_step,
        first_step=span[0] if span else None,
        last_step=span[1] if span else None,
        recorded=span[2] if span else 0,
        steps=[RecordedStepMsg.model_validate(r) for r in rows],
        next_after_seq=rows[-1]["seq"] if more and rows else None,
        checkpoints=kept,
    )
