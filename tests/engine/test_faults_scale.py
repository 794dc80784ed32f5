"""Faults at scale, on the trace: a straggler GPU the others wait for, a stalled data loader,
a cut link the ring routes around, and a dead GPU; none of them changes the numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.engine.config import RunConfig
from app.engine.timing import REROUTE, STRAGGLER_FACTOR
from app.engine.trace import expand, lane_sums
from app.engine.trainer import Trainer

ROOT = Path(__file__).resolve().parents[2]
SMALL = dict(gpus=8, servers=2, leaves=2, spines=2, batch_size=16, corpus_stories=120)


def two_steps(tmp_path: Path, fault: tuple | None = None, **extra):
    """Step 1 plain, step 2 with the fault (if any): the reports and the weights' hash."""
    t = Trainer(RunConfig(**{**SMALL, "checkpoint_every": 0, **extra}), tmp_path)
    try:
        r1 = t.train_step()
        if fault is not None:
            t.inject(*fault)
        r2 = t.train_step()
        r3 = t.train_step()
        return r1, r2, r3, t.params_sha256()
    finally:
        t.close(final_checkpoint=False)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return two_steps(tmp_path_factory.mktemp("plain"))


def lanes_add_up(report) -> None:
    for sums in lane_sums(report.trace):
        assert sum(sums.values()) == pytest.approx(report.sim_step_s, rel=1e-12)


def test_the_others_wait_for_a_straggler_at_the_all_reduce(plain, tmp_path) -> None:
    _, r2, r3, sha = two_steps(tmp_path, ("straggler", 3, 1))
    assert sha == plain[3]  # the same numbers: only time changes
    lanes = expand(r2.trace)
    compute = [sum(e.dur for e in lane if e.kind in ("forward", "backward")) for lane in lanes]
    assert compute[3] == pytest.approx(STRAGGLER_FACTOR * compute[0], rel=1e-12)
    waits = [sum(e.dur for e in lane if e.kind == "wait") for lane in lanes]
    assert waits[3] == 0
    assert all(w == pytest.approx(compute[3] - compute[0], rel=1e-9) for i, w in
               enumerate(waits) if i != 3)  # fmt: skip
    # The wait sits before the all-reduce, which starts when the straggler is done.
    for g, lane in enumerate(lanes):
        kinds = [e.kind for e in lane]
        i = kinds.index("allreduce")
        assert kinds[i - 1] == ("backward" if g == 3 else "wait")
    assert r2.sim_step_s > plain[1].sim_step_s
    lanes_add_up(r2)
    assert r3.sim_step_s == pytest.approx(plain[2].sim_step_s)  # one step only


def test_a_stalled_loader_keeps_every_gpu_waiting(plain, tmp_path) -> None:
    _, r2, _, sha = two_steps(tmp_path, ("data_stall", 5, 1))
    assert sha == plain[3]
    first = [lane[0] for lane in expand(r2.trace)]
    assert all(e.kind == "wait" and e.dur == pytest.approx(5e-3) for e in first)
    assert r2.sim_step_s == pytest.approx(plain[1].sim_step_s + 5e-3, rel=1e-9)
    lanes_add_up(r2)


def test_a_cut_link_sends_the_ring_hop_the_long_way(plain, tmp_path) -> None:
    # GPU 1 -> GPU 2 is an NVLink hop inside server 0; cut, it goes out through the NIC.
    _, r2, r3, sha = two_steps(tmp_path, ("link", 1, 1))
    assert sha == plain[3]
    (before,) = plain[1].trace.rings
    (after,) = r2.trace.rings
    i = after.ring.index(1)
    assert before.links[i] == "nvlink" and after.links[i] == REROUTE["nvlink"] == "leaf"
    assert [k for j, k in enumerate(after.links) if j != i] == [
        k for j, k in enumerate(before.links) if j != i
    ]
    hop = [e for e in expand(r2.trace)[1] if e.kind == "allreduce"]
    assert {e.link for e in hop} == {"leaf"} and all(e.peer == 2 for e in hop)
    # A ring goes at the pace of its slowest hop: this ring already crosses a spine, slower
    # than the leaf detour, so the step takes no longer ...
    assert r2.sim_step_s == pytest.approx(plain[1].sim_step_s, rel=1e-12)
    assert r3.trace.rings[0].links == before.links  # mended after its step
    lanes_add_up(r2)
    # ... but a ring all on NVLink (one server) is slowed down by its one detour.
    _, ok, _, _ = two_steps(tmp_path / "one", servers=1)
    _, cut, _, _ = two_steps(tmp_path / "cut", ("link", 1, 1), servers=1)
    assert set(ok.trace.rings[0].links) == {"nvlink"}
    assert cut.sim_step_s > ok.sim_step_s


def test_a_dead_gpu_rolls_back(tmp_path) -> None:
    t = Trainer(RunConfig(**SMALL, checkpoint_every=1), tmp_path)
    try:
        t.train_step()
        t.inject("dead", 5)
        r = t.train_step()
    finally:
        t.close(final_checkpoint=False)
    assert [e.kind for e in r.events][:3] == ["gpu_failed", "restored", "gpu_replaced"]


def test_faults_are_refused_where_they_cannot_be_drawn(tmp_path) -> None:
    t = Trainer(RunConfig(**SMALL, checkpoint_every=0), tmp_path / "dp")
    try:
        with pytest.raises(ValueError, match="fault kind"):
            t.inject("meteor", 1)
        with pytest.raises(ValueError, match="gpu must be"):
            t.inject("straggler", 99)
        with pytest.raises(ValueError, match="milliseconds"):
            t.inject("data_stall", 0)
    finally:
        t.close(final_checkpoint=False)
    t = Trainer(RunConfig(**SMALL, checkpoint_every=0, tp=2), tmp_path / "tp")
    try:
        with pytest.raises(ValueError, match="data-parallel runs only"):
            t.inject("straggler", 1)
    finally:
        t.close(final_checkpoint=False)


def test_train_cli_takes_faults(tmp_path) -> None:
    args = ["--gpus", "4", "--servers", "1", "--steps", "2", "--run-dir", str(tmp_path)]
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "train", "--json", *args, "--fault", "straggler:2:1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    steps = [json.loads(line) for line in proc.stdout.splitlines()][:-1]
    spans = steps[1]["trace"]["spans"]
    assert any(s["kind"] == "wait" and s["lanes"] == [0, 2, 3] for s in spans)
    assert steps[1]["sim_step_s"] > steps[0]["sim_step_s"]
    bad = subprocess.run(
        [sys.executable, "-m", "app.cli", "train", *args, "--fault", "meteor:1:1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert bad.returncode == 2 and "KIND must be one of" in bad.stderr
