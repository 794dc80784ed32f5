"""The scene's and the story's own texts, said in the page's language by say()
(static/js/i18n/content.js), checked without a browser: every text the page shows from
scenes/training-run.json and scenes/stories/one-gpu.json has words in every language the page
speaks (app.routes.locale.catalogue), keyed by the English template, with the same
placeholders: plain {name}s and the count forms {name:one|other} alike."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.routes.locale import LANGS, catalogue

ROOT = Path(__file__).resolve().parents[1]
SCENE = ROOT / "scenes" / "training-run.json"
STORY = ROOT / "scenes" / "stories" / "one-gpu.json"
PLAIN = re.compile(r"\{(\w+)\}")
COUNT = re.compile(r"\{(\w+):[^{}|]*\|[^{}]*\}")


def _texts(where: str, item: dict, fields: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    for field in fields:
        if item.get(field):
            yield f"{where}.{field}", item[field]


def scene_texts(scene: dict, story: dict) -> list[tuple[str, str]]:
    """(where, English template) for every piece of scene content the page says."""
    out: list[tuple[str, str]] = []
    for p in scene["parts"]:
        where = f"parts.{p['id']}"
        out += _texts(where, p, ("name", "description", "what", "why"))
        for i, fact in enumerate(p.get("facts", [])):
            out += _texts(f"{where}.facts[{i}]", fact, ("label", "value"))
    for v in scene["views"]:
        out += _texts(f"views[{v['key']}]", v, ("name",))
    for i, stop in enumerate(scene["tour"]):
        out += _texts(f"tour[{i}]", stop, ("caption", "caption_not_yet", "more"))
        if stop.get("ask"):
            out += _texts(f"tour[{i}].ask", stop["ask"], ("question", "answer", "answer_not_yet"))
    out += _texts("story", story, ("title", "subtitle"))
    for ch in story["chapters"]:
        where = f"chapters.{ch['id']}"
        out += _texts(where, ch, ("title", "group", "text"))
        if ch.get("do"):
            out += _texts(f"{where}.do", ch["do"], ("label",))
    return out


def _holes(text: str) -> tuple[set[str], set[str]]:
    return set(PLAIN.findall(text)), set(COUNT.findall(text))


def problems(texts: list[tuple[str, str]], words: dict) -> list[str]:
    """What is wrong with one language's words for these texts: none, or what and where."""
    out = []
    for where, english in texts:
        said = words.get(english)
        if not isinstance(said, str) or not said.strip():
            out.append(f"{where}: no words for {english!r}")
        elif _holes(said) != _holes(english):
            out.append(f"{where}: placeholders differ: {english!r} -> {said!r}")
    return out


def test_the_walk_finds_the_scene_content() -> None:
    texts = scene_texts(json.loads(SCENE.read_text()), json.loads(STORY.read_text()))
    wheres = {w for w, _ in texts}
    assert {"parts.gpus.name", "views[0].name", "tour[0].caption", "tour[4].ask.answer"} <= wheres
    assert "story.title" in wheres and any(w.endswith(".do.label") for w in wheres)
    assert any(COUNT.search(t) for _, t in texts), "a count form in the tour's first caption"


@pytest.mark.parametrize("lang", sorted(LANGS))
def test_every_scene_text_has_words_in_every_language(lang: str) -> None:
    texts = scene_texts(json.loads(SCENE.read_text()), json.loads(STORY.read_text()))
    wrong = problems(texts, catalogue(lang))
    assert not wrong, f"{LANGS[lang]}: " + "; ".join(wrong)


def test_the_check_fails_on_a_missing_or_broken_translation() -> None:
    scene = {
        "parts": [
            {"id": "gpus", "name": "GPU servers", "facts": [{"label": "Job", "value": "add"}]}
        ],
        "views": [{"key": 0, "name": "Overview"}],
        "tour": [
            {
                "caption": "{gpus} simulated {gpus:GPU is|GPUs are} here.",
                "ask": {"question": "How many?", "answer": "{gpus}."},
            }
        ],
    }
    story = {"title": "One GPU", "chapters": [{"id": "a", "group": "G", "title": "T", "text": "x"}]}
    texts = scene_texts(scene, story)
    good = {
        "GPU servers": "GPU-Server",
        "Job": "Aufgabe",
        "add": "addieren",
        "Overview": "Überblick",
        "{gpus} simulated {gpus:GPU is|GPUs are} here.": "{gpus} {gpus:GPU ist|GPUs sind} hier.",
        "How many?": "Wie viele?",
        "{gpus}.": "{gpus}.",
        "One GPU": "Eine GPU",
        "G": "G",
        "T": "T",
        "x": "x",
    }
    assert problems(texts, good) == []
    missing = {k: v for k, v in good.items() if k != "How many?"}
    assert problems(texts, missing) == ["tour[0].ask.question: no words for 'How many?'"]
    no_count = good | {"{gpus} simulated {gpus:GPU is|GPUs are} here.": "{gpus} GPUs sind hier."}
    assert [p.split(":")[0] for p in problems(texts, no_count)] == ["tour[0].caption"]
    renamed = good | {"{gpus}.": "{n}."}
    assert [p.split(":")[0] for p in problems(texts, renamed)] == ["tour[0].ask.answer"]
