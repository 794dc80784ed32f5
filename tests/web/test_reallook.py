"""'What it really looks like' in a real browser: key H draws the data hall in its own small
scene, every numbered part's callout lands inside the picture without covering another, the
notes say the same part names as the main scene, and closing the panel frees the drawing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TAGS = """() => {
  const view = document.querySelector('.hall-view').getBoundingClientRect();
  const tags = [...document.querySelectorAll('.hall-tag')].filter((t) => !t.hidden);
  return {
    view: { left: view.left, top: view.top, right: view.right, bottom: view.bottom },
    tags: tags.map((t) => {
      const r = t.getBoundingClientRect();
      const { left, top, right, bottom } = r;
      return { n: Number(t.dataset.n), text: t.textContent, left, top, right, bottom };
    }),
  };
}"""


def _overlap(a: dict, b: dict) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and b["top"] < a["bottom"]
    )


@pytest.mark.parametrize("size", [(1920, 1080), (1024, 768)], ids=["1920", "1024"])
def test_the_hall_is_drawn_and_every_part_is_pointed_out(size, page_at, web) -> None:
    w = page_at(viewport={"width": size[0], "height": size[1]})
    page = w.page
    page.wait_for_function("window.trainingRunLabs !== undefined")
    page.keyboard.press("h")
    page.wait_for_selector("#lab-reallook:not([hidden])")
    page.wait_for_function(
        "window.trainingRunLabs.reallook && window.trainingRunLabs.reallook.drawn"
        " && window.trainingRunLabs.reallook.tagsInView.length === 7",
        timeout=30_000,
    )
    info = page.evaluate("window.trainingRunLabs.reallook")
    assert info["failed"] == ""
    # A drawn hall has many shades (racks, grilles, tray, floor); a blank canvas has one.
    assert info["colours"] >= 12, info["colours"]
    placed = page.evaluate(TAGS)
    view = placed["view"]
    scene = json.loads((ROOT / "scenes" / "training-run.json").read_text())
    names = {p["number"]: p["name"] for p in scene["parts"]}
    assert sorted(t["n"] for t in placed["tags"]) == list(range(1, 8))
    for t in placed["tags"]:
        assert t["text"] == f"{t['n']}{names[t['n']]}"
        assert view["left"] <= t["left"] and t["right"] <= view["right"] + 1, t
        assert view["top"] <= t["top"] and t["bottom"] <= view["bottom"] + 1, t
    tags = placed["tags"]
    clashes = [
        (a["n"], b["n"]) for i, a in enumerate(tags) for b in tags[i + 1 :] if _overlap(a, b)
    ]
    assert clashes == []
    # The notes list every part with its figure and source.
    items = page.locator(".hall-part")
    assert items.count() == 7
    assert all("Source:" in t for t in items.all_inner_texts())
    web.screenshot(page, f"reallook_{size[0]}")
    page.keyboard.press("Escape")
    page.wait_for_function("!window.trainingRunLabs.reallook.drawn")
    assert w.errors == []
    assert w.foreign_requests() == []


def test_dragging_turns_the_hall_and_the_callouts_follow(page_at) -> None:
    w = page_at(viewport={"width": 1280, "height": 800})
    page = w.page
    page.wait_for_function("window.trainingRunLabs !== undefined")
    page.keyboard.press("h")
    page.wait_for_function(
        "window.trainingRunLabs.reallook"
        " && window.trainingRunLabs.reallook.tagsInView.length === 7",
        timeout=30_000,
    )
    before = page.evaluate(TAGS)["tags"]
    box = page.locator(".hall-canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 - 120, box["y"] + box["height"] / 2, steps=6)
    page.mouse.up()
    after = page.evaluate(TAGS)["tags"]
    moved = {a["n"]: abs(a["left"] - b["left"]) for a, b in zip(before, after, strict=False)}
    assert max(moved.values()) > 10, moved
    assert w.errors == []
