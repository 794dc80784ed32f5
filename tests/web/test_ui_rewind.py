"""The rewind scrubber in a real browser: drag back to step 10 of a 60-step run and see that
step's recorded loss and probe, with its trace playing in the scene, while the live run goes
on; "back to live" returns."""

from __future__ import annotations

import httpx
import pytest

THUMB_PX = 18  # the handle's width in static/css/rewind.css


@pytest.fixture(scope="module")
def run60(tmp_path_factory, web):
    srv = web.ServerProcess(
        tmp_path_factory.mktemp("rewind") / "run",
        *("--gpus", "8", "--servers", "2", "--checkpoint-every", "20", "--speed", "6"),
    )
    srv.start(fresh=True)
    yield srv
    srv.stop()


def control(srv, action: str) -> None:
    r = httpx.post(
        f"{srv.url}/api/run/control", json={"type": "control", "action": action}, timeout=30
    )
    assert r.status_code == 200, r.text


def drag_to(page, step: int) -> None:
    """Press the handle at the live end and drag it to where `step` sits on the track (which
    holds still while the handle is pressed, though the live run goes on)."""
    box = page.locator("#rewind-range").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] - THUMB_PX / 2, y)
    page.mouse.down()
    lo, hi = page.eval_on_selector("#rewind-range", "e => [Number(e.min), Number(e.max)]")
    usable = box["width"] - THUMB_PX
    x = box["x"] + THUMB_PX / 2 + (step - lo) / (hi - lo) * usable
    page.mouse.move(x, y, steps=6)
    page.mouse.up()


def test_drag_to_step_10_then_back_to_live(browser, web, run60) -> None:
    w = web.open_page(browser, run60.url, viewport={"width": 1024, "height": 768})
    page = w.page
    try:
        page.wait_for_function("window.trainingRun.step >= 60", timeout=120_000)
        # Hold the run at about 60 steps while the handle is placed, so a step is a few
        # pixels of track; it goes on again below, while step 10 is on show.
        control(run60, "pause")
        web.wait_stage(page, timeout=120_000)
        web.quiet(page)  # a step already under way has landed
        assert page.evaluate("window.trainingRun.rewind") is None
        assert page.get_attribute("#rewind", "data-state") == "live"
        drag_to(page, 10)
        page.wait_for_function("window.trainingRun.rewind?.step === 10", timeout=90_000)
        shown = page.evaluate("window.trainingRun.rewind")
        record = httpx.get(f"{run60.url}/api/steps", params={"from": 10, "to": 10}).json()
        step10 = record["steps"][-1]
        # Its numbers: the loss the server recorded for step 10, on screen.
        assert shown["loss"] == step10["loss"]
        assert page.text_content("#rewind-figures dd[data-key='loss']") == f"{step10['loss']:.3f}"
        assert page.text_content("#rewind-where").startswith("step 10 · live run at ")
        # Its probe: computed at step 10 (every 5 steps), the recorded top words.
        assert shown["probeStep"] == 10
        assert shown["probeTop"] == [t["token"] for t in step10["probe"]["top"]]
        assert page.text_content("#rewind-blank") == step10["probe"]["top"][0]["token"]
        # Its drawing: the scene plays step 10's recorded trace...
        assert shown["traced"] is True
        page.wait_for_function("window.trainingRun.stageDebug?.sceneStep === 10", timeout=90_000)
        # ... while the live run keeps training.
        control(run60, "resume")
        at = page.evaluate("window.trainingRun.step")
        page.wait_for_function(f"window.trainingRun.step > {at}", timeout=90_000)
        assert page.evaluate("window.trainingRun.rewind.step") == 10
        # Back to live.
        page.click("#rewind-live")
        page.wait_for_function("window.trainingRun.rewind === null", timeout=60_000)
        assert page.get_attribute("#rewind", "data-state") == "live"
        assert page.is_hidden("#rewind-detail")
        page.wait_for_function("window.trainingRun.stageDebug?.sceneStep > 60", timeout=60_000)
        assert w.errors == []
    finally:
        page.context.close()


def test_keys_move_the_scrubber_and_escape_returns(browser, web, run60) -> None:
    w = web.open_page(browser, run60.url, viewport={"width": 1024, "height": 768})
    page = w.page
    try:
        page.wait_for_function("window.trainingRun.step >= 20", timeout=120_000)
        page.focus("#rewind-range")
        page.keyboard.press("Home")  # the first recorded step
        page.wait_for_function("window.trainingRun.rewind?.step === 1", timeout=90_000)
        view = page.evaluate("window.trainingRun.view")
        page.keyboard.press("ArrowRight")  # one step on; the camera's arrow keys stay still
        page.wait_for_function("window.trainingRun.rewind?.step === 2", timeout=90_000)
        assert page.evaluate("window.trainingRun.view") == view
        assert page.evaluate("window.trainingRun.rewind.probeStep") == 1  # the latest before
        page.keyboard.press("Escape")
        page.wait_for_function("window.trainingRun.rewind === null", timeout=60_000)
        assert w.errors == []
    finally:
        page.context.close()
