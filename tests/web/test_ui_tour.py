"""The guided tour in a real browser: it visits every stop from the scene data with a
caption that quotes the live run, counts "stop k of n", speaks through an aria-live region,
moves the camera and the highlight, and Esc leaves it."""

from __future__ import annotations

import json
import urllib.request


def test_tour_visits_every_stop_and_esc_leaves(page_at, server, web) -> None:
    with urllib.request.urlopen(f"{server.url}/api/scenes/training-run", timeout=10) as r:
        stops = json.load(r)["tour"]
    w = page_at()
    page = w.page
    web.wait_stage(page)
    page.wait_for_function("window.trainingRun.step > 0")
    assert web.tr(page, "tourLength") == len(stops) >= 7

    region = page.locator("#caption")
    assert region.get_attribute("aria-live") == "polite"

    page.keyboard.press("t")
    seen = []
    for k, stop in enumerate(stops):
        assert web.tr(page, "tourActive") is True
        assert web.tr(page, "tourStop") == k
        assert page.locator("#tour-count").inner_text() == f"stop {k + 1} of {len(stops)}"
        caption = page.locator("#tour-caption").inner_text()
        # Placeholders are filled from the live run: no braces left, no blanks.
        assert caption and "{" not in caption and "}" not in caption, caption
        fixed = stop["caption"].split("{")[0].strip()
        assert caption.startswith(fixed), (caption, fixed)
        if stop.get("view") is not None:
            assert web.tr(page, "view") == stop["view"]
        # The label of the stop's part is highlighted.
        active = page.locator("#labels .label.active")
        assert active.count() == 1 and active.get_attribute("data-part") == stop["part"]
        seen.append(caption)
        if k == 4:
            page.wait_for_timeout(1300)  # let the flight land before the photograph
            web.screenshot(page, "tour")
        if k < len(stops) - 1:
            page.keyboard.press("PageDown")
    assert len(seen) == len(stops)

    # Live numbers really are quoted: the first stop names the GPU count.
    assert seen[0].startswith("8 ")

    # The progress bar moves by itself.
    t0 = page.evaluate("getComputedStyle(document.getElementById('tour-progress')).transform")
    page.wait_for_timeout(700)
    t1 = page.evaluate("getComputedStyle(document.getElementById('tour-progress')).transform")
    assert t0 != t1

    page.keyboard.press("Escape")
    assert web.tr(page, "tourActive") is False
    assert page.locator("#tour-box").is_hidden()
    assert web.tr(page, "view") == 0
    assert w.errors == []


def test_tour_moves_on_by_itself(page_at, web) -> None:
    w = page_at(viewport={"width": 1280, "height": 720})
    page = w.page
    web.wait_stage(page)
    page.locator("#btn-tour").click()
    assert web.tr(page, "tourStop") == 0
    # The first stop lasts a few seconds; then the tour advances on its own.
    page.wait_for_function("window.trainingRun.tourStop === 1", timeout=30_000)
    page.locator("#tour-exit").click()
    assert web.tr(page, "tourActive") is False
    assert w.errors == []
