"""The data split in a real browser: during a step's data block the batch is dealt out, one
slice per GPU travelling from the loaders' queue to that GPU, all in flight together (one
instanced mesh however many GPUs); when the loaders made the GPUs wait, the GPUs show it."""

from __future__ import annotations

import httpx

DEBUG = "window.trainingRun.stageDebug"


def _control(server, **body) -> None:
    r = httpx.post(f"{server.url}/api/run/control", json={"type": "control", **body}, timeout=10)
    assert r.status_code == 200, r.text


def _one_step(page, server) -> dict:
    """Play exactly one real step on a paused run and return the counters after it."""
    page.wait_for_function(f"!{DEBUG}.playing", timeout=30_000)
    steps = page.evaluate(f"{DEBUG}.seen.steps")
    _control(server, action="step")
    page.wait_for_function(f"{DEBUG}.seen.steps > {steps}", timeout=20_000)
    page.wait_for_function(f"!{DEBUG}.playing", timeout=30_000)
    return page.evaluate(DEBUG)


def test_every_gpu_gets_its_own_slice_of_the_batch(page_at, server, web) -> None:
    w = page_at()
    web.wait_stage(w.page)
    gpus = web.tr(w.page, "gpus") or int(web.SMALL[web.SMALL.index("--gpus") + 1])
    _control(server, action="pause")
    try:
        w.page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=20_000)
        # The page samples the deal at its own frame rate: a busy machine can draw a step's
        # data block in a frame or two, before the slices leave or after they land. A few
        # steps give it frames in the middle of the deal; the counters keep their maximum.
        for _ in range(6):
            dbg = _one_step(w.page, server)
            seen = dbg["seen"]
            if seen["maxSlicesMoving"] == gpus:
                break
        assert seen["data"] > 0
        # One slice for every GPU, and all of them on their way at the same time.
        assert seen["maxSlices"] == gpus, seen
        assert seen["maxSlicesMoving"] == gpus, seen
        # Once the step has played, nothing is left in flight.
        assert dbg["slices"] == 0
    finally:
        _control(server, action="resume")
    assert not w.errors, w.errors


def test_gpus_waiting_for_data_are_shown_waiting(page_at, server, web) -> None:
    w = page_at()
    web.wait_stage(w.page)
    gpus = web.tr(w.page, "gpus") or int(web.SMALL[web.SMALL.index("--gpus") + 1])
    _control(server, action="pause")
    try:
        w.page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=20_000)
        w.page.wait_for_function(f"!{DEBUG}.playing", timeout=30_000)
        # The real step on screen again, as the loaders would report it had the queue run dry.
        w.page.evaluate(
            """async () => {
              const { store } = await import('/static/js/store.js');
              const last = store.state.step;
              store.apply({ ...last, seq: last.seq + 1000, events: [],
                            loader: { ...last.loader, queue_depth: 0, waited: true } });
            }"""
        )
        w.page.wait_for_function(f"{DEBUG}.seen.maxDataWaiting > 0", timeout=20_000)
        w.page.wait_for_function(f"!{DEBUG}.playing", timeout=30_000)
        seen = web.tr(w.page, "stageDebug")["seen"]
        assert seen["maxDataWaiting"] == gpus, seen
        # The batch still reaches every GPU once it is ready.
        assert seen["maxSlices"] == gpus, seen
    finally:
        _control(server, action="resume")
    assert not w.errors, w.errors
