"""REST for the model lens and the whole-run estimate: the engine's and the calculator's own
answers, field-named 422s, and choices that match the tables they come from."""

from __future__ import annotations

import typing

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.engine.lens import MODELS, lens
from app.engine.timing import PRESETS
from app.labs.cost import estimate
from app.routes import labs


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = FastAPI()
    app.include_router(labs.router)
    return TestClient(app)


def test_choices_match_the_engine_tables() -> None:
    assert set(typing.get_args(labs.ModelId)) == set(MODELS)
    assert set(typing.get_args(labs.PresetId)) == set(PRESETS)


def test_lens_route_is_the_engine_lens(client: TestClient) -> None:
    r = client.get("/api/labs/lens", params={"model": "70B", "gpus": 1024, "preset": "h100"})
    assert r.status_code == 200
    d = r.json()
    assert d == lens("70B", 1024, "h100").to_dict()
    assert d["compute_share"] > 0.8 and d["why"].startswith("Compute-bound")
    assert set(d["groups"]) >= {"compute", "update", "allreduce", "allreduce_hidden", "wait"}


def test_lens_route_names_the_bad_field(client: TestClient) -> None:
    r = client.get("/api/labs/lens", params={"model": "70B", "gpus": 1000})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", "gpus"]
    r = client.get("/api/labs/lens", params={"model": "13B"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "model"


def test_lens_models_lists_presets_and_plans(client: TestClient) -> None:
    d = client.get("/api/labs/lens/models").json()
    assert set(d["models"]) == set(MODELS)
    assert d["models"]["70B"]["plan"] == {"tp": 8, "pp": 4, "ep": 1}


def test_estimate_route_is_the_calculators_estimate(client: TestClient) -> None:
    body = {"params": "671B", "active_params": "37B", "tokens": "14.8T", "gpu": "h800-80gb"}
    r = client.post("/api/labs/estimate", json={**body, "gpus": 2048})
    assert r.status_code == 200
    expected = estimate("671B", "14.8T", "h800-80gb", active_params="37B", gpus=2048)
    assert r.json() == expected.to_dict()
    g = client.get("/api/labs/estimate", params={**body, "gpu": "b200"})
    assert g.status_code == 200 and g.json()["gpu"] == "b200-180gb"


def test_estimate_route_refuses_fp8_on_an_a100(client: TestClient) -> None:
    r = client.post(
        "/api/labs/estimate", json={"params": "7B", "gpu": "a100-80gb", "precision": "fp8"}
    )
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "precision"]


def test_cost_carries_expected_interruptions(client: TestClient) -> None:
    d = client.post("/api/labs/cost", json={"params": "70B", "tokens": "2T", "gpus": 16_384}).json()
    assert d["interruptions_per_day"] == pytest.approx(419 / 54)
    assert d["interruptions"] > 0


def test_lens_route_lays_out_the_schedule_asked_for(client: TestClient) -> None:
    """Interleaved 1F1B (virtual stages) on Llama 3 405B's published plan: the route is the
    engine's lens, the plan says which schedule, and the bubble it saves shows as a shorter
    step with less waiting; a schedule it cannot lay out is named by its field."""
    q = {"model": "405B", "gpus": 16384}
    plain = client.get("/api/labs/lens", params=q).json()
    r = client.get("/api/labs/lens", params={**q, "schedule": "interleaved", "virtual": 4})
    assert r.status_code == 200
    d = r.json()
    assert d == lens("405B", 16384, schedule="interleaved", virtual=4).to_dict()
    assert d["plan"]["schedule"] == "interleaved" and d["plan"]["virtual"] == 4
    assert plain["plan"]["schedule"] == "1f1b" and plain["plan"]["virtual"] == 1
    assert d["step_s"] < plain["step_s"] and d["shares"]["wait"] < plain["shares"]["wait"]
    assert d["mfu"] > plain["mfu"]
    assert any("interleaved 1F1B, 4 chunks of layers a stage" in a for a in d["assumptions"])
    # ZB-H1 puts the weights' gradients off into the gaps: less waiting than 1F1B, and the
    # same activations kept (its forwards and backwards run in 1F1B's order).
    zb = client.get("/api/labs/lens", params={**q, "schedule": "zb-h1"}).json()
    assert zb["plan"]["schedule"] == "zb-h1" and zb["step_s"] < plain["step_s"]
    assert zb["shares"]["wait"] < plain["shares"]["wait"]
    assert zb["activation_bytes_per_gpu"] == plain["activation_bytes_per_gpu"]
    gpipe = client.get("/api/labs/lens", params={**q, "schedule": "gpipe"}).json()
    assert gpipe["plan"]["schedule"] == "gpipe"
    # GPipe keeps every microbatch's activations until the backward: more than 1F1B.
    assert (
        gpipe["activation_bytes_per_gpu"]["selective"]
        > plain["activation_bytes_per_gpu"]["selective"]
    )
    for bad, field in (
        ({"schedule": "zigzag"}, "schedule"),
        ({"virtual": 2}, "virtual"),  # chunks without the interleaved schedule
        ({"schedule": "interleaved", "virtual": 16}, "virtual"),  # 256 chunks, 126 layers
    ):
        r = client.get("/api/labs/lens", params={**q, **bad})
        assert r.status_code == 422, bad
        assert r.json()["detail"][0]["loc"][-1] == field, r.json()
    # 70B on 1,024 GPUs has 16 microbatches a replica over 4 stages: whole rounds.
    assert lens("70B", 1024, schedule="interleaved", virtual=2).plan["virtual"] == 2
