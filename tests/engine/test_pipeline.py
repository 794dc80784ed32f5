"""Pipeline schedules laid out in time from given durations: the bubble is what the timeline
really leaves idle, and 1F1B holds fewer microbatches' activations than GPipe."""

from __future__ import annotations

import pytest

from app.engine.pipeline import dependency, run_order, simulate, stage_order


def equal(s: int, kind: str, m: int) -> float:
    return 1.0


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize(("pp", "M"), [(4, 4), (4, 16), (2, 8), (3, 5), (4, 1)])
def test_the_bubble_is_measured_from_the_timeline(schedule: str, pp: int, M: int) -> None:
    tl = simulate(schedule, pp, M, equal)
    assert tl.bubble_fraction == pytest.approx((pp - 1) / (M + pp - 1), abs=1e-12)
    # Every stage is busy 2M units and the span is 2(M + pp - 1) units.
    assert tl.span == pytest.approx(2 * (M + pp - 1))
    assert all(tl.busy(s) == 2 * M for s in range(pp))


def test_gpipe_with_four_stages() -> None:
    assert simulate("gpipe", 4, 4, equal).bubble_fraction == pytest.approx(3 / 7, abs=0.01)
    assert simulate("gpipe", 4, 16, equal).bubble_fraction == pytest.approx(3 / 19, abs=0.01)


def test_backward_taking_twice_the_forward_keeps_the_bubble() -> None:
    tl = simulate("gpipe", 4, 4, lambda s, k, m: 1.0 if k == "F" else 2.0)
    assert tl.bubble_fraction == pytest.approx(3 / 7)


def test_transfers_delay_the_next_stage_and_widen_the_bubble() -> None:
    free = simulate("1f1b", 4, 8, equal)
    slow = simulate("1f1b", 4, 8, equal, lambda kind, m, src, dst: 0.5)
    assert slow.span > free.span and slow.bubble_fraction > free.bubble_fraction
    for tr in slow.transfers:
        assert tr.t1 == pytest.approx(tr.t0 + 0.5)
        # The op that needs the transfer starts no earlier than its arrival.
        (op,) = [o for o in slow.ops if (o.stage, o.kind, o.mb) == (tr.dst, tr.kind, tr.mb)]
        assert op.t0 >= tr.t1 - 1e-12


def test_an_op_starts_when_its_stage_is_free_and_its_input_has_arrived() -> None:
    tl = simulate("1f1b", 3, 6, lambda s, k, m: 1.0 + 0.25 * s + (0.5 if k == "B" else 0))
    for s in range(3):
        ops = tl.stage_ops(s)
        assert [(o.kind, o.mb) for o in ops] == stage_order("1f1b", 3, 6, s)
        for a, b in zip(ops, ops[1:], strict=False):
            assert b.t0 >= a.t1 - 1e-12
    ends = {(o.stage, o.kind, o.mb): o.t1 for o in tl.ops}
    for o in tl.ops:
        dep = dependency(3, o.stage, (o.kind, o.mb))
        if dep is not None:
            assert o.t0 >= ends[(dep[0], *dep[1])] - 1e-12
        # It starts as soon as both hold (no idle time it did not have to take).
        prev = [p.t1 for p in tl.stage_ops(o.stage) if p.seq < o.seq]
        ready = max([*prev, ends[(dep[0], *dep[1])] if dep else 0.0, 0.0])
        assert o.t0 == pytest.approx(ready)


@pytest.mark.parametrize(("pp", "M"), [(4, 8), (4, 16), (2, 6)])
def test_1f1b_holds_fewer_activations_than_gpipe(pp: int, M: int) -> None:
    gpipe = simulate("gpipe", pp, M, equal)
    one = simulate("1f1b", pp, M, equal)
    assert gpipe.peak_in_flight(0) == M
    assert one.peak_in_flight(0) == pp < M
    assert [one.peak_in_flight(s) for s in range(pp)] == [pp - s for s in range(pp)]


def test_1f1b_order_is_warm_up_steady_cool_down() -> None:
    assert stage_order("1f1b", 4, 6, 0) == [
        ("F", 0), ("F", 1), ("F", 2),
        ("F", 3), ("B", 0), ("F", 4), ("B", 1), ("F", 5), ("B", 2),
        ("B", 3), ("B", 4), ("B", 5),
    ]  # fmt: skip
    assert stage_order("1f1b", 4, 6, 3)[:4] == [("F", 0), ("B", 0), ("F", 1), ("B", 1)]
    assert stage_order("gpipe", 2, 3, 1) == [
        ("F", 0), ("F", 1), ("F", 2), ("B", 2), ("B", 1), ("B", 0),
    ]  # fmt: skip
    with pytest.raises(ValueError, match="unknown schedule"):
        stage_order("zigzag", 2, 2, 0)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_run_order_keeps_each_stages_order_and_never_runs_an_op_early(schedule: str) -> None:
    pp, M = 4, 7
    order = run_order(schedule, pp, M)
    assert len(order) == 2 * pp * M
    done = set()
    for s, op in order:
        dep = dependency(pp, s, op)
        assert dep is None or dep in done
        done.add((s, op))
    for s in range(pp):
        assert [op for st, op in order if st == s] == stage_order(schedule, pp, M, s)
