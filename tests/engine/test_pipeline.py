"""Pipeline schedules laid out in time from given durations: the bubble is what the timeline
really leaves idle, and 1F1B holds fewer microbatches' activations than GPipe."""

from __future__ import annotations

import pytest

from app.engine.pipeline import (
    dependency,
    interleaved_order,
    run_order,
    simulate,
    stage_order,
)


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


# ---- interleaved 1F1B (virtual stages), laid out for the lens ------------------------------


@pytest.mark.parametrize(
    ("pp", "v", "M"), [(4, 2, 8), (4, 4, 8), (8, 2, 16), (4, 2, 4), (16, 4, 16)]
)
def test_interleaving_divides_the_bubble_by_the_chunks(pp: int, v: int, M: int) -> None:
    """Each stage's block of layers cut into v chunks, each taking 1/v of the time: the
    bubble is (pp - 1) / (v M + pp - 1) (Narayanan et al. 2021, section 2.2.2), where 1F1B
    leaves (pp - 1) / (M + pp - 1). By hand for pp 4, v 2, M 8: 3 / 19."""
    tl = simulate("interleaved", pp, M, lambda s, k, m: (1.0 if k == "F" else 2.0) / v, None, v)
    plain = simulate("1f1b", pp, M, lambda s, k, m: 1.0 if k == "F" else 2.0)
    assert tl.bubble_fraction == pytest.approx((pp - 1) / (v * M + pp - 1), rel=1e-12)
    assert plain.bubble_fraction == pytest.approx((pp - 1) / (M + pp - 1), rel=1e-12)
    assert tl.bubble_fraction < plain.bubble_fraction
    if (pp, v, M) == (4, 2, 8):
        assert tl.bubble_fraction == pytest.approx(3 / 19)
    # The same work: every stage runs every microbatch through each of its chunks, forward
    # then backward, and the span is the work plus the bubble.
    for s in range(pp):
        ops = [(o.kind, o.mb, o.chunk) for o in tl.stage_ops(s)]
        assert sorted(ops) == sorted((k, m, c) for k in "FB" for m in range(M) for c in range(v))
        assert tl.busy(s) == pytest.approx(3.0 * M)


def test_interleaved_order_is_megatrons() -> None:
    """Stage 0 of 4 with 2 chunks and 8 microbatches warms up with (4 - 1) x 2 + (2 - 1) x 4
    = 10 forwards: microbatches 0-3 through chunk 0, 0-3 through chunk 1, then 4-5 through
    chunk 0; its first backward is microbatch 0's chunk 1 (the last layers go back first)."""
    order = interleaved_order(4, 2, 8, 0)
    warm = [op for op in order[:10]]
    assert all(kind == "F" for _, (kind, _m) in warm) and order[10][1][0] == "F"
    assert [(c, m) for c, (_k, m) in warm] == [
        (0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3), (0, 4), (0, 5),
    ]  # fmt: skip
    assert order[11] == (1, ("B", 0))
    # The last stage warms up with only the other chunks' round: (2 - 1) x 4 forwards.
    last = interleaved_order(4, 2, 8, 3)
    assert [k for _, (k, _m) in last[:5]] == ["F"] * 5 and last[5][1][0] == "B"


def test_interleaving_needs_whole_rounds_of_microbatches() -> None:
    with pytest.raises(ValueError, match="multiple of the stages"):
        interleaved_order(4, 2, 6, 0)


# ---- ZB-H1 (zero bubble): the backward split, the weights' gradients put off ---------------


@pytest.mark.parametrize(("F", "B", "W"), [(1.0, 1.0, 1.0), (1.0, 2.0, 1.0), (2.0, 1.0, 1.0)])
@pytest.mark.parametrize(("pp", "M"), [(4, 8), (8, 16), (4, 4)])
def test_zb_h1_leaves_a_third_of_the_bubble(F: float, B: float, W: float, pp: int, M: int) -> None:
    """Qi et al. 2023: with B split from W and W put off into the gaps, each stage idles
    (pp - 1)(F + B - W) where 1F1B idles (pp - 1)(F + B + W). By hand for pp 4 and F = B = W
    = 1: 3 where 1F1B leaves 9."""
    times = {"F": F, "B": B, "W": W}
    tl = simulate("zb-h1", pp, M, lambda s, k, m: times[k])
    plain = simulate("1f1b", pp, M, lambda s, k, m: F if k == "F" else B + W)
    for s in range(pp):
        assert tl.idle(s) == pytest.approx((pp - 1) * (F + B - W))
        assert plain.idle(s) == pytest.approx((pp - 1) * (F + B + W))
        # Every microbatch's F, B and W, once each; each W after its own B.
        ops = tl.stage_ops(s)
        assert sorted((o.kind, o.mb) for o in ops) == sorted(
            (k, m) for k in "FBW" for m in range(M)
        )
        b_end = {o.mb: o.t1 for o in ops if o.kind == "B"}
        assert all(o.t0 >= b_end[o.mb] - 1e-12 for o in ops if o.kind == "W")
    if (F, B, W, pp) == (1.0, 1.0, 1.0, 4):
        assert tl.idle(0) == pytest.approx(3.0) and plain.idle(0) == pytest.approx(9.0)
    # The ops never overlap on a stage, and their numbering is one order of them all.
    for s in range(pp):
        ops = sorted(tl.stage_ops(s), key=lambda o: o.t0)
        assert all(a.t1 <= b.t0 + 1e-12 for a, b in zip(ops, ops[1:], strict=False))
    assert sorted(o.seq for o in tl.ops) == list(range(len(tl.ops)))


def test_zb_h1_with_a_short_w_does_no_worse_than_the_papers_order() -> None:
    tl = simulate("zb-h1", 4, 8, lambda s, k, m: {"F": 1.0, "B": 1.5, "W": 0.5}[k])
    assert tl.idle(0) <= 3 * (1.0 + 1.5 - 0.5) + 1e-9
