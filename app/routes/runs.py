"""REST for the runs a server holds (app/web/runs.py):

    GET /api/runs    the class run and every side run running now: id, kind, label,
                     source, step, state, viewers and its cluster and plan

A page watches one of them over the websocket (`/ws?run=<id>`, or a `watch` message).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

router = APIRouter(prefix="/api", tags=["runs"])


@router.get("/runs")
def list_runs(request: Request) -> dict[str, Any]:
    runs = request.app.state.runs
    return {"runs": runs.describe(), "side_runs_max": runs.max_side, "own_runs_max": runs.max_own}
