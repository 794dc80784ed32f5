"""Each timing rule pinned to its source: the kernel floor, NCCL's all-reduce algorithms and the
bytes they put on every link, BF16 gradients on the wire, DDP's buckets and their overlap
with the backward pass, checkpoints written once per shard, and the update as its own group."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.collectives import ring_allreduce
from app.engine.config import RunConfig
from app.engine.lens import step_groups
from app.engine.plan import Plan
from app.engine.steptrace import plan_shard_holders
from app.engine.timing import (
    BUCKET_BYTES,
    FIRST_BUCKET_BYTES,
    GRAD_WIRE_BYTES,
    KERNEL_FLOOR_S,
    KERNELS_OUTSIDE_LAYERS,
    KERNELS_PER_LAYER,
    allreduce_algorithms,
    bucket_tensors,
    checkpoint_seconds,
    checkpoint_writers,
    compute_seconds,
    get_preset,
    hierarchical_link_bytes,
    layer_kernels,
    nccl_allreduce,
    optimizer_seconds,
    overlap_buckets,
    ring_link_bytes,
    ring_seconds_by_pass,
)
from app.engine.trace import GROUPS, KINDS, expand, lane_sums
from app.engine.trainer import Trainer

H100 = get_preset("h100")
MiB = 1024 * 1024


# ---- compute: 6ND at the stated utilisation, with a per-kernel floor ------------------------


def test_big_work_runs_at_the_stated_utilisation_small_work_at_the_kernel_floor() -> None:
    flops = 6 * 70e9 * 8192
    assert compute_seconds(H100, flops, kernels=30) == pytest.approx(
        flops / (H100.flops * H100.mfu)
    )
    # A tiny op is launch-bound: each of its kernels takes the floor, a few microseconds.
    assert compute_seconds(H100, 1e3, kernels=24) == pytest.approx(24 * KERNEL_FLOOR_S)
    assert 1e-6 <= KERNEL_FLOOR_S <= 10e-6
    assert layer_kernels("forward", 2) == 2 * KERNELS_PER_LAYER["forward"] + 4
    assert KERNELS_PER_LAYER["backward"] == 2 * KERNELS_PER_LAYER["forward"]
    assert KERNELS_OUTSIDE_LAYERS["backward"] == 2 * KERNELS_OUTSIDE_LAYERS["forward"]


def test_update_is_a_memory_bound_sweep_of_fp32_state() -> None:
    n = 8e9
    # AdamW reads weights, grads, m, v and writes weights, m, v: 7 x 4 bytes a parameter.
    assert optimizer_seconds(H100, n) == pytest.approx(7 * n * 4 / H100.hbm_bytes_per_s)


# ---- the all-reduce as NCCL runs it -----------------------------------------------------------


@pytest.mark.parametrize("g", [2, 4, 8, 32])
def test_ring_all_reduce_puts_2_g_minus_1_over_g_of_the_buffer_on_every_link(g: int) -> None:
    n = 64 * g  # divides evenly into g chunks
    _, trace = ring_allreduce(np.ones((g, n), dtype=np.float32))
    size = n * 4
    assert ring_link_bytes(size, g) == 2 * (g - 1) / g * size
    assert set(trace.bytes_by_link().values()) == {ring_link_bytes(size, g)}


def test_hierarchical_all_reduce_bytes_per_nvlink_and_per_nic() -> None:
    # 8 GPUs in each of 16 servers, 8 GB of gradients.
    b = hierarchical_link_bytes(8e9, 8, 16)
    assert b["nvlink"] == pytest.approx(2 * 7 / 8 * 8e9)  # reduce-scatter + all-gather inside
    assert b["nic"] == pytest.approx(2 * 15 / 16 * 8e9 / 8)  # a ring per rail on S / 8
    # The same bytes as the real collectives: a ring inside a server moves (n-1)/n x S per
    # GPU in its reduce-scatter and as much in its all-gather; the ring across servers
    # all-reduces one GPU's shard of S / n.
    n, servers, elements = 8, 16, 8 * 16 * 64
    _, inside = ring_allreduce(np.ones((n, elements), dtype=np.float32))
    _, across = ring_allreduce(np.ones((servers, elements // n), dtype=np.float32))
    size = elements * 4
    per = hierarchical_link_bytes(size, n, servers)
    assert inside.bytes_sent_by_gpu()[0] == pytest.approx(per["nvlink"])
    assert across.bytes_sent_by_gpu()[0] == pytest.approx(per["nic"])
    assert hierarchical_link_bytes(size, n, 1)["nic"] == 0


def test_ring_closed_form_is_the_pass_by_pass_rule() -> None:
    # 4 servers of 8: seven NVLink hops and one spine hop in each server, 8 NIC rails.
    n, servers, size = 8, 4, 64 * 2**20
    g = n * servers
    links = (["nvlink"] * (n - 1) + ["spine"]) * servers
    chunks = [size // g] * g
    by_pass = ring_seconds_by_pass(H100, links, chunks, rails=n)
    assert len(by_pass) == 2 * (g - 1)
    assert allreduce_algorithms(H100, size, n, servers)["ring"] == pytest.approx(sum(by_pass))
    # Rails: one ring channel per NIC, so a NIC hop carries an eighth of the chunk.
    one_rail = sum(ring_seconds_by_pass(H100, links, chunks, rails=1))
    assert one_rail > sum(by_pass)


def test_nccl_takes_the_tree_for_small_messages_at_scale_and_the_ring_for_big_ones() -> None:
    # NCCL 2.4 (Jeaugey, NVIDIA 2019): a ring's latency grows with the GPUs (2(G-1) hops), a
    # double binary tree's with log2 of the servers.
    small = allreduce_algorithms(H100, 4096, 8, 128)
    assert nccl_allreduce(H100, 4096, 8, 128)[0] == "tree"
    assert small["ring"] > 10 * small["tree"]
    assert nccl_allreduce(H100, 8e9, 8, 4)[0] == "ring"
    # Inside one server there is only NVLink, and the ring.
    assert nccl_allreduce(H100, 1e6, 8, 1)[0] == "ring"
    # Every algorithm moves about 2 x S over the slowest path: none is free.
    big = allreduce_algorithms(H100, 8e9, 8, 4)
    assert min(big.values()) >= 8e9 * 2 * 31 / 32 / min(H100.nvlink_bytes_per_s, 8 * 50e9)


# ---- DDP's buckets and the overlap with the backward ----------------------------------------


def test_buckets_follow_pytorch_ddp() -> None:
    # torch/csrc/distributed/c10d/reducer.hpp: the first bucket is capped at 1 MiB, the
    # others at 25 MiB (bucket_cap_mb=25); a bucket closes once it holds its limit.
    assert (FIRST_BUCKET_BYTES, BUCKET_BYTES) == (MiB, 25 * MiB)
    sizes = [600_000, 600_000, 10 * MiB, 20 * MiB, 5 * MiB]
    assert bucket_tensors(sizes) == [[0, 1], [2, 3], [4]]
    assert bucket_tensors([100]) == [[0]]


def test_only_what_is_left_after_the_backward_lengthens_the_step() -> None:
    o = overlap_buckets([1.0, 2.0, 3.0], [0.5, 0.5, 0.5], compute_end=3.0)
    assert o.starts == [1.0, 2.0, 3.0]
    assert (o.hidden, o.exposed) == (1.0, 0.5)
    # A slow network queues the buckets: each waits for the one before.
    o = overlap_buckets([1.0, 2.0, 3.0], [1.5, 1.5, 1.5], compute_end=3.0)
    assert o.starts == [1.0, 2.5, 4.0] and o.exposed == pytest.approx(2.5)
    assert o.hidden + o.exposed == pytest.approx(4.5)


BIG = dict(
    gpus=4, servers=1, n_embd=256, n_head=4, batch_size=8, corpus_stories=120, checkpoint_every=2
)


@pytest.fixture(scope="module")
def big_steps(tmp_path_factory):
    t = Trainer(RunConfig(**BIG), tmp_path_factory.mktemp("big"))
    try:
        yield t, [t.train_step(), t.train_step()]
    finally:
        t.close(final_checkpoint=False)


def test_gradients_travel_as_bf16_while_the_model_computes_in_float32(big_steps) -> None:
    t, (r1, _) = big_steps
    assert t.config.dtype == "float32" and GRAD_WIRE_BYTES == 2
    assert r1.ring.bytes_total == 2 * (t.config.gpus - 1) * t.n_params * GRAD_WIRE_BYTES
    wire = sum(sum(r.chunk_bytes) for r in r1.trace.rings)
    assert wire == t.n_params * GRAD_WIRE_BYTES


def test_buckets_that_start_during_the_backward_run_beside_it(big_steps) -> None:
    t, (r1, _) = big_steps
    assert t.n_params * GRAD_WIRE_BYTES > FIRST_BUCKET_BYTES  # more than one bucket
    rings = r1.trace.rings
    assert [r.kind for r in rings] == ["allreduce_hidden", "allreduce"]
    (bwd,) = [s for s in r1.trace.spans if s.kind == "backward"]
    hidden, exposed = rings
    assert bwd.t0 < hidden.t0 and hidden.t0 + hidden.dur <= bwd.t0 + bwd.dur
    assert exposed.t0 == pytest.approx(bwd.t0 + bwd.dur)
    assert KINDS["allreduce_hidden"]["overlaps"] and not KINDS["allreduce"]["overlaps"]
    # The lanes' own events still add up to the step; the all-reduce group is the exposed
    # part, and the hidden part shows beside it.
    for sums in lane_sums(r1.trace):
        assert sum(sums.values()) == pytest.approx(r1.sim_step_s, rel=1e-12)
        assert sums["allreduce"] == pytest.approx(exposed.dur, rel=1e-12)
        assert "allreduce_hidden" not in sums
    groups = step_groups(r1.trace)
    assert groups["allreduce_hidden"] == pytest.approx(hidden.dur, rel=1e-12)
    # Every byte of the real ring is sent once, in one bucket or the other.
    assert sum(e.bytes for lane in expand(r1.trace) for e in lane if e.bytes and e.kind in (
        "allreduce", "allreduce_hidden"
    )) == r1.ring.bytes_total  # fmt: skip


def test_a_bucket_still_on_the_wire_when_the_backward_ends_is_waited_for() -> None:
    from app.engine.gradsync import SyncRing, add_grad_sync
    from app.engine.trace import StepTraceBuilder

    b = StepTraceBuilder(2)
    ring = SyncRing(gpus=[0, 1], links=["spine", "spine"], elements=3 * MiB, rails=1)
    # 6 MiB of BF16 gradients: a 1 MiB bucket ready a sixth of the way through a 20 us
    # backward, still on the wire when it ends; then the 5 MiB rest.
    end = add_grad_sync(b, H100, [[ring]], window=(0.0, 2e-5))
    trace = b.done(end)
    assert [r.kind for r in trace.rings] == ["allreduce_hidden", "allreduce"]
    first, rest = trace.rings
    (wait,) = [s for s in trace.spans if s.kind == "allreduce_wait"]
    assert wait.t0 == pytest.approx(2e-5) and wait.t0 + wait.dur == pytest.approx(
        first.t0 + first.dur
    )
    assert rest.t0 == pytest.approx(wait.t0 + wait.dur)
    for sums in lane_sums(trace):
        assert set(sums) == {"allreduce"}  # the wait is the exposed all-reduce too
        assert sum(sums.values()) == pytest.approx(end - 2e-5, rel=1e-9)


# ---- checkpoints: one writer per shard -------------------------------------------------------


def test_each_shard_is_written_once_by_the_first_gpu_holding_it() -> None:
    server_of = [g // 8 for g in range(32)]
    writers, per_server = checkpoint_writers(plan_shard_holders(Plan(32, 8)), server_of)
    assert writers == [0] and per_server == [1, 0, 0, 0]
    plan = Plan(32, 8, tp=4, pp=2)
    writers, per_server = checkpoint_writers(plan_shard_holders(plan), server_of)
    assert writers == list(range(8)) and per_server == [8, 0, 0, 0]
    # Writers in one server share its storage; writers spread over servers do not.
    gb = 80e9
    assert checkpoint_seconds(H100, gb, [1, 0]) == pytest.approx(gb / H100.storage_bytes_per_s)
    assert checkpoint_seconds(H100, gb, [8]) == pytest.approx(gb / H100.storage_bytes_per_s)
    assert checkpoint_seconds(H100, gb, [2, 2, 2, 2]) == pytest.approx(
        gb / 4 / H100.storage_bytes_per_s
    )


def test_checkpoint_is_on_the_writers_lane_and_the_rest_wait(big_steps) -> None:
    _, (_, r2) = big_steps
    (ckpt,) = [s for s in r2.trace.spans if s.kind == "checkpoint"]
    (wait,) = [s for s in r2.trace.spans if s.kind == "wait" and s.t0 == ckpt.t0]
    assert ckpt.lanes == [0] and wait.lanes == [1, 2, 3] and wait.dur == ckpt.dur


# ---- the update is its own group ----------------------------------------------------------------


def test_the_optimizer_update_is_its_own_time_bar_group(big_steps) -> None:
    _, (r1, _) = big_steps
    assert KINDS["optimizer"]["group"] == "update"
    ids = [g for g, _ in GROUPS]
    assert ids.index("compute") < ids.index("update") < ids.index("allreduce")
    assert {"update", "allreduce_hidden"} <= set(ids)
    assert {str(k["group"]) for k in KINDS.values()} <= set(ids)
    sums = lane_sums(r1.trace)[0]
    assert sums["update"] > 0 and "optimizer" not in sums
