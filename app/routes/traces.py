"""REST: any recorded step's trace, as a Chrome trace for Perfetto or as plain lanes.

The history keeps every step's trace in its compact form; this expands it on request. One
process per server, one thread per GPU, ring passes as flow arrows (app/engine/chrometrace.py).
"""

from __future__ import annotations

import json
import zlib
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, Response

from app.engine.chrometrace import MAX_EVENTS, chrome_trace
from app.engine.cluster import build_topology
from app.engine.config import RunConfig
from app.engine.trace import event_count, expand, trace_from_dict
from app.run.history import History

router = APIRouter(tags=["run"])

RUN_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"type": "error", "code": code, "message": message}, status_code=status)


@router.get(
    "/api/steps/{step}/trace",
    responses={404: {}, 413: {}},
    summary="A recorded step's trace (Chrome Trace Event format by default)",
)
def step_trace(
    request: Request,
    step: Annotated[int, Path(ge=0, le=2**31 - 1)],
    run_id: Annotated[str | None, Query(pattern=RUN_ID_PATTERN)] = None,
    format: Annotated[Literal["chrome", "compact", "lanes"], Query()] = "chrome",
) -> Any:
    """`chrome`: open it in https://ui.perfetto.dev or chrome://tracing (a file download);
    `compact`: the trace as the step message carries it; `lanes`: every GPU's events.
    The run is the current one unless `run_id` names another; after a rollback the newest
    recording of the step is the one given."""
    history: History = request.app.state.history
    run = run_id or request.app.state.runner.view.run_id
    found = history.step_trace(run, step)
    if found is None:
        return _error(404, "step_not_found", f"no recorded trace for step {step} of run {run}")
    seq, blob = found
    compact = json.loads(zlib.decompress(blob))
    if format == "compact":
        return compact
    trace = trace_from_dict(compact)
    n = event_count(trace)
    if n > MAX_EVENTS:
        return _error(
            413,
            "trace_too_large",
            f"step {step} has {n:,} events, more than the {MAX_EVENTS:,} a trace file holds "
            "here; ask for format=compact instead",
        )
    if format == "lanes":
        return {"step": step, "seq": seq, "run_id": run, "lanes": _lanes(trace)}
    config = RunConfig.from_dict(history.run_config(run) or {})
    server_of = [g.server for g in build_topology(config).gpus]
    doc = chrome_trace(
        trace,
        server_of,
        label=f"Training Run step {step} (simulated {config.preset} cluster)",
        meta={"step": step, "seq": seq, "run_id": run, "preset": config.preset},
    )
    return Response(
        json.dumps(doc, separators=(",", ":")),
        media_type="application/json",
        headers={
            "Content-Disposition": f'attachment; filename="trainingrun-{run}-step-{step}.json"'
        },
    )


def _lanes(trace) -> list[list[dict[str, Any]]]:
    out = []
    for lane in expand(trace):
        out.append([{k: v for k, v in vars(e).items() if v is not None} for e in lane])
    return out
