"""REST for the concept labs: computed answers, engine-backed ring passes, field-named 422s.

These are pure API tests on the labs router in a small app of its own; the browser tests in
tests/web/test_labs.py exercise the same routes through the real server.
"""

from __future__ import annotations

import typing
from dataclasses import fields

import numpy as np
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.labs.hardware import GPUS, PRECISIONS, GpuSpec
from app.labs.memory import MemoryResult, compute_memory
from app.routes import labs


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = FastAPI()
    app.include_router(labs.router)
    return TestClient(app)


def test_choices_match_the_hardware_tables() -> None:
    assert set(typing.get_args(labs.PrecisionId)) == set(PRECISIONS)
    assert set(typing.get_args(labs.GpuId)) == set(GPUS)


def test_memory_70b(client: TestClient) -> None:
    for r in (
        client.get("/api/labs/memory", params={"params": "70B", "precision": "bf16"}),
        client.post("/api/labs/memory", json={"params": "70B", "gpu": "h100-80gb"}),
    ):
        assert r.status_code == 200
        d = r.json()
        assert d["weights_bytes"] == 140e9
        assert d["gpus_to_serve"] == 4  # a tensor-parallel size: 3 would hold it
        assert d["training_bytes"] == pytest.approx(1.12e12)
        assert d["gpus_to_fit_training"] == 16
        assert d["memory_case"]["fits"] is False
        assert d["memory_case"]["fraction"] == pytest.approx(1120 / 72)
        assert {p["name"] for p in d["memory_case"]["parts"]} == {"weights", "grads", "optimizer"}
        assert d["spread_case"]["gpus"] == 16 and d["spread_case"]["fits"] is True
        assert d["spread_case"]["fraction"] == pytest.approx(1120 / 72 / 16)
        assert d["rules"] and "datasheet" in d["source"]


def test_memory_answer_is_the_calculators_result(client: TestClient) -> None:
    d = client.get("/api/labs/memory", params={"params": "70B"}).json()
    assert d == compute_memory("70B", "bf16", "h100-80gb").to_dict()
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert list(schema["MemoryResult"]["properties"]) == [f.name for f in fields(MemoryResult)]
    assert list(schema["GpuSpec"]["properties"]) == [f.name for f in fields(GpuSpec)]


def test_memory_on_b200_uses_the_hgx_180_gb(client: TestClient) -> None:
    # NVIDIA HGX B200: 1.44 TB over 8 GPUs = 180 GB each, 162 GB usable at 90%.
    d = client.post("/api/labs/memory", json={"params": "70B", "gpu": "b200-180gb"}).json()
    assert d["gpu_memory_bytes"] == 180e9
    assert d["gpus_to_fit_training"] == 7  # 1120 / 162 = 6.9
    assert d["gpu_label"] == "NVIDIA B200 (HGX, 180 GB)"


def test_memory_changes_with_precision_and_gpu(client: TestClient) -> None:
    a = client.post("/api/labs/memory", json={"params": "70B", "precision": "int4"}).json()
    b = client.post("/api/labs/memory", json={"params": "70B", "gpu": "h200-141gb"}).json()
    assert a["weights_bytes"] == 35e9 and a["gpus_to_serve"] == 1
    assert b["gpus_to_fit_training"] == 9  # 1120 / 126.9


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"params": 0}, "params"),
        ({"params": "-70B"}, "params"),
        ({"precision": "fp12"}, "precision"),
        ({"gpu": "h100-800gb"}, "gpu"),
    ],
)
def test_memory_invalid_input_is_422_naming_the_field(
    client: TestClient, body: dict, field: str
) -> None:
    r = client.post("/api/labs/memory", json=body)
    assert r.status_code == 422
    assert [e["loc"][-1] for e in r.json()["detail"]] == [field]
    q = client.get("/api/labs/memory", params=body)
    assert q.status_code == 422
    assert q.json()["detail"][0]["loc"] == ["query", field]


def test_ring_lab(client: TestClient) -> None:
    d = client.get("/api/labs/ring", params={"gpus": 6, "seed": 1}).json()
    g = d["gpus"]
    assert g == 6 and len(d["passes"]) == 2 * (g - 1)
    totals = np.array(d["initial"]).sum(axis=0)
    after_rs = np.array(d["passes"][g - 2]["values"])
    for gpu in range(g):
        assert after_rs[gpu, d["owner_chunk"][gpu]] == totals[d["owner_chunk"][gpu]]
    assert (np.array(d["passes"][-1]["values"]) == totals).all()
    per_link = {(x["src"], x["dst"]): x["bytes"] for x in d["per_link_bytes"]}
    sent: dict[tuple[int, int], int] = {}
    for p in d["passes"]:
        for s in p["sends"]:
            sent[(s["src"], s["dst"])] = sent.get((s["src"], s["dst"]), 0) + s["bytes"]
    assert per_link == sent
    assert len(d["scaling"]) == 15


@pytest.mark.parametrize("gpus", [1, 17, "six"])
def test_ring_lab_rejects_bad_sizes(client: TestClient, gpus: object) -> None:
    r = client.get("/api/labs/ring", params={"gpus": gpus})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", "gpus"]


def test_cost(client: TestClient) -> None:
    d = client.post(
        "/api/labs/cost", json={"params": "70B", "tokens": "2T", "gpus": 1024, "utilisation": 0.4}
    ).json()
    assert d["flops"] == pytest.approx(8.4e23)
    assert d["days"] == pytest.approx(8.4e23 / (1024 * 989e12 * 0.4) / 86400)
    assert d["inputs"]["peak_tflops"] == 989
    assert any("2026" in a for a in d["assumptions"])
    r = client.post("/api/labs/cost", json={"utilisation": 0})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "utilisation"


def test_options_and_content(client: TestClient) -> None:
    o = client.get("/api/labs/options").json()
    assert [g["id"] for g in o["gpus"]] == list(GPUS)
    assert o["gpus"] == [g.to_dict() for g in GPUS.values()]
    b200 = next(g for g in o["gpus"] if g["id"] == "b200-180gb")
    assert (b200["memory_gb"], b200["bf16_tflops"], b200["power_w"]) == (180, 2250, 1000)
    assert o["usable_fraction"] == 0.9
    c = client.get("/api/labs/content").json()
    assert len(c["swap_cards"]) == 4 and len(c["questions"]) >= 2


def test_lens_counts_activations_and_takes_recompute_and_zero(client: TestClient) -> None:
    kept = client.get("/api/labs/lens", params={"model": "70B", "recompute": "selective"}).json()
    assert kept["fits"] is True and kept["recompute"] == "selective" and kept["zero"] == 1
    assert set(kept["activation_bytes_per_gpu"]) == {"none", "selective", "full"}
    none = client.get("/api/labs/lens", params={"model": "70B", "recompute": "none"}).json()
    assert none["fits"] is False
    assert none["memory_per_gpu_bytes"] > kept["memory_per_gpu_bytes"]
    for bad in ({"zero": 4}, {"recompute": "half"}):
        r = client.get("/api/labs/lens", params={"model": "70B", **bad})
        assert r.status_code == 422 and next(iter(bad)) in r.text


def test_memory_says_what_a_published_shape_keeps_for_the_backward(client: TestClient) -> None:
    a = client.get("/api/labs/memory", params={"params": "405B"}).json()["activations"]
    assert a["shape"] == "llama3-405b" and a["layers"] == 126 and a["sequence"] == 8192
    assert a["bytes"]["none"] > a["bytes"]["selective"] > a["bytes"]["full"] > 0
    assert client.get("/api/labs/memory", params={"params": "7B"}).json()["activations"] is None
