"""Failure in a real browser: K makes a GPU fail on the real server; the page shows the
failed GPU, a toast that tells the whole story, and the run visibly rolling back to the last
checkpoint in the step counter and the chart."""

from __future__ import annotations

import re

# Steps arriving live are what these tests watch: the module's server keeps training.
TRAINS = True


def test_k_fails_a_gpu_and_the_run_rolls_back(page_at, web) -> None:
    w = page_at()
    page = w.page
    web.wait_stage(page)
    # Past the first checkpoint (every 5 steps) and a few steps beyond it.
    page.wait_for_function("window.trainingRun.step >= 8", timeout=60_000)

    # Pause first, so the rolled-back counter can be read before the run moves on again.
    page.keyboard.press("p")
    page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=15_000)
    web.quiet(page)  # a step already under way has landed
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
        rf"GPU {gpu + 1} failed at step {rb['failedStep']} — rolled back to step "
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


DEBUG = "window.trainingRun.stageDebug"


def test_a_failure_is_staged_so_a_class_can_follow_it(page_at, web) -> None:
    w = page_at()
    page = w.page
    web.wait_stage(page)
    page.wait_for_function("window.trainingRun.step >= 8", timeout=60_000)
    page.keyboard.press("k")
    # (a) The GPU dies: the scene shows it failed (red, an X, cross-hatched).
    page.wait_for_function(f"{DEBUG}.seen.maxFailed === 1", timeout=30_000)
    web.screenshot(page, "failure_staged_dead")
    # (b) The others stall beside it, waiting, for at least an animation beat.
    page.wait_for_function(f"{DEBUG}.seen.stallMs >= 800", timeout=20_000)
    gpus = web.tr(page, "gpus") or int(web.SMALL[web.SMALL.index("--gpus") + 1])
    # (c) The run reloads the checkpoint: weights flow from the disks to the GPUs.
    page.wait_for_function(f"{DEBUG}.seen.maxReloading >= {gpus - 1}", timeout=20_000)
    # (e) The replacement joins and the staging ends; the step animation carries on.
    page.wait_for_function(f"{DEBUG}.failed === 0 && {DEBUG}.stalled === 0", timeout=20_000)
    page.wait_for_function(f"{DEBUG}.playing", timeout=20_000)
    # (d) The chart shows the lost work as a band, with the real count from the rollback.
    rb = web.tr(page, "lastRollback")
    bands = web.tr(page, "lostStepBands")
    assert bands and bands[-1]["fromStep"] == rb["restoredStep"], (bands, rb)
    assert bands[-1]["lost"] == rb["stepsLost"] and bands[-1]["toStep"] >= rb["failedStep"] - 1
    label = page.locator("#loss-chart").get_attribute("aria-label")
    assert f"{rb['stepsLost']} step" in label and "lost" in label, label
    assert w.errors == []


def test_failure_red_stands_apart_from_the_forward_amber(page_at, web) -> None:
    w = page_at()
    out = w.page.evaluate(
        """async () => {
          const spec = await (await fetch('/api/scenes/training-run')).json();
          const { makePalette } = await import('/static/js/scene/palette.js');
          const rgb = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
          const dist = (a, b) => Math.hypot(...rgb(a).map((v, i) => v - rgb(b)[i]));
          return ['default', 'projector'].map((t) => {
            const p = makePalette(spec, t);
            return { t, amber: dist(p.failure, p.forward), pink: dist(p.failure, p.backward) };
          });
        }"""
    )
    for theme in out:
        # Far apart in colour (the X and the hatching say it as well).
        assert theme["amber"] >= 130 and theme["pink"] >= 100, out
    assert w.errors == []


def test_the_probe_never_passes_off_a_rolled_back_step_as_current(browser, web, tmp_path) -> None:
    # Checkpoints every 7 steps, probes every 5: after some failures the last probe came
    # from a step the run rolls back past.
    srv = web.ServerProcess(
        tmp_path / "run",
        "--gpus",
        "4",
        "--servers",
        "1",
        "--checkpoint-every",
        "7",
        "--speed",
        "4",
    )
    srv.start(fresh=True)
    try:
        w = web.open_page(browser, srv.url, viewport={"width": 1280, "height": 800})
        page = w.page
        try:
            page.wait_for_function("window.trainingRun.step >= 10", timeout=60_000)
            page.keyboard.press("p")
            page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=15_000)
            web.quiet(page)  # a step already under way has landed
            # Step on until the last probe (every 5) is newer than the last checkpoint (every 7).
            for _ in range(8):
                s = web.tr(page, "step")
                if (s // 5) * 5 > (s // 7) * 7:
                    break
                page.keyboard.press("n")
                page.wait_for_function(f"window.trainingRun.step === {s + 1}", timeout=20_000)
            probe_step = (web.tr(page, "step") // 5) * 5
            page.wait_for_function(
                f"document.getElementById('probe-step').textContent === 'at step {probe_step}'",
                timeout=10_000,
            )
            page.keyboard.press("k")
            page.wait_for_function("window.trainingRun.rollbacks === 1", timeout=20_000)
            rb = web.tr(page, "lastRollback")
            assert rb["restoredStep"] < probe_step
            text = page.locator("#probe-step").inner_text()
            # Never "at step N" for a step the run has gone back past.
            assert f"at step {probe_step}" not in text, text
            assert "before the rollback" in text, text
            web.screenshot(page, "probe_after_rollback")
            # The next probe is current again.
            page.keyboard.press("p")
            page.wait_for_function(
                "/^at step [0-9]+$/.test(document.getElementById('probe-step').textContent)",
                timeout=30_000,
            )
            assert w.errors == []
        finally:
            page.context.close()
    finally:
        srv.stop()
