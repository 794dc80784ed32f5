"""The scale field in a real browser: the cluster drawn at 512, 16,384 and 131,072 GPUs.

One real server (8 live GPUs on 2 servers); for each size the page opens with `?gpus=N` at
800x600 and the test checks: the field's plan follows the stated fat-tree rule, the draw
calls stay within 60, the live GPUs can be found (their cells are on screen and picking one
from close up answers with that live GPU), and zooming in and out moves the camera and
switches the level of detail where the field has one.
"""

from __future__ import annotations

import pytest

SMALL_VIEW = {"width": 800, "height": 600}
FIELD = "window.trainingRun.field"


def _open_field(browser, server, web, gpus: int, **context):
    w = web.open_page(browser, server.url, f"?gpus={gpus}", viewport=SMALL_VIEW, **context)
    w.page.wait_for_function(
        f"window.trainingRun.stageReady && window.trainingRun.frames > 0 && {FIELD}.on",
        timeout=120_000,
    )
    return w


def _distance(page) -> float:
    return page.evaluate("window.trainingRun.camera.distance")


def _press_until(page, key: str, condition: str, tries: int = 12) -> None:
    """Press `key` until `condition` holds in the page (each press moves the camera once)."""
    for _ in range(tries):
        if page.evaluate(condition):
            return
        frames = page.evaluate("window.trainingRun.frames")
        page.keyboard.press(key)
        # The level of detail is chosen when a frame is drawn: wait for one.
        page.wait_for_function(f"window.trainingRun.frames > {frames}", timeout=30_000)
    assert page.evaluate(condition), condition


@pytest.mark.parametrize(
    ("gpus", "tiers", "pods"),
    [(512, 2, 1), (16384, 3, 4), (131072, 3, 32)],
)
def test_field_draws_finds_the_live_gpus_and_zooms(browser, server, web, gpus, tiers, pods):
    w = _open_field(browser, server, web, gpus)
    page = w.page
    try:
        field = page.evaluate(FIELD)
        plan = field["plan"]
        live = web.tr(page, "gpus")
        assert plan["gpus"] == gpus and plan["live"] == live and plan["mirrored"] == gpus - live
        assert plan["tiers"] == tiers and plan["pods"] == pods
        # A third tier only when two tiers of 128-port switches cannot join them all.
        assert (plan["cores"] > 0) == (gpus > plan["radix"] ** 2 // 2)
        assert plan["leaves"] == -(-gpus // (plan["radix"] // 2))

        # A handful of draw calls, whatever the size.
        page.wait_for_function("window.trainingRun.drawCalls > 0")
        assert web.tr(page, "drawCalls") <= 60

        # Every live GPU has its cell in view, and the beam over them is on screen.
        assert [c["gpu"] for c in field["live"]] == list(range(live))
        assert all(c["visible"] for c in field["live"])
        assert field["beacon"]["visible"]

        # Zoom in and out: the camera moves, and a large field swaps one block per pod for
        # every rack as the camera comes close, and back again.
        start = _distance(page)
        page.keyboard.press("+")
        page.wait_for_function(f"window.trainingRun.camera.distance < {start * 0.95}")
        if pods > 1:
            _press_until(page, "+", f"{FIELD}.lod === 'racks'")
        near = _distance(page)
        page.keyboard.press("-")
        page.keyboard.press("-")
        page.wait_for_function(f"window.trainingRun.camera.distance > {near * 1.2}")
        if pods > 1:
            _press_until(page, "-", f"{FIELD}.lod === 'pods'")
        assert web.tr(page, "drawCalls") <= 60

        # From close up a live GPU can be picked: the path (Z) starts on one live GPU; a
        # second press stops it there. Both presses land in one task of the page, so a busy
        # machine cannot let a frame carry the path past the GPU between them.
        page.evaluate(
            "() => { for (let i = 0; i < 2; i++) document.dispatchEvent("
            "new KeyboardEvent('keydown', { key: 'z', bubbles: true })); }"
        )
        page.wait_for_function(f"!{FIELD}.path.playing && {FIELD}.path.stop === 'GPU'")
        web.landed(page)
        assert _distance(page) < 20
        cells = [c for c in page.evaluate(f"{FIELD}.live") if c["visible"]]
        assert cells, "no live GPU on screen close up"
        hits = [page.evaluate(f"window.trainingRun.pickField({c['x']}, {c['y']})") for c in cells]
        assert {"kind": "live", "gpu": cells[0]["gpu"]} in hits
        assert not w.errors, w.errors
    finally:
        page.context.close()


def test_camera_path_goes_out_to_the_whole_field_and_back(browser, server, web):
    w = _open_field(browser, server, web, 4096)
    page = w.page
    try:
        stops = page.evaluate(f"{FIELD}.stops")
        assert stops[0] == "GPU" and stops[-1] == "field"
        page.keyboard.press("z")
        page.wait_for_function(f"{FIELD}.path.stop === 'field'", timeout=60_000)
        out_distance = _distance(page)
        page.wait_for_function(f"{FIELD}.path.leg === 'done'", timeout=60_000)
        # Back where it started: the GPU close up, many times nearer than the whole field.
        assert _distance(page) * 10 < out_distance
        assert page.evaluate(f"{FIELD}.path.stop") == "GPU"
        assert not w.errors, w.errors
    finally:
        page.context.close()


def test_reduced_motion_cuts_from_stop_to_stop(browser, server, web):
    w = _open_field(browser, server, web, 512, reduced_motion="reduce")
    page = w.page
    try:
        legs = len(page.evaluate(f"{FIELD}.stops")) - 1
        page.keyboard.press("z")
        page.wait_for_function(f"{FIELD}.path.playing", timeout=30_000)
        seen = set()
        for _ in range(12):
            p = page.evaluate(f"{FIELD}.path")
            if not p["playing"]:
                break
            seen.add(round(p["t"] * legs, 6))
            page.wait_for_timeout(250)  # samples the path's position as it plays
        assert seen and all(float(t).is_integer() for t in seen), seen
        page.keyboard.press("z")
        assert not w.errors, w.errors
    finally:
        page.context.close()


def test_scale_control_note_and_keys(browser, server, web):
    # Wide enough for the whole note (narrow screens keep only its first lines).
    w = web.open_page(browser, server.url, "?gpus=5", viewport={"width": 1280, "height": 800})
    page = w.page
    try:
        web.wait_stage(page, timeout=120_000)
        # A count outside 8 ... 131,072 is refused with a reason, and the live scene stays.
        problem = page.locator(".field-problem").inner_text()
        assert "?gpus=5" in problem and "from 8 to 131,072" in problem
        assert not page.evaluate(f"{FIELD}.on")
        # The chooser is a drawer on this size of screen, opened by the refusal to say why.
        assert page.locator(".field-problem").is_visible()
        page.click(".field-presets button[data-gpus='512']")
        page.wait_for_function(f"{FIELD}.on && {FIELD}.plan.gpus === 512", timeout=60_000)
        page.fill("#field-gpus", "200000")
        page.click(".field-custom button[type=submit]")
        assert "from 8 to 131,072" in page.locator(".field-problem").inner_text()
        assert page.evaluate(f"{FIELD}.plan.gpus") == 512

        # A preset button shows the field, with its figures from the plan in the note.
        page.click(".field-presets button[data-gpus='16384']")
        page.wait_for_function(f"{FIELD}.on && {FIELD}.plan.gpus === 16384", timeout=60_000)
        note = page.locator("#field-note").inner_text()
        live = web.tr(page, "gpus")
        assert "16,384 GPUs" in note and "4 pods" in note
        assert f"Only the {live} GPUs" in note and f"other {16384 - live:,} mirror them" in note
        assert "3 tiers" in note and "256 leaf" in note and "128 core" in note
        assert "128-port switches" in note and "8,192" in note
        assert "gpus=16384" in page.url
        # The numbered labels step aside while the field shows.
        page.wait_for_function(
            "[...document.querySelectorAll('#labels > *')]"
            ".every((n) => n.classList.contains('off'))"
        )

        # G steps through the sizes and back to the live scene.
        page.keyboard.press("g")
        page.wait_for_function(f"{FIELD}.plan && {FIELD}.plan.gpus === 131072", timeout=60_000)
        page.keyboard.press("g")
        page.wait_for_function(f"!{FIELD}.on", timeout=60_000)
        assert "gpus=" not in page.url
        page.wait_for_function("window.trainingRun.frames > 0")
        assert not w.errors, w.errors
    finally:
        page.context.close()
