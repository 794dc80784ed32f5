"""Failure in a real browser: K makes a GPU fail on the real server; the page shows the
failed GPU, a toast that tells the whole story, and the run visibly rolling back to the last
checkpoint in the step counter and the chart."""

from __future__ import annotations

import re


def test_k_fails_a_gpu_and_the_run_rolls_back(page_at, web) -> None:
    w = page_at()
    page = w.page
    web.wait_stage(page)
    # Past the first checkpoint (every 5 steps) and a few steps beyond it.
    page.wait_for_function("window.trainingRun.step >= 8", timeout=60_000)

    # Pause first, so the rolled-back counter can be read before the run moves on again.
    page.keyboard.press("p")
    page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=15_000)
    page.wait_for_timeout(500)
    before = web.tr(page, "step")
    if before % 5 == 0:
        # Paused right on a checkpoint: a failure now would lose no finished step, so take
        # one more (N) to make the rollback visible.
        page.keyboard.press("n")
        page.wait_for_function(f"window.trainingRun.step === {before + 1}", timeout=20_000)
        before += 1
    page.keyboard.press("k")
    page.wait_for_function("window.trainingRun.failedGpus.length === 1", timeout=20_000)
    gpu = web.tr(page, "failedGpus")[0]
    page.wait_for_function("window.trainingRun.rollbacks === 1", timeout=20_000)
    rb = web.tr(page, "lastRollback")
    assert rb["restoredStep"] % 5 == 0  # a checkpoint step
    assert rb["stepsLost"] == rb["failedStep"] - rb["restoredStep"] > 0
    assert rb["restoredStep"] <= before < rb["failedStep"]

    # The toast tells it in one sentence.
    toast = page.locator(".toast-failure").first
    toast.wait_for(timeout=10_000)
    text = toast.inner_text()
    assert re.fullmatch(
        rf"GPU {gpu} failed at step {rb['failedStep']} — rolled back to step "
        rf"{rb['restoredStep']} \({rb['stepsLost']} steps? lost\), GPU replaced",
        text,
    ), text

    # The counter went back to the checkpoint, on screen too.
    assert web.tr(page, "step") == rb["restoredStep"] < before
    assert page.locator("#hud-step").inner_text() == str(rb["restoredStep"])
    assert page.locator("#hud-restarts").inner_text() == "1"
    web.screenshot(page, "failure")

    # Resumed, the run carries on from the checkpoint.
    page.keyboard.press("p")
    page.wait_for_function(
        f"window.trainingRun.step > {rb['restoredStep']}", polling=100, timeout=20_000
    )

    # The chart keeps the abandoned steps as a dead branch, and the rollback is marked.
    label = page.locator("#loss-chart").get_attribute("aria-label")
    assert f"Rolled back to step {rb['restoredStep']}" in label, label
    # The failed GPU comes back after a moment (it was replaced).
    page.wait_for_function("window.trainingRun.failedGpus.length === 0", timeout=20_000)
    assert web.tr(page, "failures") == 1
    assert w.errors == []
