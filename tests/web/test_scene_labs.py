"""The labs drive the scene through the store: the memory calculator fills the GPU memory
walls (and overflows them when a model does not fit, to scale and inside the window; spread
over enough GPUs it fits again), and "swap it" re-arranges which GPU holds which part of the
model. Real server, real page, real clicks."""

from __future__ import annotations

# About layout: the pages open at full HD, not the small size the other browser tests use.
VIEWPORT = {"width": 1920, "height": 1080}

DEBUG = "window.trainingRun.stageDebug"
WALLS = "window.trainingRun.wallsOnScreen"


def inside(box: dict, w: float, h: float) -> bool:
    return box["left"] >= 0 and box["top"] >= 0 and box["right"] <= w and box["bottom"] <= h


def pick_size(page, size: str) -> None:
    page.locator(f"#lab-memory .chip[data-group=params][data-value='{size}']").click()
    page.wait_for_function(
        f"window.trainingRunLabs.memory.params === '{size}'"
        " && window.trainingRunLabs.memory.result"
        f" && window.trainingRunLabs.memoryCase.label.startsWith('{size} ')"
    )


def test_memory_lab_overflows_the_walls_then_gives_them_back(page_at, web):
    w = page_at()
    web.wait_stage(w.page)
    gpus = int(web.SMALL[web.SMALL.index("--gpus") + 1])
    w.page.wait_for_function(f"{DEBUG}.memoryBands > 0", timeout=30_000)  # the live account
    w.page.get_by_role("button", name="memory", exact=True).click()
    # The calculator opens on a 70B model, which does not fit on one 80 GB GPU for training.
    w.page.wait_for_function(
        "window.trainingRunLabs.memoryCase && !window.trainingRunLabs.memoryCase.fits",
        timeout=30_000,
    )
    w.page.wait_for_function(f"{DEBUG}.overflowWalls === {gpus}", timeout=30_000)
    web.screenshot(w.page, "scene_memory_overflow")
    w.page.keyboard.press("Escape")
    w.page.wait_for_function("window.trainingRunLabs.memoryCase === null", timeout=10_000)
    w.page.wait_for_function(
        f"(() => {{ const d = {DEBUG}; return d.overflowWalls === 0 && d.memoryBands > 0; }})()",
        timeout=30_000,
    )
    assert not w.errors, w.errors


def test_swap_it_rearranges_the_model_on_the_gpus(page_at, web):
    w = page_at()
    web.wait_stage(w.page)
    assert w.page.evaluate(f"{DEBUG}.placementSlabs ?? 0") == 0  # live run: data parallel
    w.page.get_by_role("button", name="swap it", exact=True).click()
    w.page.locator(".swap-card[data-placement='expert']").click()
    w.page.wait_for_function("window.trainingRunLabs.placement === 'expert'", timeout=10_000)
    w.page.wait_for_function(f"{DEBUG}.placementSlabs > 0", timeout=30_000)
    expert = w.page.evaluate(f"{DEBUG}.placementSlabs")
    w.page.locator(".swap-card[data-placement='tensor_pipeline']").click()
    w.page.wait_for_function(
        f"{DEBUG}.placementSlabs > 0 && {DEBUG}.placementSlabs !== {expert}", timeout=30_000
    )
    web.screenshot(w.page, "scene_placement_tensor_pipeline")
    # The cards re-plan the live run: back to data parallel, then close the panel.
    w.page.locator(".swap-card[data-placement='data']").click()
    w.page.wait_for_function("window.trainingRun.plan?.tp === 1", timeout=30_000)
    w.page.keyboard.press("Escape")
    w.page.wait_for_function("window.trainingRunLabs.placement === 'data'", timeout=10_000)
    w.page.wait_for_function(f"{DEBUG}.placementSlabs === 0", timeout=30_000)
    assert not w.errors, w.errors


def test_memory_overflow_is_drawn_to_scale_inside_the_window(page_at, web) -> None:
    w = page_at(reduced_motion="reduce")
    page = w.page
    web.wait_stage(page)
    page.wait_for_function("window.trainingRunLabs")  # the labs' keys arrive after the stage
    page.keyboard.press("m")
    page.wait_for_function(f"{DEBUG}.overflowWalls > 0", timeout=30_000)
    pick_size(page, "70B")
    page.wait_for_function(f"({WALLS}?.text ?? '').includes('15.6×')", timeout=30_000)
    web.landed(page)  # the camera has settled in the lab's framing
    w70 = page.evaluate(WALLS)
    web.screenshot(page, "scene_memory_70b")
    frames = web.tr(page, "frames")
    pick_size(page, "405B")
    page.wait_for_function(f"({WALLS}?.text ?? '').includes('90×')", timeout=30_000)
    web.drawn(page, frames)  # drawn at the new size
    w405 = page.evaluate(WALLS)
    web.screenshot(page, "scene_memory_405b")
    # Bigger models visibly need more: taller towers on screen, not capped at one height.
    assert w405["towerWalls"] > w70["towerWalls"] * 1.3
    h70 = w70["box"]["bottom"] - w70["box"]["top"]
    h405 = w405["box"]["bottom"] - w405["box"]["top"]
    assert h405 > h70 + 20, (h70, h405)
    # The label says the true number.
    assert "90×" in w405["text"] and "15.6×" in w70["text"]
    vw, vh = 1920, 1080
    for got in (w70, w405):
        assert inside(got["box"], vw, vh), got["box"]
        assert inside(got["label"], vw, vh), got["label"]
    assert w.errors == []


def test_spread_over_the_gpus_brings_the_walls_below_the_line(page_at, web) -> None:
    w = page_at(reduced_motion="reduce")
    page = w.page
    web.wait_stage(page)
    gpus = int(web.SMALL[web.SMALL.index("--gpus") + 1])
    page.wait_for_function("window.trainingRunLabs")  # the labs' keys arrive after the stage
    page.keyboard.press("m")
    pick_size(page, "70B")
    page.wait_for_function(f"{DEBUG}.overflowWalls === {gpus}", timeout=30_000)
    spread = page.get_by_role("button", name="Spread over 16 GPUs")
    spread.click()
    page.wait_for_function("window.trainingRunLabs.memoryCase.gpus === 16")
    page.wait_for_function(
        f"{DEBUG}.overflowWalls === 0 && {DEBUG}.wallFills.every((f) => f !== null && f <= 1)",
        timeout=30_000,
    )
    fills = page.evaluate(f"{DEBUG}.wallFills")
    used = [f for f in fills if f is not None]
    # The scene has 8 GPUs, fewer than 16: every wall shows one GPU's share anyway.
    assert len(used) == gpus
    assert all(0 < f <= 1 for f in used), fills
    assert abs(used[0] - 1120 / 72 / 16) < 1e-6
    assert spread.get_attribute("aria-pressed") == "true"
    note = page.locator("#lab-memory .mem-spread-note").inner_text()
    assert "This scene has 8 GPUs" in note and "1/16" in note
    assert "Fits on 16 GPUs" in page.evaluate(WALLS)["text"]
    web.screenshot(page, "scene_memory_spread")
    # 13B needs 3 GPUs: three walls hold a share, the rest stay empty.
    pick_size(page, "13B")
    page.wait_for_function("window.trainingRunLabs.memoryCase.gpus === 3")
    page.wait_for_function(
        f"{DEBUG}.wallFills.filter((f) => f !== null).length === 3", timeout=30_000
    )
    fills = page.evaluate(f"{DEBUG}.wallFills")
    assert [f is not None for f in fills] == [True] * 3 + [False] * (gpus - 3)
    assert all(f <= 1 for f in fills if f is not None)
    # Pressed again: the whole state on one GPU, towering over the walls once more.
    page.get_by_role("button", name="Spread over 3 GPUs").click()
    page.wait_for_function(f"{DEBUG}.overflowWalls === {gpus}", timeout=30_000)
    assert w.errors == []
