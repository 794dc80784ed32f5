"""The scene files validate, and a broken scene fails with an error that says what is wrong."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest

from app.paths import SCENES_DIR
from app.scenes import (
    CAPTION_PLACEHOLDERS,
    PART_IDS,
    SceneInvalid,
    SceneNotFound,
    list_scenes,
    load_scene,
    parse_scene,
)


def _raw() -> dict:
    return json.loads((SCENES_DIR / "training-run.json").read_text(encoding="utf-8"))


def _write(tmp_path: Path, raw: dict, name: str = "training-run") -> Path:
    (tmp_path / f"{name}.json").write_text(json.dumps(raw), encoding="utf-8")
    return tmp_path


def test_training_run_scene_loads_with_seven_numbered_parts() -> None:
    spec = load_scene("training-run")
    assert [p.number for p in spec.parts] == [1, 2, 3, 4, 5, 6, 7]
    assert [p.id for p in spec.parts] == list(PART_IDS)
    for part in spec.parts:
        assert part.description.strip() and part.name.strip()


def test_views_cover_overview_and_keys_one_to_four() -> None:
    spec = load_scene("training-run")
    assert sorted(v.key for v in spec.views) == [0, 1, 2, 3, 4]
    framed = {f for v in spec.views for f in v.frame}
    # Between them the views show every part (or the overview frames everything).
    assert "all" in framed or set(PART_IDS) <= framed


def test_tour_visits_every_part_and_uses_only_known_placeholders() -> None:
    spec = load_scene("training-run")
    assert {s.part for s in spec.tour} == set(PART_IDS)
    used = {
        f for s in spec.tour for _, f, _, _ in string.Formatter().parse(s.caption) if f is not None
    }
    assert used and used <= set(CAPTION_PLACEHOLDERS)
    assert sum(s.duration_s for s in spec.tour) < 120  # a tour fits in two minutes


def test_the_page_gets_every_live_value_name_as_placeholders() -> None:
    # One table of names: what the tour may quote is what the page is told it can fill.
    assert load_scene("training-run").placeholders == CAPTION_PLACEHOLDERS
    for name, meaning in CAPTION_PLACEHOLDERS.items():
        assert name.isidentifier() and meaning.strip(), name


def test_the_key_map_is_not_scene_data(tmp_path: Path) -> None:
    # The page's own table (static/js/ui/keys.js) is the one key map; a scene that brings a
    # second one is refused rather than silently ignored.
    assert "keys" not in _raw()
    raw = _raw()
    raw["keys"] = [{"key": "S", "label": "signal"}]
    with pytest.raises(SceneInvalid, match="keys"):
        load_scene("training-run", _write(tmp_path, raw))


def test_every_meaning_colour_has_a_default_and_projector_shade() -> None:
    spec = load_scene("training-run")
    for name in ("forward", "backward", "allreduce", "waiting", "failure", "saved"):
        c = spec.colours[name]
        assert c.default.startswith("#") and c.projector.startswith("#")
    # Failure must not rely on colour alone.
    assert "X" in spec.colours["failure"].shape


def test_list_scenes_names_the_training_run() -> None:
    assert {"name": "training-run", "title": "A Training Run"} in list_scenes()


def test_unknown_scene_is_not_found() -> None:
    with pytest.raises(SceneNotFound):
        load_scene("no-such-scene")
    with pytest.raises(SceneNotFound):
        load_scene("../etc/passwd")


def test_missing_part_gives_a_clear_error(tmp_path: Path) -> None:
    raw = _raw()
    raw["parts"] = [p for p in raw["parts"] if p["id"] != "ring"]
    with pytest.raises(SceneInvalid, match="parts must be exactly"):
        load_scene("training-run", _write(tmp_path, raw))


def test_duplicate_numbers_are_rejected(tmp_path: Path) -> None:
    raw = _raw()
    raw["parts"][1]["number"] = 1
    with pytest.raises(SceneInvalid, match="numbered"):
        load_scene("training-run", _write(tmp_path, raw))


def test_unknown_caption_placeholder_is_named(tmp_path: Path) -> None:
    raw = _raw()
    raw["tour"][0]["caption"] = "Loss is {lost}"
    with pytest.raises(SceneInvalid, match="lost"):
        load_scene("training-run", _write(tmp_path, raw))


def test_a_text_quoting_what_a_new_run_lacks_needs_not_yet_words(tmp_path: Path) -> None:
    raw = _raw()
    stop = next(s for s in raw["tour"] if s["part"] == "checkpoints")
    # The shipped stop says something for a run with no checkpoint, in both its texts.
    assert "{checkpoint_step}" in stop["caption"] and stop["caption_not_yet"]
    assert "{checkpoint_step}" in stop["ask"]["answer"] and stop["ask"]["answer_not_yet"]
    del stop["caption_not_yet"]
    with pytest.raises(SceneInvalid, match="caption_not_yet"):
        load_scene("training-run", _write(tmp_path, raw))
    raw = _raw()
    stop = next(s for s in raw["tour"] if s["part"] == "model")
    stop["ask"]["answer_not_yet"] = "It bets on {top_word}."
    with pytest.raises(SceneInvalid, match="answer_not_yet must not quote"):
        load_scene("training-run", _write(tmp_path, raw))


def test_tour_that_skips_a_part_is_rejected(tmp_path: Path) -> None:
    raw = _raw()
    raw["tour"] = [s for s in raw["tour"] if s["part"] != "checkpoints"]
    with pytest.raises(SceneInvalid, match="never visits"):
        load_scene("training-run", _write(tmp_path, raw))


def test_missing_view_key_is_rejected(tmp_path: Path) -> None:
    raw = _raw()
    raw["views"] = [v for v in raw["views"] if v["key"] != 3]
    with pytest.raises(SceneInvalid, match="views must have keys"):
        load_scene("training-run", _write(tmp_path, raw))


def test_bad_json_and_bad_colour_are_reported(tmp_path: Path) -> None:
    with pytest.raises(SceneInvalid, match="not valid JSON"):
        parse_scene("{nope", source="x.json")
    raw = _raw()
    raw["colours"]["forward"]["default"] = "orange"
    with pytest.raises(SceneInvalid, match="colours.forward.default"):
        parse_scene(json.dumps(raw))


def test_invalid_file_is_left_out_of_the_list(tmp_path: Path) -> None:
    _write(tmp_path, _raw())
    (tmp_path / "broken.json").write_text("{}", encoding="utf-8")
    assert [s["name"] for s in list_scenes(tmp_path)] == ["training-run"]
