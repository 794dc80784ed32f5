"""The parallel plan: which GPU does what, which groups it forms, and the rules a plan must
follow, each refused with one clear message."""

from __future__ import annotations

import pytest

from app.engine.config import RunConfig
from app.engine.plan import Plan, plan_problems


def test_tensor_ranks_are_innermost_then_stages_then_replicas() -> None:
    plan = Plan(gpus=16, gpus_per_server=8, tp=2, pp=2, ep=2, microbatches=4)
    assert plan.dp == 4
    seen = set()
    for g in range(16):
        d, s, t = plan.coords(g)
        assert plan.gpu(d, s, t) == g
        seen.add((d, s, t))
    assert len(seen) == 16
    assert [plan.coords(g) for g in range(4)] == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1)]
    assert plan.coords(4) == (1, 0, 0)
    # A TP group is consecutive GPUs: the same server.
    assert plan.tp_groups[0] == [0, 1]
    assert all(g[1] == g[0] + 1 and g[0] // 8 == g[1] // 8 for g in plan.tp_groups)
    # A DP group holds the same shard: same stage, same tensor rank.
    assert plan.dp_groups[0] == [0, 4, 8, 12]
    assert plan.dp_groups[3] == [3, 7, 11, 15]  # stage 1, tensor rank 1
    assert plan.pipelines[0] == [0, 2] and plan.pipelines[1] == [1, 3]
    # EP groups: ep consecutive replicas; the same experts live at the same d % ep.
    assert plan.ep_groups[0] == [0, 4] and plan.ep_groups[1] == [8, 12]
    assert plan.expert_dp_groups[0] == [0, 8] and plan.expert_dp_groups[1] == [4, 12]
    for groups, size in (
        (plan.tp_groups, 2),
        (plan.dp_groups, 4),
        (plan.pipelines, 2),
        (plan.ep_groups, 2),
        (plan.expert_dp_groups, 2),
    ):
        members = sorted(g for group in groups for g in group)
        assert members == list(range(16)) and all(len(x) == size for x in groups)
    assert plan.stage_gpus(1) == [2, 6, 10, 14, 3, 7, 11, 15]  # row t * dp + d
    # Counted from 1, as people do: GPU 7 is the second replica's second stage and shard.
    assert plan.describe(7) == "replica 2, stage 2 of 2, tensor shard 2 of 2, expert shard 2 of 2"


def test_data_parallel_is_the_plan_dp_equals_gpus() -> None:
    cfg = RunConfig()
    plan = Plan.of(cfg)
    assert (plan.dp, plan.tp, plan.pp, plan.ep, plan.microbatches) == (32, 1, 1, 1, 1)
    assert plan.data_parallel_only and plan.describe(5) == "replica"
    assert plan.dp_groups == [list(range(32))]
    assert plan.to_dict() == {
        "dp": 32, "tp": 1, "pp": 1, "ep": 1, "microbatches": 1, "schedule": "1f1b",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(gpus=8, servers=1, tp=3), r"tp \* pp \(3\) must divide gpus \(8\)"),
        (dict(gpus=8, servers=1, pp=4, n_layer=6), r"pp \(4\) must divide n_layer \(6\)"),
        (dict(gpus=8, servers=1, tp=8, n_head=4), r"tp \(8\) must divide n_head \(4\)"),
        (dict(gpus=8, servers=1, tp=8, n_embd=3, n_head=1), r"tp \(8\) must divide the MLP"),
        (dict(gpus=8, servers=4, tp=4), r"tp \(4\) must divide the GPUs per server \(2\)"),
        (dict(gpus=8, servers=1, ep=3, experts=6), r"ep \(3\) must divide dp \(8"),
        (dict(gpus=8, servers=1, ep=2), r"ep \(2\) needs experts"),
        (dict(gpus=8, servers=1, ep=4, experts=6), r"ep \(4\) must divide experts \(6\)"),
        (dict(gpus=8, servers=1, experts=4, top_k=5), r"top_k \(5\) must be at most experts \(4\)"),
        (dict(gpus=8, servers=1, batch_size=16, microbatches=3), r"microbatches \(3\) must div"),
        (dict(gpus=8, servers=1, tp=2, batch_size=6), r"batch_size \(6\) must be a .* of dp"),
        (dict(gpus=8, servers=1, schedule="zigzag"), r"schedule must be one of gpipe, 1f1b"),
        (dict(gpus=8, servers=1, microbatches=0), r"microbatches must be at least 1"),
    ],
)  # fmt: skip
def test_each_rule_is_refused_with_a_message_naming_it(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RunConfig(**changes)


def test_the_command_line_names_the_rules_in_its_own_words() -> None:
    problems = plan_problems(
        gpus=8, servers=1, n_layer=6, n_head=4, n_embd=64, batch_size=16, tp=1, pp=4,
        ep=1, microbatches=1, schedule="1f1b", experts=0, top_k=2,
        names={"pp": "--pp", "n_layer": "--layers"},
    )  # fmt: skip
    assert problems == ["--pp (4) must divide --layers (6)"]


def test_a_good_plan_passes_and_batch_rule_follows_dp() -> None:
    cfg = RunConfig(gpus=8, servers=1, tp=2, pp=2, microbatches=4, batch_size=8)
    assert cfg.dp == 2 and cfg.micro_batch == 1
    # A batch that is no multiple of the GPUs is fine when it is one of the replicas.
    RunConfig(gpus=8, servers=1, tp=4, batch_size=6)


def test_the_plan_is_not_part_of_a_runs_identity_but_experts_are() -> None:
    base = RunConfig(gpus=8, servers=1)
    planned = base.with_(tp=2, pp=2, microbatches=4, schedule="gpipe")
    assert planned.config_hash() == base.config_hash()
    moe = base.with_(experts=8)
    assert moe.config_hash() != base.config_hash()
    assert moe.with_(ep=4).config_hash() == moe.config_hash()
    assert moe.with_(top_k=1).config_hash() != moe.config_hash()
    # A dense model's identity is what it was before models could have experts.
    assert "experts" not in base.identity() and "top_k" not in base.identity()


def test_a_broken_rule_reads_as_one_sentence() -> None:
    with pytest.raises(ValueError) as e:
        RunConfig(gpus=8, servers=1, batch_size=16, microbatches=3)
    assert str(e.value) == (
        "microbatches (3) must divide the batch per data-parallel replica "
        "(2 = batch_size 16 / dp 8)"
    )
