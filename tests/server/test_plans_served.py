"""Planned runs served live: every plan field reaches the engine, from the command line, the
environment and a `reset`; the hello says the plan and each GPU's role; each step carries the
plan's measured figures (`plan_stats`); a plan that breaks a rule is refused, naming it, and
the run goes on.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from pydantic import ValidationError
from wsclient import Client, is_event

from app.cli.serve import settings_from_args
from app.engine.config import RunConfig
from app.engine.trace import trace_from_dict
from app.engine.trainer import Trainer
from app.labs.content import CLASSROOM_FILE, classroom, load_classroom
from app.paths import SCENES_DIR
from app.protocol import PLAN_FIELDS, ResetControl, StepFields
from app.settings import Settings

PLAN_KEYS = {"dp", "tp", "pp", "ep", "microbatches", "schedule", "experts", "top_k"}


@pytest.fixture(scope="module")
def srv(live_server_module):
    return live_server_module("--speed", "20", "--checkpoint-every", "0")


def run(coro):
    return asyncio.run(coro)


async def reset_and_watch(url: str, steps: int = 3, **fields: object):
    """Reset with `fields`; the first hello, the new hello and the new run's first steps."""
    c = await Client.connect(url)
    first = await c.until("hello")
    await c.until("snapshot")
    await c.control("reset", **fields)
    await c.until(is_event("run_reset"))
    hello = await c.until("hello")
    await c.until("snapshot")
    got = [await c.until("step", timeout=60) for _ in range(steps)]
    await c.close()
    return first, hello, got


def kinds_in(trace: dict) -> set[str]:
    t = trace_from_dict(trace)
    return {x.kind for x in (*t.spans, *t.rings, *t.p2p, *t.all_to_all)}


def test_reset_to_dp2_tp2_pp2_with_microbatches_serves_that_plan(srv) -> None:
    first, hello, steps = run(
        reset_and_watch(srv.ws_url, tp=2, pp=2, ep=1, experts=0, microbatches=4, schedule="1f1b")
    )
    assert first["plan"]["dp"] == 8 and first["plan"]["tp"] == first["plan"]["pp"] == 1
    plan = hello["plan"]
    assert set(plan) == PLAN_KEYS
    assert plan == {
        "dp": 2,
        "tp": 2,
        "pp": 2,
        "ep": 1,
        "microbatches": 4,
        "schedule": "1f1b",
        "experts": 0,
        "top_k": 2,
    }
    assert hello["config"]["tp"] == 2 and hello["config"]["microbatches"] == 4
    roles = hello["roles"]
    assert [r["gpu"] for r in roles] == list(range(8))
    # Tensor ranks innermost, then stages, then copies: gpu = d * (pp * tp) + s * tp + t.
    assert [(r["dp"], r["stage"], r["tp"]) for r in roles] == [
        (d, s, t) for d in range(2) for s in range(2) for t in range(2)
    ]
    assert roles[3]["holds"] == "replica 1, stage 2 of 2, tensor shard 2 of 2"
    assert roles[0]["layers"] == [0, 1] and roles[3]["layers"] == [1, 2]
    assert all(r["experts"] == [0, 0] for r in roles)
    for s in steps:
        stats = s["plan_stats"]
        assert 0 < stats["bubble_fraction"] < 1
        assert len(stats["stage_activation_bytes"]) == 2
        assert stats["peak_activation_bytes"] == max(stats["stage_activation_bytes"]) > 0
        assert stats["peak_activation_bytes"] == max(m["activations"] for m in s["memory"])
        assert {"p2p", "tp_allreduce", "allreduce"} <= kinds_in(s["trace"])
        assert stats["traffic_bytes"]["p2p"] > 0 and stats["traffic_bytes"]["tp_allreduce"] > 0
        assert s["trace"]["p2p"] and any(r["kind"] == "tp_allreduce" for r in s["trace"]["rings"])


def test_reset_to_16_experts_top2_over_4_gpus_sends_tokens_all_to_all(srv) -> None:
    _, hello, steps = run(
        reset_and_watch(srv.ws_url, tp=1, pp=1, microbatches=1, experts=16, top_k=2, ep=4)
    )
    assert hello["plan"]["experts"] == 16 and hello["plan"]["ep"] == 4
    assert hello["plan"]["top_k"] == 2 and hello["plan"]["dp"] == 8
    roles = hello["roles"]
    # Each EP group of 4 GPUs shares out the 16 experts, 4 each.
    assert [r["experts"] for r in roles[:5]] == [[0, 4], [4, 8], [8, 12], [12, 16], [0, 4]]
    assert roles[5]["holds"] == "replica 6, expert shard 2 of 4"
    for s in steps:
        assert "all_to_all" in kinds_in(s["trace"]) and s["trace"]["all_to_all"]
        assert s["plan_stats"]["traffic_bytes"]["all_to_all"] > 0
        assert s["plan_stats"]["bubble_fraction"] == 0


BAD_PLANS: list[tuple[dict[str, object], str, str]] = [
    ({"tp": 3}, "bad_config", "tp * pp (3) must divide gpus (8)"),
    ({"tp": 8, "pp": 1}, "bad_config", "a tensor-parallel group stays inside one server"),
    ({"pp": 2, "n_layer": 3}, "bad_config", "pp (2) must divide n_layer (3)"),
    ({"ep": 2, "experts": 0}, "bad_config", "ep (2) needs experts"),
    ({"experts": 6, "ep": 4}, "bad_config", "ep (4) must divide experts (6)"),
    ({"experts": 4, "top_k": 5, "ep": 1}, "bad_config", "top_k (5) must be at most experts"),
    ({"microbatches": 3, "tp": 1, "pp": 1}, "bad_config", "microbatches (3) must divide"),
    ({"schedule": "zigzag"}, "bad_config", "schedule must be one of gpipe, 1f1b"),
    ({"tp": 0}, "out_of_range", "tp"),
    ({"n_layer": 33}, "out_of_range", "n_layer"),
    ({"microbatches": 1000}, "out_of_range", "microbatches"),
    ({"tp": 2.0}, "invalid_field", "tp"),
    ({"experts": "8"}, "invalid_field", "experts"),
    ({"layers": 4}, "unknown_field", "layers"),
]


def test_bad_plans_are_refused_naming_the_rule_and_the_run_goes_on(srv) -> None:
    async def go():
        c = await Client.connect(srv.ws_url)
        hello = await c.until("hello")
        await c.until("snapshot")
        got = []
        for fields, _code, _word in BAD_PLANS:
            await c.control("reset", **fields)
            got.append(await c.until("error"))
        before = await c.until("step", timeout=60)
        after = await c.until("step", timeout=60)
        await c.close()
        return hello, got, before, after

    hello, got, before, after = run(go())
    for (fields, code, word), err in zip(BAD_PLANS, got, strict=True):
        assert err["code"] == code, (fields, err)
        assert word in err["message"], (fields, err)
    assert after["seq"] > before["seq"]
    status = httpx.get(srv.url + "/api/run").json()
    assert status["run_id"] == hello["run_id"] and status["state"] == "running"


def test_a_data_parallel_step_reports_its_plan_stats(tmp_path) -> None:
    """The fast path too: no bubble, the activation bytes it knows, the ring's traffic."""
    t = Trainer(RunConfig(gpus=4, servers=1, batch_size=16, microbatches=2), tmp_path)
    try:
        report = t.train_step()
    finally:
        t.close(final_checkpoint=False)
    stats = report.plan_stats
    assert stats.bubble_fraction == 0.0
    assert stats.peak_activation_bytes == report.memory[0].activations > 0
    assert stats.stage_activation_bytes == [stats.peak_activation_bytes]
    # The gradient all-reduce is the only traffic (however its buckets are kinded).
    assert set(stats.traffic_bytes) <= {"allreduce", "allreduce_hidden"}
    assert sum(stats.traffic_bytes.values()) == report.ring.bytes_total > 0
    body = StepFields.model_validate(report).model_dump_json()
    assert '"plan_stats":{"bubble_fraction":0.0' in body


# --- the command line and the environment ------------------------------------------------


def test_serve_options_reach_the_engine(live_server) -> None:
    srv = live_server(
        "--tp", "2", "--pp", "2", "--microbatches", "2", "--schedule", "gpipe", "--layers", "4"
    )

    async def go():
        c = await Client.connect(srv.ws_url)
        hello = await c.until("hello")
        step = await c.until("step", timeout=60)
        await c.close()
        return hello, step

    hello, step = run(go())
    assert hello["plan"] == {
        "dp": 2,
        "tp": 2,
        "pp": 2,
        "ep": 1,
        "microbatches": 2,
        "schedule": "gpipe",
        "experts": 0,
        "top_k": 2,
    }
    assert hello["config"]["n_layer"] == 4 and hello["roles"][2]["layers"] == [2, 4]
    assert step["plan_stats"]["bubble_fraction"] > 0


def test_environment_variables_set_the_plan(monkeypatch, tmp_path) -> None:
    for name, value in {
        "TRAININGRUN_GPUS": "8",
        "TRAININGRUN_SERVERS": "2",
        "TRAININGRUN_LAYERS": "4",
        "TRAININGRUN_EXPERTS": "8",
        "TRAININGRUN_TOP_K": "1",
        "TRAININGRUN_EP": "2",
        "TRAININGRUN_TP": "2",
        "TRAININGRUN_PP": "2",
        "TRAININGRUN_MICROBATCHES": "4",
        "TRAININGRUN_SCHEDULE": "gpipe",
    }.items():
        monkeypatch.setenv(name, value)
    s = settings_from_args(["--run-dir", str(tmp_path / "run")])
    c = s.run_config()
    got = (c.n_layer, c.experts, c.top_k, c.ep, c.tp, c.pp, c.microbatches, c.schedule)
    assert got == (4, 8, 1, 2, 2, 2, 4, "gpipe")
    assert {"n_layer", "experts", "tp"} <= s.runner_options().explicit


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--tp", "3"], {}, "--tp * --pp (3) must divide --gpus (8)"),
        (["--pp", "4"], {}, "--pp (4) must divide --layers (2)"),
        (["--ep", "2"], {}, "--ep (2) needs experts: set --experts to a multiple of it"),
        (["--experts", "6", "--ep", "4"], {}, "--ep (4) must divide --experts (6)"),
        (["--tp", "2", "--microbatches", "3"], {}, "--microbatches (3) must divide"),
        (["--schedule", "zigzag"], {}, "invalid choice: 'zigzag'"),
        (["--layers", "0"], {}, "--layers: Input should be greater than or equal to 1"),
        ([], {"TRAININGRUN_TP": "3"}, "TRAININGRUN_TP * --pp (3) must divide --gpus (8)"),
        ([], {"TRAININGRUN_SCHEDULE": "zigzag"}, "TRAININGRUN_SCHEDULE must be one of"),
        ([], {"TRAININGRUN_PP": "2", "TRAININGRUN_LAYERS": "3"}, "TRAININGRUN_LAYERS (3)"),
    ],
)
def test_an_invalid_plan_is_one_line_naming_the_option_or_the_variable(
    argv, env, message, monkeypatch, capsys, tmp_path
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    base = ["--gpus", "8", "--servers", "2", "--run-dir", str(tmp_path / "run")]
    with pytest.raises(SystemExit) as exit_:
        settings_from_args([*base, *argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1], err
    assert err[-1].startswith("trainingrun serve: ")


def test_a_resets_plan_bounds_are_the_servers_own() -> None:
    """A reset may ask for exactly the plans the server itself could be started with."""

    def bound(model: type, name: str, kind: str) -> int:
        meta = model.model_fields[name].metadata
        return next(getattr(m, kind) for m in meta if getattr(m, kind, None) is not None)

    setting = {"n_layer": "layers"}
    for name in PLAN_FIELDS:
        if name == "schedule":
            continue
        s = setting.get(name, name)
        assert bound(ResetControl, name, "le") == bound(Settings, s, "le"), name
        assert bound(ResetControl, name, "ge") == bound(Settings, s, "ge"), name


# --- the swap-it cards' plans ---------------------------------------------------------------


@pytest.mark.parametrize(("gpus", "servers"), [(32, 4), (8, 2), (16, 2)])
def test_every_live_swap_card_runs_on_the_usual_clusters(gpus: int, servers: int) -> None:
    cards = classroom().swap_cards
    live = [c for c in cards if c.plan is not None]
    assert [c.placement for c in live] == ["data", "tensor_pipeline", "expert"]
    for c in live:
        config = RunConfig(
            gpus=gpus,
            servers=servers,
            batch_size=RunConfig.batch_for(gpus),
            **c.plan.model_dump(),
        )
        assert config.gpus == gpus and c.watch
    # The one card that is shown, not run, says so on the card.
    shown = [c for c in cards if c.plan is None]
    assert [c.placement for c in shown] == ["finetune"]
    assert shown[0].not_run.startswith("Shown, not run")


def test_a_swap_card_without_a_plan_must_say_why(tmp_path) -> None:
    data = json.loads((SCENES_DIR / CLASSROOM_FILE).read_text())
    data["swap_cards"][3]["not_run"] = ""
    path = tmp_path / "classroom.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValidationError, match="say why in not_run"):
        load_classroom(path)
    data["swap_cards"][0]["plan"]["schedule"] = "zigzag"
    data["swap_cards"][3]["not_run"] = "Shown, not run."
    path.write_text(json.dumps(data))
    with pytest.raises(ValidationError, match="schedule must be one of gpipe, 1f1b"):
        load_classroom(path)
