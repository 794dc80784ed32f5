"""The labs drive the scene through the store: the memory calculator fills the GPU memory
walls (and overflows them when a model does not fit), and "swap it" re-arranges which GPU
holds which part of the model. Real server, real page, real clicks."""

from __future__ import annotations

DEBUG = "window.trainingRun.stageDebug"


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
    w.page.keyboard.press("Escape")
    w.page.wait_for_function("window.trainingRunLabs.placement === 'data'", timeout=10_000)
    w.page.wait_for_function(f"{DEBUG}.placementSlabs === 0", timeout=30_000)
    assert not w.errors, w.errors
