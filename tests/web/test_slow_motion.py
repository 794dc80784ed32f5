"""Slow motion in a real browser: O plays the next step block by block, each block for a few
seconds with a caption naming what happens in it; steps that arrive meanwhile wait and do not
cut it short; O or Esc ends it at once; with reduced motion the captions still play, without
anything moving."""

from __future__ import annotations

# Steps arriving live are what these tests watch: the module's server keeps training.
TRAINS = True

DEBUG = "window.trainingRun.stageDebug"
ORDER = ["data", "forward", "backward", "allreduce", "optimizer", "checkpoint"]
NAMES = {
    "data": "Data",
    "forward": "Forward",
    "backward": "Backward",
    "allreduce": "All-reduce",
    "optimizer": "Update",
    "checkpoint": "Checkpoint",
}


def _slow_blocks(page) -> list[dict]:
    return page.evaluate(f"{DEBUG}.seen.slowBlocks")


def test_o_plays_one_step_block_by_block_with_captions(page_at, web) -> None:
    w = page_at()
    page = w.page
    web.wait_stage(page)
    page.wait_for_function("window.trainingRun.step > 0", timeout=30_000)
    page.keyboard.press("o")
    assert web.tr(page, "slowMotion") is True
    page.wait_for_function(
        "window.trainingRun.slowCaption && window.trainingRun.slowCaption.kind === 'data'",
        timeout=20_000,
    )
    cap = web.tr(page, "slowCaption")
    assert cap["shown"] and cap["caption"].startswith("Data:"), cap
    assert page.locator("#slowmo").is_visible()
    step_before = web.tr(page, "step")
    web.screenshot(page, "slow_motion_data")
    page.wait_for_function(
        "window.trainingRun.slowCaption && window.trainingRun.slowCaption.kind === 'allreduce'",
        timeout=30_000,
    )
    web.screenshot(page, "slow_motion_allreduce")
    # It ends by itself once the step has played out.
    page.wait_for_function("!window.trainingRun.slowMotion", timeout=40_000)
    assert not page.locator("#slowmo").is_visible()
    # The run went on meanwhile (speed 4): several steps arrived while one was played slowly.
    assert web.tr(page, "step") >= step_before + 5

    blocks = _slow_blocks(page)
    kinds = [b["kind"] for b in blocks]
    # The blocks of one step, in order, every one of them, and only one step.
    assert kinds[:5] == ORDER[:5], kinds
    assert kinds == [k for k in ORDER if k in kinds], kinds
    assert len({b["seq"] for b in blocks}) == 1, blocks
    for b in blocks:
        # Each block stays on screen for a couple of seconds at least (the last frame of a
        # block comes a frame before the next one starts).
        assert b["ms"] >= 1900, [(x["kind"], x["ms"]) for x in blocks]
        assert b["caption"].startswith(f"{NAMES[b['kind']]}: ") and len(b["caption"]) > 30, b
    assert not w.errors, w.errors


def test_o_or_escape_ends_slow_motion(page_at, web) -> None:
    w = page_at()
    page = w.page
    web.wait_stage(page)
    page.wait_for_function("window.trainingRun.step > 0", timeout=30_000)
    for key in ("o", "Escape"):
        page.keyboard.press("o")
        page.wait_for_function(
            "window.trainingRun.slowCaption && window.trainingRun.slowCaption.kind === 'data'",
            timeout=20_000,
        )
        page.keyboard.press(key)
        assert web.tr(page, "slowMotion") is False
        page.wait_for_function("!window.trainingRun.slowCaption.shown", timeout=5_000)
        # Back to full speed: the next steps play at their usual pace, not slowly.
        seen = web.tr(page, "stageDebug")["seen"]
        page.wait_for_function(f"{DEBUG}.seen.data > {seen['data']}", timeout=20_000)
        assert len(_slow_blocks(page)) == len(seen["slowBlocks"])
    assert not w.errors, w.errors


def test_paused_run_replays_its_step_slowly_and_reduced_motion_keeps_captions(page_at, web) -> None:
    w = page_at(reduced_motion="reduce", viewport={"width": 1024, "height": 768})
    page = w.page
    web.wait_stage(page)
    page.wait_for_function("window.trainingRun.step > 0", timeout=30_000)
    page.keyboard.press("p")
    page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=15_000)
    page.wait_for_function(f"!{DEBUG}.playing", timeout=30_000)
    shown = web.tr(page, "stepShown")
    page.keyboard.press("o")
    # Paused: the step on screen is replayed at once, nothing new is needed.
    page.wait_for_function(
        "window.trainingRun.slowCaption && window.trainingRun.slowCaption.kind === 'forward'",
        timeout=20_000,
    )
    web.screenshot(page, "slow_motion_reduced_1024")
    page.wait_for_function(
        "window.trainingRun.slowCaption && window.trainingRun.slowCaption.kind === 'allreduce'",
        timeout=20_000,
    )
    page.keyboard.press("Escape")
    blocks = _slow_blocks(page)
    assert [b["kind"] for b in blocks] == ["data", "forward", "backward", "allreduce"], blocks
    assert {b["seq"] for b in blocks} == {shown["seq"]}
    assert all(b["ms"] >= 1900 for b in blocks[:-1]), blocks
    # Reduced motion: the ring lit up, but no pulse moved.
    assert web.tr(page, "stageDebug")["seen"]["maxPulses"] == 0
    page.keyboard.press("p")
    assert not w.errors, w.errors
