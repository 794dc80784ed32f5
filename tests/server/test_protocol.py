"""The wire contract: models mirror the engine, the checked-in schema matches, controls validate."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from app import protocol
from app.engine.cluster import Topology
from app.engine.config import RunConfig
from app.engine.report import StepReport
from app.protocol import ConfigMsg, StepFields, TopologyMsg, control_adapter

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "protocol.schema.json"


def test_checked_in_schema_matches_the_models() -> None:
    on_disk = json.loads(SCHEMA.read_text())
    assert on_disk == protocol.json_schema(), (
        "docs/protocol.schema.json is stale: run python -m app.protocol > docs/protocol.schema.json"
    )


@pytest.mark.parametrize(
    ("model", "source"),
    [(StepFields, StepReport), (ConfigMsg, RunConfig), (TopologyMsg, Topology)],
)
def test_wire_models_name_every_engine_field(model: type, source: type) -> None:
    engine = {f.name for f in dataclasses.fields(source)}
    assert engine == set(model.model_fields)


@pytest.mark.parametrize(
    "body",
    [
        {"type": "control", "action": "pause"},
        {"type": "control", "action": "speed", "value": "max"},
        {"type": "control", "action": "speed", "value": 0.1},
        {"type": "control", "action": "speed", "value": 1000},
        {"type": "control", "action": "reset", "seed": 0, "preset": "a100"},
        {"type": "control", "action": "fail_gpu", "gpu": 0, "token": "x" * 20},
    ],
)
def test_good_controls_validate(body: dict) -> None:
    assert control_adapter.validate_python(body).action == body["action"]


@pytest.mark.parametrize(
    "body",
    [
        {"type": "control", "action": "speed", "value": 0.05},
        {"type": "control", "action": "speed", "value": 1001},
        {"type": "control", "action": "speed"},
        {"type": "control", "action": "reset", "seed": -1},
        {"type": "control", "action": "fail_gpu"},
        {"type": "control", "action": "fail_gpu", "gpu": -1},
        {"type": "control", "action": "explode"},
        {"type": "control", "action": "pause", "extra": 1},
    ],
)
def test_bad_controls_are_refused(body: dict) -> None:
    with pytest.raises(ValidationError):
        control_adapter.validate_python(body)
