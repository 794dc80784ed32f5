"""The 3D stage against a real server and a real run: steps light the GPUs and send pulses
round the ring, failures show on the failed GPU, the stage stays inside its draw-call budget,
and the render loop goes quiet when nothing moves."""

from __future__ import annotations

import time

import httpx

# Steps arriving live are what these tests watch: the module's server keeps training.
TRAINS = True

DEBUG = "window.trainingRun.stageDebug"


def _control(server, **body) -> None:
    r = httpx.post(f"{server.url}/api/run/control", json={"type": "control", **body}, timeout=10)
    assert r.status_code == 200, r.text


def _debug(page) -> dict:
    return page.evaluate(DEBUG)


def test_running_steps_animate_within_the_draw_call_budget(page_at, server, web):
    w = page_at()
    web.wait_stage(w.page)
    _control(server, action="speed", value=1)
    try:
        # Real steps arrive and each one starts an animation of its phases.
        w.page.wait_for_function(
            f"(() => {{ const s = {DEBUG}.seen; return s.steps >= 3"
            " && s.forward + s.backward + s.allreduce > 0; })()",
            timeout=60_000,
        )
    finally:
        _control(server, action="speed", value=4)
    assert _debug(w.page)["seen"]["maxDrawCalls"] <= 60
    web.screenshot(w.page, "scene_running_8gpus")
    assert not w.errors, w.errors


def test_a_single_step_while_paused_plays_every_phase(page_at, server, web):
    w = page_at()
    web.wait_stage(w.page)
    _control(server, action="pause")
    try:
        w.page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=20_000)
        # Let the last step's animation finish before asking for one more step.
        w.page.wait_for_function(f"!{DEBUG}.playing", timeout=30_000)
        before = _debug(w.page)["seen"]
        _control(server, action="step")
        w.page.wait_for_function(f"{DEBUG}.seen.steps > {before['steps']}", timeout=20_000)
        w.page.wait_for_function(f"!{DEBUG}.playing", timeout=30_000)
        after = _debug(w.page)
        assert after["activeGpus"] == 0 and after["pulses"] == 0
        seen = after["seen"]
        # Each phase was drawn (even on a slow machine no phase is skipped) ...
        assert seen["forward"] > before["forward"] and seen["backward"] > before["backward"]
        assert seen["allreduce"] > before["allreduce"]
        # ... and in the all-reduce every GPU sent to its neighbour at once: a pulse per hop.
        gpus = int(web.SMALL[web.SMALL.index("--gpus") + 1])
        assert seen["maxPulses"] == gpus
    finally:
        _control(server, action="resume")


def test_render_loop_stops_when_nothing_moves(page_at, server, web):
    w = page_at()
    web.wait_stage(w.page)
    _control(server, action="pause")
    try:
        w.page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=20_000)
        if web.tr(w.page, "signal"):
            w.page.keyboard.press("s")
        if web.tr(w.page, "spin"):
            w.page.keyboard.press("Space")
        w.page.wait_for_function("!window.trainingRun.signal && !window.trainingRun.spin")
        w.page.wait_for_function(f"!{DEBUG}.playing", timeout=30_000)
        # Software WebGL on a busy machine can take a second a frame, so let whatever was
        # already asked for (the last step's easing, label moves) drain: at most ~30 s.
        first = web.tr(w.page, "frames")
        for _ in range(15):
            time.sleep(2.0)
            now = web.tr(w.page, "frames")
            if now == first:
                break
            first = now
        time.sleep(3.0)
        second = web.tr(w.page, "frames")
        assert first == second, f"frames kept coming while idle: {first} -> {second}"
        # And it wakes up again when asked to move.
        w.page.keyboard.press("ArrowLeft")
        w.page.wait_for_function(f"window.trainingRun.frames > {second}", timeout=10_000)
    finally:
        _control(server, action="resume")


def test_failed_gpu_is_marked_then_comes_back(page_at, server, web):
    w = page_at()
    web.wait_stage(w.page)
    _control(server, action="fail_gpu", gpu=3)
    w.page.wait_for_function(f"{DEBUG}.failed >= 1", timeout=30_000)
    web.screenshot(w.page, "scene_gpu_failed")
    # The replacement arrives and the X goes away (the store holds it a few seconds first).
    w.page.wait_for_function(f"{DEBUG}.failed === 0", timeout=30_000)
    assert not w.errors, w.errors
