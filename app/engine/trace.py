"""One training step as a trace: per GPU, a lane of timed events.

A step is a schedule, not a fixed list of phases. Every GPU has a lane; each event on it has
a kind (what the GPU is doing), a start and a duration in simulated seconds, the measured
wall time here where there is one, and, for transfers, the peer, the bytes and the link. A
data-parallel step is spans that every lane shares (data, forward, backward, the update) and
the gradient all-reduce in buckets (a ring each; those that start during the backward run
beside it), then a checkpoint when one is written: on the lanes of the GPUs that write it,
the others waiting; pipeline stages, microbatches, tensor-parallel joins and expert traffic
add events to the same lanes.

The trace is kept and sent in a compact form, which `expand` turns into full lanes:

- a `Span` is one kind of work on a set of lanes at once (all of them by default);
- a `RingCollective` is a whole ring collective: 2(G-1) passes in which every GPU of the
  ring sends one chunk to its neighbour over its link. Each pass lasts as long as its slowest
  hop (the slowest link sets the pace of a ring); the chunk each GPU sends follows from the
  ring algorithm, so only the pass times, the ring, its links and the chunk sizes are stored.
  The data-parallel gradient all-reduce is one per DP group, a tensor-parallel join
  ("tp_allreduce") one per TP group;
- a `P2P` is one point-to-point transfer (a pipeline stage sending activations forward or
  gradients back): a send on the sender's lane and a receive on the receiver's, both for
  the transfer's whole time. Such transfers run on the GPUs' copy engines beside their
  compute (KINDS marks them `overlaps`), so they add no time of their own to a lane;
- an `AllToAll` is an all-to-all among a group (tokens to the GPUs holding their experts
  and back), run as g-1 rounds of pairwise exchange: in round k the GPU at position i sends
  to position i+k and receives from i-k. Only the round times, the group, and the bytes and
  link of every pair are stored.

Spans carry the microbatch they work on (`mb`) where a step has several. Idle time is a
"wait" span, so every lane's events, those that overlap aside, add up to the step time.

The browser expands the same form (static/js/scene/trace.js) and a test checks that both
expansions agree event for event.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# Every kind of event, the time-bar group it adds to, and whether it moves data between GPUs.
# The page reads this table from the `hello` message; it is the one list of kinds there is.
# `overlaps`: runs beside the lane's other events (on a copy engine or a second stream),
# adding no time to it.
KINDS: dict[str, dict[str, str | bool]] = {
    "data": {"group": "data", "transfer": False, "overlaps": False},
    "forward": {"group": "compute", "transfer": False, "overlaps": False},
    "backward": {"group": "compute", "transfer": False, "overlaps": False},
    "optimizer": {"group": "update", "transfer": False, "overlaps": False},
    # The gradient all-reduce, in buckets (timing.py rule 5): a bucket that starts while the
    # backward pass is still running goes on the lane's communication stream beside it
    # ("allreduce_hidden"); what the lane then still waits for after the backward is
    # "allreduce_wait"; buckets that start after the backward are "allreduce" on the lane.
    "allreduce": {"group": "allreduce", "transfer": True, "overlaps": False},
    "allreduce_hidden": {"group": "allreduce_hidden", "transfer": True, "overlaps": True},
    "allreduce_wait": {"group": "allreduce", "transfer": False, "overlaps": False},
    "tp_allreduce": {"group": "tensor", "transfer": True, "overlaps": False},
    "all_to_all": {"group": "experts", "transfer": True, "overlaps": False},
    "p2p": {"group": "pipeline", "transfer": True, "overlaps": True},
    "checkpoint": {"group": "checkpoint", "transfer": False, "overlaps": False},
    "wait": {"group": "wait", "transfer": False, "overlaps": False},
}

# The time bar's groups, in the order they are drawn, with what they are called on screen.
GROUPS: list[tuple[str, str]] = [
    ("data", "data"),
    ("compute", "compute (forward + backward)"),
    ("update", "optimizer update"),
    ("tensor", "tensor-parallel all-reduce"),
    ("experts", "expert all-to-all"),
    ("allreduce", "gradient all-reduce (exposed)"),
    ("allreduce_hidden", "gradient all-reduce hidden under backward (beside compute)"),
    ("pipeline", "pipeline send / receive (beside compute)"),
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
    mb: int | None = None  # the microbatch it works on, where the step has several


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
    mb: int | None = None  # the microbatch a tensor-parallel join belongs to

    @property
    def passes(self) -> int:
        return sum(n for _, n in self.pass_s)

    @property
    def dur(self) -> float:
        return sum(s * n for s, n in self.pass_s)


@dataclass
class P2P:
    """A point-to-point transfer: a send on `src`'s lane, a receive on `dst`'s."""

    kind: str  # "p2p"
    t0: float
    dur: float
    src: int
    dst: int
    bytes: int
    link: str
    mb: int | None = None


@dataclass
class AllToAll:
    """An all-to-all among `gpus` as g-1 rounds of pairwise exchange."""

    kind: str  # "all_to_all"
    t0: float
    round_s: list[float]  # seconds of each round (g - 1 of them)
    gpus: list[int]
    bytes: list[int]  # g * g, row-major: bytes[i * g + j] sent by gpus[i] to gpus[j]
    links: list[str]  # g * g: the link each pair's bytes cross ("" on the diagonal)
    mb: int | None = None

    @property
    def dur(self) -> float:
        return float(sum(self.round_s))


@dataclass
class StepTrace:
    gpus: int  # lanes, one per GPU
    step_s: float  # simulated seconds from the first event's start to the last one's end
    spans: list[Span] = field(default_factory=list)
    rings: list[RingCollective] = field(default_factory=list)
    p2p: list[P2P] = field(default_factory=list)
    all_to_all: list[AllToAll] = field(default_factory=list)


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
    index: int | None = None  # 1-based pass of a ring collective, round of an all-to-all
    phase: str | None = None  # "reduce_scatter" | "all_gather" | "send" | "recv"
    chunk: int | None = None
    mb: int | None = None  # microbatch

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
                    mb=r.mb,
                )
            t += seconds


def expand_p2p(p: P2P) -> Iterable[LaneEvent]:
    common = dict(kind=p.kind, t0=p.t0, dur=p.dur, bytes=p.bytes, link=p.link, mb=p.mb)
    yield LaneEvent(gpu=p.src, peer=p.dst, phase="send", **common)
    yield LaneEvent(gpu=p.dst, src=p.src, phase="recv", **common)


def expand_all_to_all(a: AllToAll) -> Iterable[LaneEvent]:
    g = len(a.gpus)
    t = a.t0
    for k, seconds in enumerate(a.round_s, start=1):
        for i, gpu in enumerate(a.gpus):
            j = (i + k) % g
            yield LaneEvent(
                gpu=gpu,
                kind=a.kind,
                t0=t,
                dur=seconds,
                peer=a.gpus[j],
                src=a.gpus[(i - k) % g],
                bytes=a.bytes[i * g + j],
                link=a.links[i * g + j],
                index=k,
                mb=a.mb,
            )
        t += seconds


def expand(trace: StepTrace) -> list[list[LaneEvent]]:
    """Every lane's events, each lane in time order."""
    lanes: list[list[LaneEvent]] = [[] for _ in range(trace.gpus)]
    for s in trace.spans:
        for g in range(trace.gpus) if s.lanes is None else s.lanes:
            lanes[g].append(
                LaneEvent(gpu=g, kind=s.kind, t0=s.t0, dur=s.dur, wall_s=s.wall_s, mb=s.mb)
            )
    for r in trace.rings:
        for e in expand_ring(r):
            lanes[e.gpu].append(e)
    for p in trace.p2p:
        for e in expand_p2p(p):
            lanes[e.gpu].append(e)
    for a in trace.all_to_all:
        for e in expand_all_to_all(a):
            lanes[e.gpu].append(e)
    for lane in lanes:
        lane.sort(key=lambda e: (e.t0, e.t1))
    return lanes


def event_count(trace: StepTrace) -> int:
    """How many events `expand` would make, without making them."""
    n = sum(trace.gpus if s.lanes is None else len(s.lanes) for s in trace.spans)
    n += 2 * len(trace.p2p) + sum(len(a.round_s) * len(a.gpus) for a in trace.all_to_all)
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
        p2p=[P2P(**p) for p in d.get("p2p", [])],
        all_to_all=[AllToAll(**a) for a in d.get("all_to_all", [])],
    )


def lane_sums(trace: StepTrace) -> list[dict[str, float]]:
    """Seconds each lane spends in each time-bar group. Kinds that overlap the lane's other
    events (pipeline sends and receives, the hidden part of the all-reduce) are left out:
    they take no time of the lane's own, so what is left adds up to the step time."""
    sums: list[dict[str, float]] = []
    for lane in expand(trace):
        by_group: dict[str, float] = {}
        for e in lane:
            if KINDS[e.kind]["overlaps"]:
                continue
            group = str(KINDS[e.kind]["group"])
            by_group[group] = by_group.get(group, 0.0) + e.dur
        sums.append(by_group)
    return sums


def bytes_by_kind(trace: StepTrace) -> dict[str, int]:
    """Bytes sent between GPUs in the step, by event kind."""
    out: dict[str, int] = {}

    def add(kind: str, n: int) -> None:
        out[kind] = out.get(kind, 0) + int(n)

    for r in trace.rings:
        # Every pass of a ring sends each chunk once (a permutation of the chunks).
        add(r.kind, r.passes * sum(r.chunk_bytes) if len(r.ring) > 1 else 0)
    for p in trace.p2p:
        add(p.kind, p.bytes)
    for a in trace.all_to_all:
        add(a.kind, sum(a.bytes))
    return out


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
        mb: int | None = None,
    ) -> None:
        """`kind` for `seconds` from the current time on, which then moves on."""
        self.add_span(kind, self.t, seconds, lanes=lanes, wall_s=wall_s, mb=mb)
        self.t += float(seconds)

    def add_span(
        self,
        kind: str,
        t0: float,
        seconds: float,
        *,
        lanes: Sequence[int] | None = None,
        wall_s: float | None = None,
        mb: int | None = None,
    ) -> None:
        """A span at a given time (the current time does not move)."""
        if kind not in KINDS:
            raise ValueError(f"unknown trace event kind {kind!r}")
        lanes_ = None if lanes is None else list(lanes)
        self.trace.spans.append(Span(kind, float(t0), float(seconds), lanes_, wall_s, mb))

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
        self.t += self.add_ring(
            kind,
            self.t,
            pass_seconds,
            ring=ring,
            links=links,
            chunk_bytes=chunk_bytes,
            wall_s=wall_s,
        )

    def add_ring(
        self,
        kind: str,
        t0: float,
        pass_seconds: Iterable[float],
        *,
        ring: Sequence[int],
        links: Sequence[str],
        chunk_bytes: Sequence[int],
        wall_s: float | None = None,
        mb: int | None = None,
    ) -> float:
        """A ring collective from t0; returns its seconds (0 for a ring of one GPU)."""
        _transfer_kind(kind)
        r = RingCollective(
            kind=kind,
            t0=float(t0),
            pass_s=run_length(pass_seconds),
            ring=list(ring),
            links=list(links),
            chunk_bytes=[int(b) for b in chunk_bytes],
            wall_s=wall_s,
            mb=mb,
        )
        if not r.passes:
            return 0.0
        self.trace.rings.append(r)
        return r.dur

    def add_p2p(
        self,
        kind: str,
        t0: float,
        seconds: float,
        *,
        src: int,
        dst: int,
        nbytes: int,
        link: str,
        mb: int | None = None,
    ) -> None:
        _transfer_kind(kind)
        self.trace.p2p.append(
            P2P(kind, float(t0), float(seconds), int(src), int(dst), int(nbytes), link, mb)
        )

    def add_all_to_all(
        self,
        kind: str,
        t0: float,
        round_seconds: Sequence[float],
        *,
        gpus: Sequence[int],
        nbytes: Sequence[int],
        links: Sequence[str],
        mb: int | None = None,
    ) -> float:
        """An all-to-all from t0; returns its seconds."""
        _transfer_kind(kind)
        g = len(gpus)
        if len(nbytes) != g * g or len(links) != g * g or len(round_seconds) != g - 1:
            raise ValueError("an all-to-all needs g * g bytes and links, and g - 1 rounds")
        a = AllToAll(
            kind,
            float(t0),
            [float(x) for x in round_seconds],
            list(gpus),
            [int(b) for b in nbytes],
            list(links),
            mb,
        )
        if g > 1:
            self.trace.all_to_all.append(a)
        return a.dur

    def done(self, step_s: float | None = None) -> StepTrace:
        """The trace; its step time is the current time unless given."""
        self.trace.step_s = self.t if step_s is None else float(step_s)
        return self.trace


def _transfer_kind(kind: str) -> None:
    if not KINDS.get(kind, {}).get("transfer"):
        raise ValueError(f"{kind!r} is not a transfer kind")
