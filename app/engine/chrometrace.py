"""A step's trace in the Chrome Trace Event format, for Perfetto (ui.perfetto.dev) or
chrome://tracing.

One process per server and one thread per GPU, so the picture reads like the cluster: each
GPU's lane is a row of slices (data, forward and backward per microbatch, every pass of a
ring, every round of an all-to-all, waiting, the update, the checkpoint) and every chunk a
ring pass hands on, every pair's share of an all-to-all and every pipeline send is a flow
arrow from the sender's slice to the receiver's. Pipeline sends and receives run beside
compute, so they sit on a second thread per GPU, "GPU g copies". Times are the simulated
seconds of the trace, written in microseconds as the format asks; the measured wall time here
rides along in each slice's arguments.

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
COPY_TID = 1_000_000  # thread ids of the GPUs' copy engines: COPY_TID + gpu


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
        # Named as the page names them, from 1; the ids (pid, tid) stay the engine's.
        events.append(_meta("process_name", s, 0, {"name": f"server {s + 1}"}))
        events.append(_meta("process_sort_index", s, 0, {"sort_index": s}))
    for g, s in enumerate(server_of):
        events.append(_meta("thread_name", s, g, {"name": f"GPU {g + 1}"}))
        events.append(_meta("thread_sort_index", s, g, {"sort_index": g}))
    # Pipeline sends and receives, and gradient buckets all-reduced during the backward, run
    # beside compute: they get a thread of their own per GPU (its copy engine / second
    # stream), so that no slice of a GPU's own thread overlaps another.
    copiers = {g for p in trace.p2p for g in (p.src, p.dst)}
    copiers |= {g for r in trace.rings if KINDS[r.kind]["overlaps"] for g in r.ring}
    copiers = sorted(copiers)
    for g in copiers:
        name = {"name": f"GPU {g + 1} copies"}
        events.append(_meta("thread_name", server_of[g], COPY_TID + g, name))
        events.append(_meta("thread_sort_index", server_of[g], COPY_TID + g, {"sort_index": g}))

    def tid(gpu: int, kind: str) -> int:
        return COPY_TID + gpu if KINDS[kind]["overlaps"] else gpu

    flow_id = 0
    for lane in expand(trace):
        for e in lane:
            args: dict[str, Any] = {}
            if e.wall_s is not None:
                args["wall_s"] = e.wall_s
            if e.mb is not None:
                args["mb"] = e.mb
            name = e.kind if e.mb is None else f"{e.kind} mb {e.mb}"
            if e.phase in ("send", "recv"):
                name = f"{e.kind} {e.phase}" + ("" if e.mb is None else f" mb {e.mb}")
                args.update(
                    peer=e.peer if e.peer is not None else e.src, bytes=e.bytes, link=e.link
                )
            elif e.peer is not None:
                step = "pass" if e.chunk is not None else "round"
                name = f"{e.kind} {step} {e.index}"
                args.update(peer=e.peer, bytes=e.bytes, link=e.link)
                if e.chunk is not None:
                    args.update(phase=e.phase, chunk=e.chunk)
            events.append(
                {
                    "name": name,
                    "cat": KINDS[e.kind]["group"],
                    "ph": "X",
                    "pid": server_of[e.gpu],
                    "tid": tid(e.gpu, e.kind),
                    "ts": e.t0 * US,
                    "dur": e.dur * US,
                    "args": args,
                }
            )
            if e.peer is not None:
                # The arrow leaves inside the sender's slice and lands inside the receiver's
                # slice of the same transfer (both lanes are busy for the whole of it).
                flow_id += 1
                what = f"chunk {e.chunk}" if e.chunk is not None else f"{e.bytes} bytes"
                common = {"name": what, "cat": "flow", "id": flow_id}
                events.append(
                    {
                        **common,
                        "ph": "s",
                        "pid": server_of[e.gpu],
                        "tid": tid(e.gpu, e.kind),
                        "ts": (e.t0 + 0.1 * e.dur) * US,
                    }
                )
                events.append(
                    {
                        **common,
                        "ph": "f",
                        "bp": "e",
                        "pid": server_of[e.peer],
                        "tid": tid(e.peer, e.kind),
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
