"""A step's trace in the Chrome Trace Event format, for Perfetto (ui.perfetto.dev) or
chrome://tracing.

One process per server and one thread per GPU, so the picture reads like the cluster: each
GPU's lane is a row of slices (data, forward, backward, every ring pass, the update, the
checkpoint) and every chunk a ring pass hands on is a flow arrow from the sender's slice to
the receiver's. Times are the simulated seconds of the trace, written in microseconds as the
format asks; the measured wall time here rides along in each slice's arguments.

Format reference: "Trace Event Format" (Google, the document linked from the Catapult
project): complete events `ph: "X"`, metadata `ph: "M"`, flow events `ph: "s"` / `ph: "f"`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .trace import KINDS, StepTrace, event_count, expand

US = 1e6  # the format counts microseconds
# Beyond this many events a trace file is too big to be useful in a browser or in Perfetto
# (a 4,096-GPU ring all-reduce alone has 33 million sends).
MAX_EVENTS = 300_000


class TraceTooLarge(ValueError):
    """The step has more events than one trace file should hold."""

    def __init__(self, events: int) -> None:
        super().__init__(
            f"the step has {events:,} events, more than the {MAX_EVENTS:,} a trace file holds"
        )
        self.events = events


def chrome_trace(
    trace: StepTrace,
    server_of: Sequence[int],
    *,
    label: str = "",
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The trace as a JSON-ready dict. `server_of[g]` is the server GPU g sits in.
    Raises TraceTooLarge past MAX_EVENTS events."""
    n = event_count(trace)
    if n > MAX_EVENTS:
        raise TraceTooLarge(n)
    events: list[dict[str, Any]] = []
    servers = sorted(set(server_of))
    for s in servers:
        events.append(_meta("process_name", s, 0, {"name": f"server {s}"}))
        events.append(_meta("process_sort_index", s, 0, {"sort_index": s}))
    for g, s in enumerate(server_of):
        events.append(_meta("thread_name", s, g, {"name": f"GPU {g}"}))
        events.append(_meta("thread_sort_index", s, g, {"sort_index": g}))
    flow_id = 0
    for lane in expand(trace):
        for e in lane:
            args: dict[str, Any] = {}
            if e.wall_s is not None:
                args["wall_s"] = e.wall_s
            name = e.kind
            if e.peer is not None:
                name = f"{e.kind} pass {e.index}"
                args.update(peer=e.peer, bytes=e.bytes, link=e.link, phase=e.phase, chunk=e.chunk)
            events.append(
                {
                    "name": name,
                    "cat": KINDS[e.kind]["group"],
                    "ph": "X",
                    "pid": server_of[e.gpu],
                    "tid": e.gpu,
                    "ts": e.t0 * US,
                    "dur": e.dur * US,
                    "args": args,
                }
            )
            if e.peer is not None:
                # The arrow leaves inside the sender's slice and lands inside the receiver's
                # slice of the same pass (both lanes are busy for the whole pass).
                flow_id += 1
                common = {"name": f"chunk {e.chunk}", "cat": "flow", "id": flow_id}
                events.append(
                    {
                        **common,
                        "ph": "s",
                        "pid": server_of[e.gpu],
                        "tid": e.gpu,
                        "ts": (e.t0 + 0.1 * e.dur) * US,
                    }
                )
                events.append(
                    {
                        **common,
                        "ph": "f",
                        "bp": "e",
                        "pid": server_of[e.peer],
                        "tid": e.peer,
                        "ts": (e.t0 + 0.9 * e.dur) * US,
                    }
                )
    other = {"step_s": trace.step_s, "gpus": trace.gpus, "time": "simulated"}
    if label:
        other["label"] = label
    other.update(meta or {})
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}


def _meta(name: str, pid: int, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": args}
