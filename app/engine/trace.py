"""One training step as a trace: per GPU, a lane of timed events.

A step is a schedule, not a fixed list of phases. Every GPU has a lane; each event on it has
a kind (what the GPU is doing), a start and a duration in simulated seconds, the measured
wall time here where there is one, and, for transfers, the peer, the bytes and the link. A
data-parallel step is six spans that every lane shares (data, forward, backward, the ring
all-reduce, the update, and a checkpoint when one is written); pipeline stages, microbatches,
tensor-parallel joins and expert traffic add events to the same lanes.

The trace is kept and sent in a compact form, which `expand` turns into full lanes:

- a `Span` is one kind of work on a set of lanes at once (all of them by default);
- a `RingCollective` is a whole ring collective: 2(G-1) passes in which every GPU of the
  ring sends one chunk to its neighbour over its link. Each pass lasts as long as its slowest
  hop (the slowest link sets the pace of a ring); the chunk each GPU sends follows from the
  ring algorithm, so only the pass times, the ring, its links and the chunk sizes are stored.

The browser expands the same form (static/js/scene/trace.js) and a test checks that both
expansions agree event for event.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# Every kind of event, the time-bar group it adds to, and whether it moves data between GPUs.
# The page reads this table from the `hello` message; it is the one list of kinds there is.
KINDS: dict[str, dict[str, str | bool]] = {
    "data": {"group": "data", "transfer": False},
    "forward": {"group": "compute", "transfer": False},
    "backward": {"group": "compute", "transfer": False},
    "optimizer": {"group": "compute", "transfer": False},
    "allreduce": {"group": "allreduce", "transfer": True},
    "checkpoint": {"group": "checkpoint", "transfer": False},
    "wait": {"group": "wait", "transfer": False},
}

# The time bar's groups, in the order they are drawn, with what they are called on screen.
GROUPS: list[tuple[str, str]] = [
    ("data", "data"),
    ("compute", "compute (forward + backward + update)"),
    ("allreduce", "all-reduce"),
    ("checkpoint", "checkpoint"),
    ("wait", "waiting"),
]

RING_PHASES = ("reduce_scatter", "all_gather")


@dataclass
class Span:
    """One kind of work on a set of lanes at once."""

    kind: str  # one of KINDS
    t0: float  # simulated seconds from the start of the step
    dur: float
    lanes: list[int] | None = None  # None: every lane
    wall_s: float | None = None  # measured seconds here, for the whole span


@dataclass
class RingCollective:
    """A ring all-reduce: reduce-scatter then all-gather, one chunk per GPU per pass."""

    kind: str  # "allreduce"
    t0: float
    # Seconds of each pass, run-length encoded as [seconds, how many passes in a row].
    pass_s: list[tuple[float, int]]
    ring: list[int]  # GPU ids in ring order; position i sends to position i + 1
    links: list[str]  # link kind of each position's outgoing hop
    chunk_bytes: list[int]  # bytes of each chunk
    wall_s: float | None = None

    @property
    def passes(self) -> int:
        return sum(n for _, n in self.pass_s)

    @property
    def dur(self) -> float:
        return sum(s * n for s, n in self.pass_s)


@dataclass
class StepTrace:
    gpus: int  # lanes, one per GPU
    step_s: float  # simulated seconds from the first event's start to the last one's end
    spans: list[Span] = field(default_factory=list)
    rings: list[RingCollective] = field(default_factory=list)


@dataclass
class LaneEvent:
    """One event on one lane, as `expand` gives it."""

    gpu: int
    kind: str
    t0: float
    dur: float
    wall_s: float | None = None
    # Transfers only:
    peer: int | None = None  # the GPU this one sends to
    src: int | None = None  # the GPU this one receives from
    bytes: int | None = None
    link: str | None = None
    index: int | None = None  # 1-based pass of a ring collective
    phase: str | None = None  # "reduce_scatter" | "all_gather"
    chunk: int | None = None

    @property
    def t1(self) -> float:
        return self.t0 + self.dur


def run_length(values: Iterable[float]) -> list[tuple[float, int]]:
    """[a, a, a, b] -> [(a, 3), (b, 1)]: the passes of a ring mostly take the same time."""
    out: list[tuple[float, int]] = []
    for v in values:
        v = float(v)
        if out and out[-1][0] == v:
            out[-1] = (v, out[-1][1] + 1)
        else:
            out.append((v, 1))
    return out


def ring_chunk(position: int, index: int, g: int) -> tuple[str, int]:
    """(phase, chunk) that ring position `position` sends in 1-based pass `index`.

    Reduce-scatter pass k (0-based) sends chunk (i - k) mod G; all-gather pass k forwards
    chunk (i + 1 - k) mod G (see collectives.ring_allreduce_)."""
    if index <= g - 1:
        return RING_PHASES[0], (position - (index - 1)) % g
    return RING_PHASES[1], (position + 1 - (index - g)) % g


def expand_ring(r: RingCollective) -> Iterable[LaneEvent]:
    g = len(r.ring)
    t = r.t0
    index = 0
    for seconds, repeat in r.pass_s:
        for _ in range(repeat):
            index += 1
            for i, src in enumerate(r.ring):
                phase, chunk = ring_chunk(i, index, g)
                yield LaneEvent(
                    gpu=src,
                    kind=r.kind,
                    t0=t,
                    dur=seconds,
                    wall_s=r.wall_s,
                    peer=r.ring[(i + 1) % g],
                    src=r.ring[(i - 1) % g],
                    bytes=r.chunk_bytes[chunk],
                    link=r.links[i],
                    index=index,
                    phase=phase,
                    chunk=chunk,
                )
            t += seconds


def expand(trace: StepTrace) -> list[list[LaneEvent]]:
    """Every lane's events, each lane in time order."""
    lanes: list[list[LaneEvent]] = [[] for _ in range(trace.gpus)]
    for s in trace.spans:
        for g in range(trace.gpus) if s.lanes is None else s.lanes:
            lanes[g].append(LaneEvent(gpu=g, kind=s.kind, t0=s.t0, dur=s.dur, wall_s=s.wall_s))
    for r in trace.rings:
        for e in expand_ring(r):
            lanes[e.gpu].append(e)
    for lane in lanes:
        lane.sort(key=lambda e: (e.t0, e.t1))
    return lanes


def event_count(trace: StepTrace) -> int:
    """How many events `expand` would make, without making them."""
    n = sum(trace.gpus if s.lanes is None else len(s.lanes) for s in trace.spans)
    return n + sum(r.passes * len(r.ring) for r in trace.rings)


def trace_from_dict(d: dict) -> StepTrace:
    """A trace from its JSON form (as sent and stored)."""
    return StepTrace(
        gpus=int(d["gpus"]),
        step_s=float(d["step_s"]),
        spans=[Span(**s) for s in d.get("spans", [])],
        rings=[
            RingCollective(**{**r, "pass_s": [(float(a), int(b)) for a, b in r["pass_s"]]})
            for r in d.get("rings", [])
        ],
    )


def lane_sums(trace: StepTrace) -> list[dict[str, float]]:
    """Seconds each lane spends in each time-bar group."""
    sums: list[dict[str, float]] = []
    for lane in expand(trace):
        by_group: dict[str, float] = {}
        for e in lane:
            group = str(KINDS[e.kind]["group"])
            by_group[group] = by_group.get(group, 0.0) + e.dur
        sums.append(by_group)
    return sums


class StepTraceBuilder:
    """Lays a step's work out in time: each span starts where the previous one ended."""

    def __init__(self, gpus: int) -> None:
        self.gpus = gpus
        self.t = 0.0
        self.trace = StepTrace(gpus=gpus, step_s=0.0)

    def span(
        self,
        kind: str,
        seconds: float,
        *,
        wall_s: float | None = None,
        lanes: Sequence[int] | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown trace event kind {kind!r}")
        span = Span(kind, self.t, float(seconds), None if lanes is None else list(lanes), wall_s)
        self.trace.spans.append(span)
        self.t += float(seconds)

    def ring(
        self,
        kind: str,
        pass_seconds: Iterable[float],
        *,
        ring: Sequence[int],
        links: Sequence[str],
        chunk_bytes: Sequence[int],
        wall_s: float | None = None,
    ) -> None:
        if not KINDS.get(kind, {}).get("transfer"):
            raise ValueError(f"{kind!r} is not a transfer kind")
        r = RingCollective(
            kind=kind,
            t0=self.t,
            pass_s=run_length(pass_seconds),
            ring=list(ring),
            links=list(links),
            chunk_bytes=[int(b) for b in chunk_bytes],
            wall_s=wall_s,
        )
        if r.passes:
            self.trace.rings.append(r)
            self.t += r.dur

    def done(self) -> StepTrace:
        self.trace.step_s = self.t
        return self.trace
