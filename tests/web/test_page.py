"""The page in a real browser against a real server: it opens cleanly, draws the scene with
its seven labels, shows the live run, stays on its own origin, and says so plainly when the
browser cannot draw WebGL."""

from __future__ import annotations

# Steps arriving live are what these tests watch: the module's server keeps training.
TRAINS = True


def test_page_opens_clean_and_runs_live(page_at, web) -> None:
    w = page_at()
    page = w.page
    web.wait_stage(page)

    # Seven numbered labels, 1..7, with the part names from the scene data.
    numbers = page.locator("#labels .label .num").all_inner_texts()
    assert numbers == [str(n) for n in range(1, 8)]
    assert page.locator("#labels .label", has_text="Data lake").count() == 1
    assert page.locator("#labels .label", has_text="Checkpoints").count() == 1

    # The step counter moves on its own and the HUD shows the real loss.
    first = web.tr(page, "step")
    page.wait_for_function(f"window.trainingRun.step > {first}", timeout=20_000)
    # Read the HUD and the state in one go: a step can land between two separate reads.
    shown = page.evaluate(
        """() => ({
          loss: window.trainingRun.loss, step: window.trainingRun.step,
          lossText: document.getElementById('hud-loss').textContent,
          stepText: document.getElementById('hud-step').textContent,
        })"""
    )
    assert isinstance(shown["loss"], float) and 0 < shown["loss"] < 20
    assert shown["lossText"] == f"{shown['loss']:.3f}"
    assert int(shown["stepText"].replace(",", "")) == shown["step"]
    page.wait_for_function("document.getElementById('hud-tps').textContent !== '–'")
    assert web.tr(page, "historyLength") >= 1

    # The simulated step bar has all four segments with units.
    legend = page.locator("#timelegend").inner_text()
    for part in ("data", "compute", "all-reduce", "checkpoint"):
        assert part in legend
    assert any(u in legend for u in ("ns", "µs", "ms"))

    # Draw calls stay small at this size (one instanced mesh per kind of thing).
    assert 0 < web.tr(page, "drawCalls") <= 60

    web.screenshot(page, "overview")
    assert w.errors == []
    assert w.foreign_requests() == []
    # The import map resolved three.js from the app's own vendored (minified) copy.
    assert any("/static/vendor/three/build/three.module.min.js" in u for u in w.requests)


def test_no_webgl_shows_a_message_not_a_blank_page(browser, server, web) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    # Make this browser behave like one without WebGL, before any page script runs.
    ctx.add_init_script(
        """
        const real = HTMLCanvasElement.prototype.getContext;
        HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
          if (String(kind).startsWith('webgl') || kind === 'experimental-webgl') return null;
          return real.call(this, kind, ...rest);
        };
        """
    )
    page = ctx.new_page()
    try:
        page.goto(server.url + "/")
        page.wait_for_selector("#nowebgl:not([hidden])", timeout=15_000)
        assert "cannot draw the 3D scene" in page.locator("#nowebgl").inner_text()
        # The numbers still work without the scene.
        page.wait_for_function("window.trainingRun.step > 0", timeout=20_000)
        assert web.tr(page, "stageReady") is False
        assert page.locator("#hud-loss").inner_text() != "–"
    finally:
        ctx.close()


def test_webgl_refused_on_the_stage_canvas_shows_the_notice(browser, server, web) -> None:
    # The probe for WebGL passes, but the stage's own canvas gets no context: the stage comes
    # back as its no-op stand-in (ok: false) and the page must treat it as no WebGL at all.
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.add_init_script(
        """
        const real = HTMLCanvasElement.prototype.getContext;
        HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
          const gl = String(kind).startsWith('webgl') || kind === 'experimental-webgl';
          if (gl && this.id === 'stage') return null;
          return real.call(this, kind, ...rest);
        };
        """
    )
    page = ctx.new_page()
    uncaught: list[str] = []
    page.on("pageerror", lambda e: uncaught.append(str(e)))
    try:
        page.goto(server.url + "/")
        page.wait_for_selector("#nowebgl:not([hidden])", timeout=30_000)
        assert "cannot draw the 3D scene" in page.locator("#nowebgl").inner_text()
        assert web.tr(page, "stageReady") is False
        # The numbers keep coming from the socket without the scene.
        first = web.tr(page, "step")
        page.wait_for_function(f"window.trainingRun.step > {first}", timeout=20_000)
        page.wait_for_function(
            "Number(document.getElementById('hud-step').textContent.replace(/,/g, ''))"
            " === window.trainingRun.step",
            timeout=10_000,
        )
        assert page.locator("#hud-loss").inner_text() != "–"
        assert uncaught == []
    finally:
        ctx.close()


def test_part_cards_show_description_and_live_numbers(page_at, web) -> None:
    w = page_at(viewport={"width": 1280, "height": 720})
    page = w.page
    web.wait_stage(page)
    page.wait_for_function("window.trainingRun.step > 0")

    page.locator("#labels .label[data-part='gpus']").click()
    card = page.locator("#card")
    assert card.is_visible()
    assert web.tr(page, "card") == "gpus"
    assert page.locator("#card-title").inner_text() == "GPU servers"
    facts = page.locator("#card-facts").inner_text()
    assert "8 (2 servers × 4)" in facts
    assert "memory used per GPU" in facts and " of 80 GB" in facts
    # The card opens GPU 1 up close on the live run, with the story's own pieces: its
    # layers between the walls and the live step playing through them; closing the card
    # puts it away.
    page.locator("#card-inside").click()
    page.wait_for_function(
        "window.trainingRun.figure.filter((p) => p.name === 'slab').length"
        " === window.trainingRun.roles[0].layers[1] - window.trainingRun.roles[0].layers[0]"
        " && window.trainingRun.figure.some((p) => p.name === 'band' || p.name === 'ring')",
        timeout=30_000,
    )
    assert page.locator("#card-inside").get_attribute("aria-pressed") == "true"
    page.locator("#card-inside").click()  # and put away again
    page.wait_for_function("window.trainingRun.figure.length === 0")

    page.locator("#labels .label[data-part='ring']").click()
    assert page.locator("#card-inside").is_hidden(), "only the GPU servers' card opens GPU 1"
    facts = page.locator("#card-facts").inner_text()
    assert "passes" in facts and "14" in facts  # 2 x (8 - 1) passes for 8 GPUs

    # Closing the card puts GPU 1 away too.
    page.locator("#labels .label[data-part='gpus']").click()
    page.locator("#card-inside").click()
    page.wait_for_function("window.trainingRun.figure.length > 0")
    page.keyboard.press("Escape")
    assert card.is_hidden() and web.tr(page, "card") is None
    page.wait_for_function("window.trainingRun.figure.length === 0")
    assert w.errors == []
