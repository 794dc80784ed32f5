"""Draw calls do not grow with the cluster: every repeated thing is one instanced mesh.

Two real servers, 16 GPUs and 256 GPUs, each shown in a real browser; both play the same kind
of step (paused, then exactly one step), and the most draw calls any frame needed is compared.
"""

from __future__ import annotations

import httpx

DEBUG = "window.trainingRun.stageDebug"


def _max_draw_calls(browser, web, tmp_path, *args: str) -> tuple[int, int, int]:
    srv = web.ServerProcess(tmp_path / f"run{args[1]}", *args, "--speed", "2")
    srv.start(fresh=True, timeout=90)
    try:
        w = web.open_page(browser, srv.url)
        try:
            web.wait_stage(w.page, timeout=90_000)
            control = f"{srv.url}/api/run/control"
            httpx.post(control, json={"type": "control", "action": "pause"}, timeout=10)
            w.page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=30_000)
            w.page.wait_for_function(f"!{DEBUG}.playing", timeout=60_000)
            steps = w.page.evaluate(f"{DEBUG}.seen.steps")
            httpx.post(control, json={"type": "control", "action": "step"}, timeout=10)
            w.page.wait_for_function(f"{DEBUG}.seen.steps > {steps}", timeout=60_000)
            w.page.wait_for_function(f"!{DEBUG}.playing", timeout=60_000)
            dbg = w.page.evaluate(DEBUG)
            seen = dbg["seen"]
            web.screenshot(w.page, f"scene_{args[1]}gpus")
            assert not w.errors, w.errors
            return seen["maxDrawCalls"], seen["maxPulses"], dbg["drawables"]
        finally:
            w.page.context.close()
    finally:
        srv.stop()


def test_draw_calls_stay_flat_from_16_to_256_gpus(browser, web, tmp_path):
    small, small_pulses, small_objects = _max_draw_calls(
        browser, web, tmp_path, "--gpus", "16", "--servers", "4"
    )
    big, big_pulses, big_objects = _max_draw_calls(
        browser, web, tmp_path, "--gpus", "256", "--servers", "32", "--batch-size", "256"
    )
    print(f"draw calls: 16 GPUs {small}, 256 GPUs {big}; drawables {small_objects}, {big_objects}")
    assert 0 < small <= 60
    assert big <= small * 1.1
    # Not one extra object for 240 more GPUs: the ceiling on draw calls is the same.
    assert big_objects == small_objects
    # The bigger cluster really drew more: one pulse per GPU in the ring.
    assert small_pulses == 16 and big_pulses == 256
