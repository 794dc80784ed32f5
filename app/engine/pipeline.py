"""Pipeline schedules and their timeline: which stage runs which microbatch when.

Each of the pp stages runs its forward (F) and backward (B) passes of the M microbatches in
the order its schedule gives:

- GPipe: all M forwards, then all M backwards (last microbatch first, as GPipe does: the
  last stage can turn the newest activations straight round).
- 1F1B (PipeDream-Flush): stage s runs min(pp - 1 - s, M) warm-up forwards, then one forward
  and one backward in turn, then the remaining backwards (cool-down). It has the same bubble
  as GPipe but holds at most pp - s microbatches' activations instead of M.

- Interleaved 1F1B (Narayanan et al. 2021, Megatron-LM's virtual pipeline): each stage holds
  `virtual` chunks of layers, not one block (stage s holds chunks s, s + pp, s + 2 pp, ...),
  so a microbatch goes round the stages `virtual` times and each pass is that much shorter.
  Stages warm up with (pp - 1 - s) x 2 + (virtual - 1) x pp forwards, then alternate. The
  bubble shrinks to (pp - 1) / (virtual x M + pp - 1) with equal chunks, for more hand-offs.
  M must be a multiple of pp, as Megatron-LM asks.
- ZB-H1 (Qi et al. 2023, zero bubble): the backward split in two, B (the gradient for the
  layer below, which the previous stage waits for) and W (the weights' own gradient, which
  nobody waits for). Stages run F and B in 1F1B's order and put each W off to an idle gap
  it fits in, or to the end. The bubble falls to ZB-H1's (pp - 1)(F + B - W) a stage, a
  third of 1F1B's when the three take the same time (no more when W is short: a W put off
  as time allows can fill a gap the paper's fixed order leaves).

The lens lays all of them out; the live engine runs GPipe and 1F1B.

`simulate` lays the ops out in time from given durations: an op starts when its stage is
free and its input has arrived (the previous stage's forward output, or the next stage's
gradient, plus the time of the send). The idle time this leaves on each stage is the
bubble, measured from the timeline, not from a formula; with equal stage times and free
transfers it comes out at (pp - 1) / (M + pp - 1). The same function drives the real run
(durations from the timing model) and the tests (durations given).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .plan import SCHEDULES

Op = tuple[str, int]  # ("F" | "B", microbatch)
LENS_SCHEDULES = (*SCHEDULES, "interleaved", "zb-h1")  # the ones `simulate` lays out


def interleaved_order(pp: int, virtual: int, microbatches: int, stage: int) -> list[tuple[int, Op]]:
    """The (chunk, op) stage `stage` runs under interleaved 1F1B, Megatron-LM's order: the
    k-th forward is chunk (k // pp) % virtual of microbatch (k // (pp virtual)) pp + k % pp,
    the k-th backward the same microbatch's chunks from the last down."""
    M = microbatches
    if M % pp:
        raise ValueError(
            f"interleaved 1F1B needs the microbatches ({M}) to be a multiple of the stages ({pp})"
        )
    total = M * virtual

    def mb(k: int) -> int:
        return (k // (pp * virtual)) * pp + k % pp

    def fwd(k: int) -> tuple[int, Op]:
        return ((k // pp) % virtual, ("F", mb(k)))

    def bwd(k: int) -> tuple[int, Op]:
        return (virtual - 1 - (k // pp) % virtual, ("B", mb(k)))

    warm = total if M == pp else min((pp - 1 - stage) * 2 + (virtual - 1) * pp, total)
    order = [fwd(k) for k in range(warm)]
    for i in range(total - warm):
        order += [fwd(warm + i), bwd(i)]
    order += [bwd(k) for k in range(total - warm, total)]
    return order


def lane_order(
    schedule: str, pp: int, microbatches: int, stage: int, virtual: int = 1
) -> list[tuple[int, Op]]:
    """The (chunk, op) stage `stage` runs, in order: chunk 0 always but for interleaved."""
    if schedule == "interleaved":
        return interleaved_order(pp, virtual, microbatches, stage)
    if schedule == "zb-h1":  # F and B in 1F1B's order; each W is placed as time allows
        schedule = "1f1b"
    return [(0, op) for op in stage_order(schedule, pp, microbatches, stage)]


def stage_order(schedule: str, pp: int, microbatches: int, stage: int) -> list[Op]:
    """The ops stage `stage` runs, in order."""
    M = microbatches
    if schedule == "gpipe":
        return [("F", m) for m in range(M)] + [("B", m) for m in reversed(range(M))]
    if schedule == "1f1b":
        warm = min(pp - 1 - stage, M)
        order: list[Op] = [("F", m) for m in range(warm)]
        for i in range(M - warm):
            order += [("F", warm + i), ("B", i)]
        order += [("B", m) for m in range(M - warm, M)]
        return order
    raise ValueError(f"unknown schedule {schedule!r} (known: {', '.join(SCHEDULES)})")


@dataclass
class OpTime:
    stage: int
    kind: str  # "F" | "B" | "W" (the weights' gradient, split from B under ZB-H1)
    mb: int
    t0: float
    t1: float
    seq: int  # position in a dependency-respecting order of all ops
    chunk: int = 0  # which of the stage's chunks of layers (interleaved); 0 otherwise

    @property
    def dur(self) -> float:
        return self.t1 - self.t0


@dataclass
class Transfer:
    """Activations (kind "F") or gradients (kind "B") of microbatch `mb` sent between stages."""

    kind: str
    mb: int
    src: int  # stage
    dst: int
    t0: float
    t1: float


@dataclass
class Timeline:
    pp: int
    microbatches: int
    schedule: str
    orders: list[list[Op]]  # per stage
    ops: list[OpTime] = field(default_factory=list)  # in dependency order (seq)
    virtual: int = 1  # chunks of layers each stage holds (interleaved)
    transfers: list[Transfer] = field(default_factory=list)

    def stage_ops(self, s: int) -> list[OpTime]:
        return [o for o in self.ops if o.stage == s]

    @property
    def start(self) -> float:
        return min((o.t0 for o in self.ops), default=0.0)

    @property
    def end(self) -> float:
        return max((o.t1 for o in self.ops), default=0.0)

    @property
    def span(self) -> float:
        """Seconds from the first op's start to the last op's end, over all stages."""
        return self.end - self.start

    def busy(self, s: int) -> float:
        return sum(o.dur for o in self.ops if o.stage == s)

    def idle(self, s: int) -> float:
        """Seconds stage s waits within the pipeline's span: its share of the bubble."""
        return self.span - self.busy(s)

    @property
    def bubble_fraction(self) -> float:
        """Idle stage time over all stages' time in the span: sum(idle) / (pp * span)."""
        if self.span <= 0:
            return 0.0
        return sum(self.idle(s) for s in range(self.pp)) / (self.pp * self.span)

    def peak_in_flight(self, s: int) -> int:
        """Most microbatches whose activations stage s holds at once (kept from the start of
        a forward to the end of its backward)."""
        held = peak = 0
        for kind, _ in self.orders[s]:
            held += 1 if kind == "F" else 0
            peak = max(peak, held)
            held -= 1 if kind == "B" else 0
        return peak


def dependency(pp: int, s: int, op: Op) -> tuple[int, Op] | None:
    """The op on another stage whose output this op needs, or None."""
    kind, m = op
    if kind == "F":
        return (s - 1, ("F", m)) if s > 0 else None
    return (s + 1, ("B", m)) if s < pp - 1 else None


def run_order(schedule: str, pp: int, microbatches: int) -> list[tuple[int, Op]]:
    """Every (stage, op) in an order that keeps each stage's own order and runs no op before
    the op it needs: the order the numbers are computed in."""
    orders = [stage_order(schedule, pp, microbatches, s) for s in range(pp)]
    pos = [0] * pp
    done: set[tuple[int, Op]] = set()
    out: list[tuple[int, Op]] = []
    total = sum(len(o) for o in orders)
    while len(out) < total:
        moved = False
        for s in range(pp):
            while pos[s] < len(orders[s]):
                op = orders[s][pos[s]]
                dep = dependency(pp, s, op)
                if dep is not None and dep not in done:
                    break
                done.add((s, op))
                out.append((s, op))
                pos[s] += 1
                moved = True
        if not moved:
            raise ValueError(f"schedule {schedule!r} deadlocks with pp {pp}, M {microbatches}")
    return out


def simulate(
    schedule: str,
    pp: int,
    microbatches: int,
    op_seconds: Callable[[int, str, int], float],
    send_seconds: Callable[[str, int, int, int], float] | None = None,
    virtual: int = 1,
) -> Timeline:
    """Lay the schedule out in time.

    op_seconds(stage, kind, mb): seconds of that forward or backward; send_seconds(kind, mb,
    src, dst): seconds to send its output to the next (F) or previous (B) stage; None: free.
    Under interleaved 1F1B the stages these are asked about are the virtual ones (chunk c of
    stage s is virtual stage c x pp + s, of pp x virtual in all)."""
    virtual = virtual if schedule == "interleaved" else 1
    lanes = [lane_order(schedule, pp, microbatches, s, virtual) for s in range(pp)]
    tl = Timeline(
        pp=pp,
        microbatches=microbatches,
        schedule=schedule,
        orders=[[op for _, op in lane] for lane in lanes],
        virtual=virtual,
    )
    last = pp * virtual - 1
    free = [0.0] * pp
    ends: dict[tuple[int, Op], float] = {}
    pos = [0] * pp
    split = schedule == "zb-h1"
    waiting: list[list[int]] = [[] for _ in range(pp)]  # microbatches whose W is put off
    seq = 0

    def weights(s: int, until: float | None) -> None:
        """Stage s runs its put-off W passes, oldest first, while they end by `until` (all of
        them when None)."""
        nonlocal seq
        while waiting[s]:
            dur = float(op_seconds(s, "W", waiting[s][0]))
            if until is not None and free[s] + dur > until + 1e-12:
                return
            m = waiting[s].pop(0)
            tl.ops.append(OpTime(s, "W", m, free[s], free[s] + dur, seq))
            free[s] += dur
            seq += 1

    while any(pos[s] < len(lanes[s]) for s in range(pp)):
        moved = False
        for s in range(pp):
            while pos[s] < len(lanes[s]):
                chunk, op = lanes[s][pos[s]]
                kind, m = op
                v = chunk * pp + s
                dep = (v - 1, ("F", m)) if kind == "F" else (v + 1, ("B", m))
                needs = 0 <= dep[0] <= last
                if needs and dep not in ends:
                    break
                arrive = 0.0
                if needs:
                    src = dep[0]
                    sent = ends[dep]
                    arrive = sent + (send_seconds(kind, m, src, v) if send_seconds else 0.0)
                    tl.transfers.append(Transfer(kind, m, src % pp, s, sent, arrive))
                    weights(s, arrive)  # an idle gap before the input arrives: fill it
                ready = max(free[s], arrive)
                t1 = ready + float(op_seconds(v, kind, m))
                tl.ops.append(OpTime(s, kind, m, ready, t1, seq, chunk))
                ends[(v, op)] = t1
                free[s] = t1
                if split and kind == "B":
                    waiting[s].append(m)
                pos[s] += 1
                seq += 1
                moved = True
        if not moved:
            raise ValueError(f"schedule {schedule!r} deadlocks with pp {pp}, M {microbatches}")
    for s in range(pp):
        weights(s, None)
    return tl
