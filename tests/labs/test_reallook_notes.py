"""'What it really looks like': the notes for each numbered part load and validate, name the
same parts as the main scene, point only at places the hall drawing has, and carry a source."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.labs.reallook import RealLook, reallook
from app.routes import labs

ROOT = Path(__file__).resolve().parents[2]


def test_the_bundled_notes_load_and_match_the_scenes_numbered_parts() -> None:
    notes = reallook()
    scene = json.loads((ROOT / "scenes" / "training-run.json").read_text())
    parts = {p["number"]: (p["id"], p["name"]) for p in scene["parts"]}
    assert {p.n: (p.part, p.name) for p in notes.parts} == parts


def test_every_anchor_is_one_the_hall_drawing_places() -> None:
    hall = (ROOT / "static" / "js" / "labs" / "hall.js").read_text()
    placed = set(re.findall(r"anchors\.(\w+) = ", hall))
    leads = set(re.findall(r"^\s+(\w+): \[-?\d+, -?\d+\],$", hall, re.M))
    used = {p.anchor for p in reallook().parts}
    assert used <= placed, used - placed
    assert used <= leads, used - leads


def test_parts_out_of_order_or_unsourced_are_refused() -> None:
    raw = json.loads((ROOT / "scenes" / "reallook.json").read_text())
    swapped = json.loads(json.dumps(raw))
    swapped["parts"][0], swapped["parts"][1] = swapped["parts"][1], swapped["parts"][0]
    with pytest.raises(ValidationError, match="numbered 1..7 in order"):
        RealLook.model_validate(swapped)
    unsourced = json.loads(json.dumps(raw))
    unsourced["parts"][2]["source"] = ""
    with pytest.raises(ValidationError, match="source"):
        RealLook.model_validate(unsourced)
    stray = json.loads(json.dumps(raw))
    stray["parts"][3]["anchor"] = "roof"
    with pytest.raises(ValidationError, match="anchor"):
        RealLook.model_validate(stray)


def test_the_api_serves_the_notes() -> None:
    app = FastAPI()
    app.include_router(labs.router)
    r = TestClient(app).get("/api/labs/reallook")
    assert r.status_code == 200
    body = r.json()
    assert [p["n"] for p in body["parts"]] == list(range(1, 8))
    assert all(p["source"] for p in body["parts"])
