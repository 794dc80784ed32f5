"""The classroom material loads, validates, and covers what the lessons need."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from app.labs.content import CLASSROOM_FILE, Classroom, load_classroom
from app.paths import SCENES_DIR


def test_classroom_json_validates_and_has_every_card() -> None:
    c = load_classroom()
    assert {card.placement for card in c.swap_cards} == {
        "data",
        "tensor_pipeline",
        "expert",
        "finetune",
    }
    themes = {q.theme for q in c.questions}
    assert {"practice", "building on others"} <= themes
    assert len(c.questions) >= 4
    assert "why do you think that" in c.grown_ups.lower()


def test_a_broken_file_is_rejected(tmp_path) -> None:
    data = json.loads((SCENES_DIR / CLASSROOM_FILE).read_text())
    data["swap_cards"][0]["placement"] = "sideways"
    bad = tmp_path / "classroom.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ValidationError):
        load_classroom(bad)
    assert Classroom.model_fields["questions"]


def test_the_sheets_loop_goes_round_in_order(tmp_path) -> None:
    c = load_classroom()
    assert [s.name for s in c.sheet.loop] == ["Forward", "Error", "Backward", "Update"]
    assert all(s.answer for s in c.sheet.loop)
    data = json.loads((SCENES_DIR / CLASSROOM_FILE).read_text())
    data["sheet"]["loop"].reverse()
    bad = tmp_path / "classroom.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ValidationError, match="forward, error, backward, update"):
        load_classroom(bad)
