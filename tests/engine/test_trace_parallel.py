"""A planned step's trace says what every GPU did and when: compute per microbatch and stage,
tensor-parallel joins inside TP groups, sends between stages, expert all-to-alls, the
data-parallel all-reduce in each DP group, and waiting; each GPU's memory is its shards."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from app.engine.chrometrace import COPY_TID, chrome_trace
from app.engine.config import RunConfig
from app.engine.model import param_shapes
from app.engine.pipeline import stage_order
from app.engine.sharding import ep_split, shard_shape, stage_of, tp_split
from app.engine.timing import ACTIVATION_WIRE_BYTES, GRAD_WIRE_BYTES
from app.engine.trace import (
    KINDS,
    bytes_by_kind,
    expand,
    lane_sums,
    trace_from_dict,
)
from app.engine.trainer import Trainer

SMALL = dict(
    corpus_stories=120, batch_size=16, n_embd=16, n_head=4, n_layer=2, block_size=8,
    checkpoint_every=0, probe_every=0,
)  # fmt: skip
PIPE = dict(gpus=8, servers=2, tp=2, pp=2, microbatches=4)


def run(tmp_path, steps: int = 2, **changes):
    t = Trainer(RunConfig(**{**SMALL, **changes}), tmp_path)
    try:
        reports = [t.train_step() for _ in range(steps)]
        return t, reports[-1]
    finally:
        t.close(final_checkpoint=False)


@pytest.fixture(scope="module")
def piped(tmp_path_factory):
    return run(tmp_path_factory.mktemp("pipe"), **PIPE)


@pytest.fixture(scope="module")
def experts(tmp_path_factory):
    return run(
        tmp_path_factory.mktemp("moe"), gpus=8, servers=2, pp=2, ep=2, experts=4,
        microbatches=2,
    )  # fmt: skip


def own_events(lane):
    return [e for e in lane if not KINDS[e.kind]["overlaps"]]


@pytest.mark.parametrize("which", ["piped", "experts"])
def test_every_lane_is_covered_end_to_end_without_overlap(which, request) -> None:
    t, report = request.getfixturevalue(which)
    lanes = expand(report.trace)
    assert len(lanes) == t.config.gpus
    for g, lane in enumerate(lanes):
        mine = own_events(lane)
        assert mine[0].t0 == 0
        for a, b in zip(mine, mine[1:], strict=False):
            assert b.t0 == pytest.approx(a.t1, rel=1e-9, abs=1e-15), (g, a, b)
        assert mine[-1].t1 == pytest.approx(report.sim_step_s, rel=1e-12)
    for sums in lane_sums(report.trace):
        assert sum(sums.values()) == pytest.approx(report.sim_step_s, rel=1e-12)
    # The compact form survives its JSON round trip event for event.
    again = trace_from_dict(json.loads(json.dumps(dataclasses.asdict(report.trace))))
    assert expand(again) == lanes


def test_each_stage_runs_its_schedule_per_microbatch(piped) -> None:
    t, report = piped
    plan = t.plan
    lanes = expand(report.trace)
    for g in range(plan.gpus):
        _, s, _ = plan.coords(g)
        ops = []
        for e in lanes[g]:
            if e.kind in ("forward", "backward"):
                op = ("F" if e.kind == "forward" else "B", e.mb)
                if not ops or ops[-1] != op:
                    ops.append(op)
        assert ops == stage_order(plan.schedule, plan.pp, plan.microbatches, s), g
        assert lanes[g][-1].kind == "optimizer" or any(e.kind == "wait" for e in lanes[g])
    # There is a bubble, and it is waiting on the lanes.
    assert 0 < t.last_stats.bubble_fraction < 1
    assert any(e.kind == "wait" for e in lanes[0])


def test_the_bubble_is_the_idle_time_the_lanes_show(piped) -> None:
    t, report = piped
    tl = t.last_stats.timeline
    t0 = report.trace.spans[0].dur  # the pipeline starts after the data span
    start, end = t0 + tl.start, t0 + tl.end
    lanes = expand(report.trace)
    busy_kinds = {"forward", "backward", "tp_allreduce", "all_to_all"}
    idle = 0.0
    for s in range(t.plan.pp):
        lane = lanes[t.plan.stage_gpus(s)[0]]
        busy = sum(
            max(0.0, min(e.t1, end) - max(e.t0, start)) for e in lane if e.kind in busy_kinds
        )
        idle += (end - start) - busy
    measured = idle / (t.plan.pp * (end - start))
    assert measured == pytest.approx(t.last_stats.bubble_fraction, rel=1e-9)


def test_tensor_parallel_joins_run_in_each_tp_group_on_nvlink(piped) -> None:
    t, report = piped
    plan = t.plan
    joins = [r for r in report.trace.rings if r.kind == "tp_allreduce"]
    groups = {tuple(r.ring) for r in joins}
    assert groups == {tuple(g) for g in plan.tp_groups}
    assert all(set(r.links) == {"nvlink"} and r.passes == 2 * (plan.tp - 1) for r in joins)
    # Two joins per layer forward and two backward, per microbatch, in every TP group.
    layers = t.config.n_layer // plan.pp
    assert len(joins) == len(plan.tp_groups) * plan.microbatches * 4 * layers
    # A join carries one microbatch's activations: (b * T, C) numbers per GPU, BF16 on the
    # simulated cluster's wire (2 bytes) while the arithmetic here is float32.
    b = t.config.batch_size // plan.dp // plan.microbatches
    per_gpu = b * t.config.block_size * t.config.n_embd * ACTIVATION_WIRE_BYTES
    assert ACTIVATION_WIRE_BYTES == 2
    assert all(sum(r.chunk_bytes) == per_gpu for r in joins)


def test_stages_send_activations_forward_and_gradients_back(piped) -> None:
    t, report = piped
    plan, topo = t.plan, t.topology
    b = t.config.batch_size // plan.dp // plan.microbatches
    nbytes = b * t.config.block_size * t.config.n_embd * ACTIVATION_WIRE_BYTES
    sends = report.trace.p2p
    assert len(sends) == 2 * (plan.pp - 1) * plan.microbatches * plan.dp * plan.tp
    lanes = expand(report.trace)

    def op_span(g: int, kind: str, mb: int):
        # An op is its compute and the joins inside it, back to back, all of its microbatch.
        own = own_events(lanes[g])
        i = next(i for i, e in enumerate(own) if e.kind == kind and e.mb == mb)
        j = i
        while (
            j + 1 < len(own) and own[j + 1].mb == mb and own[j + 1].kind in (kind, "tp_allreduce")
        ):
            j += 1
        return own[i].t0, own[j].t1

    for p in sends:
        ds, ss, ts = plan.coords(p.src)
        dd, sd, td = plan.coords(p.dst)
        assert (ds, ts) == (dd, td) and abs(ss - sd) == 1
        assert p.bytes == nbytes and p.link == topo.link_kind(p.src, p.dst)
        kind = "forward" if sd == ss + 1 else "backward"
        # Sent when the producing op ends; the consuming op starts once it has arrived.
        assert p.t0 == pytest.approx(op_span(p.src, kind, p.mb)[1], rel=1e-12)
        assert op_span(p.dst, kind, p.mb)[0] >= p.t0 + p.dur - 1e-15
    # Each send is a send on one lane and a receive on the other.
    for g, lane in enumerate(lanes):
        for e in lane:
            if e.kind == "p2p":
                assert (e.phase, e.gpu) in (("send", g), ("recv", g))
                assert (e.peer if e.phase == "send" else e.src) is not None


def test_the_data_parallel_all_reduce_runs_in_each_dp_group(piped) -> None:
    t, report = piped
    plan = t.plan
    rings = [r for r in report.trace.rings if r.kind == "allreduce"]
    assert sorted(tuple(r.ring) for r in rings) == sorted(tuple(g) for g in plan.dp_groups)
    shapes = param_shapes(t.model_cfg)
    for r in rings:
        _, s, _ = plan.coords(r.ring[0])
        elements = sum(
            math.prod(shard_shape(n, shapes[n], plan))
            for n in shapes
            if stage_of(n, t.config.n_layer, plan.pp) == s
        )
        assert sum(r.chunk_bytes) == elements * GRAD_WIRE_BYTES  # BF16 gradients
        assert r.links == [
            t.topology.link_kind(a, b) for a, b in zip(r.ring, r.ring[1:] + r.ring[:1], strict=True)
        ]
    assert bytes_by_kind(report.trace)["allreduce"] == report.ring.bytes_total


def test_each_gpu_holds_and_counts_only_its_shards(piped, tmp_path) -> None:
    t, report = piped
    plan, shapes = t.plan, param_shapes(t.model_cfg)
    for m in report.memory:
        _, s, _ = plan.coords(m.gpu)
        mine = sum(
            math.prod(shard_shape(n, shapes[n], plan))
            for n in shapes
            if stage_of(n, t.config.n_layer, plan.pp) == s
        )
        assert m.weights == mine * 4 and m.grads == m.weights and m.optimizer == 2 * m.weights
        assert m.activations == t.last_stats.activation_bytes[m.gpu] > 0
        assert m.total == m.weights + m.grads + m.optimizer + m.activations
    # One replica's GPUs hold the model once, plus the copies a TP group replicates.
    replica = [g for g in range(plan.gpus) if plan.coords(g)[0] == 0]
    held = sum(report.memory[g].weights for g in replica)
    copies = sum(math.prod(s) * (1 if tp_split(n) else plan.tp) for n, s in shapes.items())
    assert held == copies * 4
    assert [g.holds for g in t.gpus][:3] == [
        "replica 1, stage 1 of 2, tensor shard 1 of 2",
        "replica 1, stage 1 of 2, tensor shard 2 of 2",
        "replica 1, stage 2 of 2, tensor shard 1 of 2",
    ]


def test_1f1b_holds_fewer_activations_than_gpipe_on_the_first_stage(tmp_path) -> None:
    plan = dict(gpus=4, servers=1, pp=2, microbatches=8, batch_size=32)
    one, _ = run(tmp_path / "1f1b", steps=1, schedule="1f1b", **plan)
    gpipe, _ = run(tmp_path / "gpipe", steps=1, schedule="gpipe", **plan)
    first = one.plan.stage_gpus(0)[0]
    a, b = one.last_stats.activation_bytes[first], gpipe.last_stats.activation_bytes[first]
    assert a < b and b == pytest.approx(a * 8 / 2, rel=0.01)


def test_experts_travel_in_all_to_alls_within_each_ep_group(experts) -> None:
    t, report = experts
    plan = t.plan
    a2a = report.trace.all_to_all
    assert {tuple(a.gpus) for a in a2a} == {tuple(g) for g in plan.ep_groups}
    # Dispatch and combine in the forward pass, and both again backward, per MoE layer.
    layers = t.config.n_layer // plan.pp
    assert len(a2a) == len(plan.ep_groups) * plan.microbatches * 4 * layers
    C, K = t.config.n_embd, t.config.top_k
    b = t.config.batch_size // plan.dp // plan.microbatches
    tokens = b * t.config.block_size
    for a in a2a:
        g = len(a.gpus)
        m = np.asarray(a.bytes).reshape(g, g)
        assert np.all(np.diag(m) == 0) and m.sum() > 0
        # A GPU sends at most all of its tokens' choices, one row of C numbers each.
        # BF16 on the wire: C numbers of 2 bytes a token.
        assert np.all(m.sum(axis=1) <= tokens * K * C * ACTIVATION_WIRE_BYTES)
        assert np.all(m % (C * ACTIVATION_WIRE_BYTES) == 0)
        assert len(a.round_s) == g - 1
        for i, src in enumerate(a.gpus):
            for j, dst in enumerate(a.gpus):
                if i != j:
                    assert a.links[i * g + j] == t.topology.link_kind(src, dst)
    # The combine returns exactly what the dispatch sent, and the backward pass sends the
    # same again (gradients to the experts, then back), one MoE layer per stage here.
    assert layers == 1
    by_group: dict[tuple, list] = {}
    for a in a2a:
        by_group.setdefault((tuple(a.gpus), a.mb), []).append(np.asarray(a.bytes).reshape(2, 2))
    for dispatch, combine, back_dispatch, back_combine in by_group.values():
        np.testing.assert_array_equal(dispatch, combine.T)
        np.testing.assert_array_equal(back_dispatch, dispatch)
        np.testing.assert_array_equal(back_combine, combine)
    # Expert weights are split over the EP group: half the experts each.
    shapes = param_shapes(t.model_cfg)
    for n in shapes:
        if ep_split(n):
            assert shard_shape(n, shapes[n], plan)[0] == t.config.experts // plan.ep
    assert bytes_by_kind(report.trace)["all_to_all"] == sum(sum(a.bytes) for a in a2a)


def test_chrome_trace_has_copy_threads_and_arrows_for_every_send(piped) -> None:
    t, report = piped
    server_of = [g.server for g in t.topology.gpus]
    doc = json.loads(json.dumps(chrome_trace(report.trace, server_of)))
    events = doc["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    for g in range(t.config.gpus):
        assert names[g] == f"GPU {g + 1}" and names[COPY_TID + g] == f"GPU {g + 1} copies"
    slices = [e for e in events if e["ph"] == "X"]
    for g in range(t.config.gpus):
        own = sum(e["dur"] for e in slices if e["tid"] == g)
        assert own == pytest.approx(report.sim_step_s * 1e6, rel=1e-9)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    p2p_arrows = [(s, ends[i]) for i, s in starts.items() if s["tid"] >= COPY_TID]
    assert len(p2p_arrows) == len(report.trace.p2p)
    pairs = {(p.src, p.dst) for p in report.trace.p2p}
    for s, f in p2p_arrows:
        assert (s["tid"] - COPY_TID, f["tid"] - COPY_TID) in pairs
    kinds = {e["name"].split(" ")[0] for e in slices}
    assert {"forward", "backward", "tp_allreduce", "p2p", "allreduce", "wait"} <= kinds
    assert any(e["name"] == "forward mb 3" for e in slices)


def test_microbatches_without_pipelining_show_per_microbatch_compute(tmp_path) -> None:
    t, report = run(tmp_path, gpus=2, servers=1, microbatches=4)
    kinds = [(s.kind, s.mb) for s in report.trace.spans]
    assert kinds[1:9] == [(k, m) for m in range(4) for k in ("forward", "backward")]
    for sums in lane_sums(report.trace):
        assert sum(sums.values()) == pytest.approx(report.sim_step_s, rel=1e-12)
    # Only one microbatch's activations are held at a time.
    per_mb = t.last_stats.activation_bytes[0]
    assert report.memory[0].activations == per_mb


def test_a_gpu_failure_rolls_a_planned_run_back(tmp_path) -> None:
    cfg = RunConfig(**{**SMALL, **PIPE, "checkpoint_every": 2})
    t = Trainer(cfg, tmp_path)
    try:
        for _ in range(3):
            t.train_step()
        events = t.fail_gpu(5)
        assert [e.kind for e in events] == ["gpu_failed", "restored", "gpu_replaced"]
        assert t.step == 2
        t.train_step()
        sha = t.params_sha256()
    finally:
        t.close(final_checkpoint=False)
    again = Trainer(cfg.with_(checkpoint_every=0), tmp_path / "again")
    try:
        for _ in range(3):
            again.train_step()
        assert again.params_sha256() == sha
    finally:
        again.close(final_checkpoint=False)
