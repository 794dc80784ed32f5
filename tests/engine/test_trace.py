"""The step as a trace: lanes of timed events that add up to the step, match the ring the
collective really ran, and export to the Chrome Trace Event format."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.engine.chrometrace import chrome_trace
from app.engine.collectives import ring_allreduce
from app.engine.config import RunConfig
from app.engine.timing import GRAD_WIRE_BYTES, get_preset, rails_of, ring_pass_times, ring_time
from app.engine.trace import (
    KINDS,
    StepTraceBuilder,
    expand,
    lane_sums,
    ring_chunk,
    run_length,
)
from app.engine.trainer import Trainer

SMALL = dict(gpus=8, servers=2, leaves=2, spines=2, batch_size=16, corpus_stories=120)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    t = Trainer(RunConfig(**SMALL, checkpoint_every=2), tmp_path_factory.mktemp("run"))
    try:
        yield t, [t.train_step(), t.train_step()]
    finally:
        t.close(final_checkpoint=False)


def test_every_lane_plays_the_data_parallel_step_in_order(reports) -> None:
    t, (r1, r2) = reports
    G = SMALL["gpus"]
    for report, saved in ((r1, False), (r2, True)):
        lanes = expand(report.trace)
        assert len(lanes) == G
        for g, lane in enumerate(lanes):
            kinds = [e.kind for e in lane]
            expected = ["data", "forward", "backward"] + ["allreduce"] * 2 * (G - 1)
            # One GPU writes the one shard of a data-parallel model; the others wait for it.
            writes = "checkpoint" if g == 0 else "wait"
            expected += ["optimizer"] + ([writes] if saved else [])
            assert kinds == expected, f"GPU {g}"
            assert all(e.gpu == g for e in lane)
            # Back to back: each event starts where the previous one ended, from 0 to the end.
            assert lane[0].t0 == 0
            for a, b in zip(lane, lane[1:], strict=False):
                assert b.t0 == pytest.approx(a.t1, rel=1e-12, abs=1e-18)
            assert lane[-1].t1 == pytest.approx(report.sim_step_s, rel=1e-12)
            # Measured wall time rides along on every event of work here.
            assert all(e.wall_s is not None and e.wall_s >= 0 for e in lane if e.kind != "wait")


def test_lane_sums_are_the_step_time(reports) -> None:
    _, (r1, r2) = reports
    for report in (r1, r2):
        for sums in lane_sums(report.trace):
            assert sum(sums.values()) == pytest.approx(report.sim_step_s, rel=1e-12)
            assert set(sums) <= {str(k["group"]) for k in KINDS.values()}
    assert "checkpoint" not in lane_sums(r1.trace)[0]
    assert lane_sums(r2.trace)[0]["checkpoint"] > 0


def test_ring_events_are_the_ring_the_collective_ran(reports) -> None:
    t, (r1, _) = reports
    G = SMALL["gpus"]
    preset = get_preset(t.config.preset)
    lanes = expand(r1.trace)
    ring_events = [e for lane in lanes for e in lane if e.kind == "allreduce"]
    assert len(ring_events) == G * 2 * (G - 1)
    for e in ring_events:
        assert e.peer == (e.gpu + 1) % G and e.src == (e.gpu - 1) % G
        assert e.link == t.topology.link_kind(e.gpu, e.peer)
        assert e.phase == ("reduce_scatter" if e.index <= G - 1 else "all_gather")
    # The per-pass seconds are the timing model's, and sum to the whole ring's time.
    (ring,) = r1.trace.rings
    assert ring.passes == 2 * (G - 1)
    assert sum(s * n for s, n in ring.pass_s) == pytest.approx(
        sum(e.dur for e in lanes[0] if e.kind == "allreduce"), rel=1e-12
    )
    # ... and they are the timing model's own, pass by pass, for the ring that ran.
    # The simulated cluster sends BF16 gradients (2 bytes) over one ring channel per NIC
    # rail: 4 GPUs of the ring in each server.
    _, ref = ring_allreduce(
        np.zeros((G, r1.ring.elements), dtype=np.float32),
        ring=t.topology.ring,
        link_kind=t.topology.link_kind,
        wire_itemsize=GRAD_WIRE_BYTES,
    )
    assert ref.bytes_total == 2 * (G - 1) * r1.ring.elements * 2
    rails = rails_of(t.topology.ring, [gpu.server for gpu in t.topology.gpus])
    assert rails == G // SMALL["servers"]
    firsts = [e.dur for e in lanes[0] if e.kind == "allreduce"]
    assert firsts == pytest.approx(list(ring_pass_times(preset, ref, rails)), rel=1e-12)
    assert sum(firsts) == pytest.approx(ring_time(preset, ref, rails), rel=1e-12)
    # Bytes on the wire add up to what the ring summary reports.
    assert sum(e.bytes for e in ring_events) == r1.ring.bytes_total


@pytest.mark.parametrize("g", [2, 3, 5, 8, 9])
def test_ring_chunk_rule_matches_the_collective(g: int) -> None:
    """The compact form stores no chunk numbers: they follow from the algorithm. Check that
    rule against what the real ring all-reduce sent, pass by pass."""
    rng = np.random.default_rng(g)
    _, trace = ring_allreduce(rng.normal(size=(g, 3 * g + 1)))
    assert len(trace.passes) == 2 * (g - 1)
    for p in trace.passes:
        for i in range(g):
            phase, chunk = ring_chunk(i, p.index, g)
            assert (phase, chunk) == (p.phase, int(p.chunks[i]))


def test_builder_lays_spans_end_to_end_and_rejects_unknown_kinds() -> None:
    b = StepTraceBuilder(3)
    b.span("data", 1.0)
    b.span("forward", 2.0, lanes=[0, 2])
    b.ring("allreduce", [0.5, 0.5, 0.25, 0.25], ring=[0, 1, 2], links=["nvlink"] * 3,
           chunk_bytes=[8, 8, 4])  # fmt: skip
    trace = b.done()
    assert trace.step_s == pytest.approx(4.5)
    assert trace.rings[0].pass_s == [(0.5, 2), (0.25, 2)]
    lanes = expand(trace)
    assert [e.kind for e in lanes[1]] == ["data"] + ["allreduce"] * 4
    assert lanes[1][-1].t1 == pytest.approx(4.5)
    with pytest.raises(ValueError, match="unknown trace event kind"):
        b.span("teleport", 1.0)
    with pytest.raises(ValueError, match="not a transfer"):
        b.ring("forward", [1.0], ring=[0, 1], links=["nvlink"] * 2, chunk_bytes=[1, 1])
    assert run_length([]) == []


def test_single_gpu_has_no_ring() -> None:
    b = StepTraceBuilder(1)
    b.span("forward", 1.0)
    b.ring("allreduce", [], ring=[0], links=["nvlink"], chunk_bytes=[4])
    trace = b.done()
    assert trace.rings == [] and trace.step_s == 1.0


def test_chrome_trace_has_a_thread_per_gpu_and_flow_arrows(reports) -> None:
    t, (_, r2) = reports
    G = SMALL["gpus"]
    server_of = [g.server for g in t.topology.gpus]
    doc = json.loads(json.dumps(chrome_trace(r2.trace, server_of, meta={"step": r2.step})))
    events = doc["traceEvents"]
    assert doc["displayTimeUnit"] == "ns" and doc["otherData"]["step"] == r2.step
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    # Named from 1, as the page names them; the ids stay the engine's.
    assert names == {(server_of[g], g): f"GPU {g + 1}" for g in range(G)}
    procs = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert procs == {s: f"server {s + 1}" for s in set(server_of)}
    slices = [e for e in events if e["ph"] == "X"]
    for g in range(G):
        mine = [e for e in slices if e["tid"] == g]
        assert all(e["pid"] == server_of[g] for e in mine)
        assert sum(e["dur"] for e in mine) == pytest.approx(r2.sim_step_s * 1e6, rel=1e-9)
        kinds = {e["name"].split(" ")[0] for e in mine}
        writes = "checkpoint" if g == 0 else "wait"
        assert kinds == {"data", "forward", "backward", "allreduce", "optimizer", writes}
        passes = [e for e in mine if e["name"].startswith("allreduce pass")]
        assert len(passes) == 2 * (G - 1)
        assert all(e["args"]["peer"] == (g + 1) % G for e in passes)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == G * 2 * (G - 1) and starts.keys() == ends.keys()
    for i, s in starts.items():
        f = ends[i]
        assert f["tid"] == (s["tid"] + 1) % G and f["ts"] > s["ts"] and f["bp"] == "e"
        # Each end of an arrow sits inside a slice of its own thread.
        for point in (s, f):
            assert any(
                e["tid"] == point["tid"] and e["ts"] <= point["ts"] <= e["ts"] + e["dur"]
                for e in slices
            )
