"""The all-reduce ring, legible on a projector: its track is solid tubes of real thickness
along every hop (instanced, so one object for all of them), with an arrowhead per hop saying
which way the ring turns; thicker in the projector theme; bright while the all-reduce runs."""

from __future__ import annotations

import httpx

# Steps arriving live are what these tests watch: the module's server keeps training.
TRAINS = True

DEBUG = "window.trainingRun.stageDebug"


def _control(server, **body) -> None:
    r = httpx.post(f"{server.url}/api/run/control", json={"type": "control", **body}, timeout=10)
    assert r.status_code == 200, r.text


def _track(page) -> dict:
    page.wait_for_function(f"{DEBUG} && {DEBUG}.ringSegments > 0", timeout=30_000)
    return page.evaluate(DEBUG)


def test_ring_track_is_solid_and_shows_its_direction(page_at, server, web) -> None:
    w = page_at()
    web.wait_stage(w.page)
    gpus = web.tr(w.page, "gpus") or int(web.SMALL[web.SMALL.index("--gpus") + 1])
    dbg = _track(w.page)
    # Every hop drawn with tube pieces (a hop between servers has several), of a thickness
    # that reads from across a room: at least a tenth of a GPU package's width across.
    assert dbg["ringSegments"] >= 2 * gpus, dbg
    assert dbg["ringRadius"] >= 0.05, dbg
    assert dbg["ringArrows"] == gpus, dbg

    # Lit while the all-reduce runs, with a pulse per hop.
    _control(server, action="speed", value=1)
    try:
        w.page.wait_for_function(
            f"{DEBUG}.seen.allreduce > 0 && {DEBUG}.seen.maxPulses >= {gpus}", timeout=60_000
        )
    except Exception:
        raise AssertionError(w.page.evaluate(DEBUG)) from None
    finally:
        _control(server, action="speed", value=4)
    assert not w.errors, w.errors


def test_ring_track_is_thicker_on_a_projector(page_at, web) -> None:
    plain = page_at()
    web.wait_stage(plain.page)
    r_plain = _track(plain.page)["ringRadius"]
    assert not plain.errors
    plain.page.close()  # one software-rendered page at a time
    proj = page_at("?projector")
    web.wait_stage(proj.page)
    r_proj = _track(proj.page)["ringRadius"]
    assert r_proj > r_plain * 1.3, (r_plain, r_proj)
    web.screenshot(proj.page, "ring_track_projector")
    assert not proj.errors
