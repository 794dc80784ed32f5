"""A lesson in a real browser: "Start lesson" starts the run over at step 0 at lesson pace
with the tour at its first stop; a tour stop waits for the next press unless auto-advance is
chosen, and pausing the run holds an auto-advancing tour; every stop has its longer "more";
the cards say what each part is and why training needs it; "how big?" and the scene's note
are on the page; "new run" starts a run on another cluster; and a viewer without the
presenter's rights is told why these controls do nothing."""

from __future__ import annotations

import json
import urllib.request

import pytest

from app.paths import SCENES_DIR
from app.scenes import SceneInvalid, parse_scene

# About layout: the pages open at full HD, not the small size the other browser tests use.
VIEWPORT = {"width": 1920, "height": 1080}
# A lesson starts the run over at lesson pace and its tour follows the steps: it trains.
TRAINS = True

HELD_S = 20


def scene(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/api/scenes/training-run", timeout=10) as r:
        return json.load(r)


def press(page, key: str) -> dict:
    """A key press and the tour's state, read in the same browser task."""
    return page.evaluate(
        """(key) => {
          document.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true }));
          const t = window.trainingRun;
          return { active: t.tourActive, stop: t.tourStop, more: t.tourMore, auto: t.tourAuto };
        }""",
        key,
    )


def tap(page, selector: str) -> None:
    """Press a button on a page whose timers run on Playwright's clock. There the page's
    animation frames are the clock's too, and a busy machine keeps them from proving a button
    "stable" for a mouse click; so the button is checked to be there and shown, then clicked."""
    button = page.locator(selector)
    assert button.is_visible(), selector
    button.dispatch_event("click")


def until(page, condition: str, timeout: float = 60_000) -> None:
    """Wait for `condition` on a machine that may be busy; say where the run was if it never
    came true."""
    try:
        page.wait_for_function(condition, timeout=timeout)
    except Exception as exc:
        seen = page.evaluate(
            "(({runId, step, speed, runState, connection, tourActive, tourStop}) =>"
            " ({runId, step, speed, runState, connection, tourActive, tourStop}))"
            "(window.trainingRun)"
        )
        raise AssertionError(f"{condition} never came true: {seen}") from exc


def test_start_lesson_starts_over_at_lesson_pace_with_the_tour(page_at, web) -> None:
    w = page_at()
    page = w.page
    web.wait_stage(page)
    until(page, "window.trainingRun.step > 5")
    old = web.tr(page, "runId")
    assert page.locator("#btn-lesson").is_visible()
    assert page.locator("#btn-lesson").get_attribute("aria-disabled") is None

    page.locator("#btn-lesson").click()
    # A new run, back at step 0 (then 1, 2, ...), at lesson pace, touring from stop 1.
    until(
        page,
        f"window.trainingRun.runId !== {old!r} && window.trainingRun.step !== null"
        " && window.trainingRun.step <= 1",
    )
    assert web.tr(page, "tourActive") is True
    assert web.tr(page, "tourStop") == 0
    until(page, "window.trainingRun.speed === 'lesson'")
    assert web.tr(page, "runState") == "running"
    assert page.locator("#tour-count").inner_text() == "stop 1 of 9"
    until(page, "window.trainingRun.step >= 2")
    # The first stop quotes the fresh run's step count, not the old one's.
    caption = page.locator("#tour-caption").inner_text()
    assert "{" not in caption and str(web.tr(page, "gpus")) in caption
    assert web.tr(page, "labelCount") == 7
    web.screenshot(page, "lesson_start")
    page.keyboard.press("Escape")
    assert w.errors == []


def test_a_stop_waits_for_the_next_press_and_auto_advance_is_a_choice(page_at, web) -> None:
    # The tour's own timers run on Playwright's clock: its 8 s stops pass at once. The test
    # reads the tour's state and its box, not the scene: the page skips the WebGL draw.
    w = page_at("?draw=0", viewport={"width": 1280, "height": 720}, clock=True)
    page = w.page
    web.wait_stage(page)
    state = press(page, "t")
    assert state["active"] is True and state["stop"] == 0
    page.clock.fast_forward(HELD_S * 1000)
    assert web.tr(page, "tourStop") == 0, "a stop moved on without a press"
    assert web.tr(page, "tourAuto") is False  # waiting for presses is the default
    assert page.locator("#tour-progress-track").is_hidden()  # no clock to watch

    assert press(page, "PageDown")["stop"] == 1
    page.evaluate("document.activeElement && document.activeElement.blur()")
    assert press(page, "Enter")["stop"] == 2
    tap(page, "#tour-next")
    assert web.tr(page, "tourStop") == 3
    assert press(page, "PageUp")["stop"] == 2

    # I unfolds the longer story, in the live numbers; moving on folds it again.
    assert press(page, "i")["more"] is True
    more = page.locator("#tour-more-text")
    assert more.is_visible() and len(more.inner_text()) > 120
    assert "{" not in more.inner_text()
    assert press(page, "PageDown") == {"active": True, "stop": 3, "more": False, "auto": False}
    assert page.locator("#tour-more").is_hidden()
    tap(page, "#tour-more-btn")
    assert web.tr(page, "tourMore") is True
    web.screenshot(page, "lesson_tour_more")
    tap(page, "#tour-more-btn")

    # Auto-advance on: the bar shows and the tour moves on by itself.
    tap(page, "#tour-auto")
    assert web.tr(page, "tourAuto") is True
    assert page.locator("#tour-progress-track").is_visible()
    at = web.tr(page, "tourStop")
    page.clock.fast_forward(HELD_S * 1000)
    page.wait_for_function(f"window.trainingRun.tourStop === {at + 1}", timeout=20_000)
    web.screenshot(page, "lesson_tour_auto")

    # The choice is kept for the session (a reload of the same tab).
    page.keyboard.press("Escape")
    page.reload()
    page.wait_for_function("window.trainingRun && window.trainingRun.connection === 'open'")
    web.wait_stage(page)
    assert web.tr(page, "tourAuto") is True

    # Pausing the run holds an auto-advancing tour; resuming lets it go on.
    assert press(page, "t")["stop"] == 0
    page.keyboard.press("p")
    page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=15_000)
    page.clock.fast_forward(12_000)  # longer than the stop's 8 s
    assert web.tr(page, "tourStop") == 0, "a paused run's tour moved on"
    page.keyboard.press("p")
    page.wait_for_function("window.trainingRun.runState === 'running'", timeout=15_000)
    page.clock.fast_forward(HELD_S * 1000)
    page.wait_for_function("window.trainingRun.tourStop === 1", timeout=15_000)

    # Back to waiting for presses: the choice goes both ways.
    tap(page, "#tour-auto")
    assert web.tr(page, "tourAuto") is False
    assert page.locator("#tour-progress-track").is_hidden()
    page.keyboard.press("Escape")
    assert w.errors == []


def test_every_stop_has_more_and_every_card_says_what_and_why(page_at, server, web) -> None:
    spec = scene(server.url)
    w = page_at()
    page = w.page
    web.wait_stage(page)

    for k, stop in enumerate(spec["tour"]):
        assert stop.get("more"), f"stop {k + 1} has no more"
        state = press(page, "t" if k == 0 else "PageDown")
        assert state["stop"] == k
        if stop.get("ask"):
            # Predict, then reveal: the next press shows the answer on the same stop.
            assert press(page, "PageDown")["stop"] == k
        assert press(page, "i")["more"] is True
        text = page.locator("#tour-more-text").inner_text()
        assert text.startswith(stop["more"].split("{")[0].strip()), (k, text)
        assert "{" not in text and "}" not in text, text
    page.keyboard.press("Escape")

    for part in spec["parts"]:
        assert part.get("what") and part.get("why"), part["id"]
        page.locator(f"#labels .label[data-part='{part['id']}']").dispatch_event("click")
        page.wait_for_function(f"window.trainingRun.card === {part['id']!r}")
        assert page.locator("#card-what-text").inner_text() == part["what"]
        assert page.locator("#card-why-text").inner_text() == part["why"]
        assert page.locator("#card-why").is_visible()
        if part["id"] == "checkpoints":
            web.screenshot(page, "lesson_card")
    page.keyboard.press("Escape")

    # The scene's note (honest proportions, simplified details) is in the help.
    page.keyboard.press("?")
    assert page.locator("#help-note").inner_text() == spec["note"]
    page.keyboard.press("Escape")

    # How big is a real run? Public figures, labelled as such, beside this run's own.
    page.locator("#btn-howbig").click()
    assert web.tr(page, "howBigOpen") is True
    box = page.locator("#howbig")
    text = " ".join(box.text_content().split())
    for needed in ("weeks to months", "100,000", "thousands", "public reports", "This run"):
        assert needed in text, needed
    assert f"{web.tr(page, 'gpus')} simulated" in text
    assert spec["note"] in text
    web.screenshot(page, "lesson_howbig")
    page.keyboard.press("Escape")
    assert web.tr(page, "howBigOpen") is False
    # ... and from the tour's "more".
    press(page, "t")
    press(page, "i")
    page.locator("#tour-howbig").click()
    assert web.tr(page, "howBigOpen") is True
    page.keyboard.press("Escape")
    assert w.errors == []


def test_the_more_text_is_checked_like_a_caption() -> None:
    raw = json.loads((SCENES_DIR / "training-run.json").read_text(encoding="utf-8"))
    raw["tour"][0]["more"] = "It has {gpus} GPUs and {nonsense}."
    with pytest.raises(SceneInvalid, match="nonsense"):
        parse_scene(json.dumps(raw))
    raw["tour"][0]["more"] = "x" * 701
    with pytest.raises(SceneInvalid, match="more"):
        parse_scene(json.dumps(raw))
    raw = json.loads((SCENES_DIR / "training-run.json").read_text(encoding="utf-8"))
    raw["parts"][0]["why"] = "y" * 241
    with pytest.raises(SceneInvalid, match="why"):
        parse_scene(json.dumps(raw))


def test_new_run_on_another_cluster(page_at, web) -> None:
    w = page_at(viewport={"width": 1280, "height": 720})
    page = w.page
    web.wait_stage(page)
    old = web.tr(page, "runId")
    page.locator("#btn-newrun").click()
    assert web.tr(page, "newRunOpen") is True
    assert page.locator("#newrun-gpus").input_value() == "8"
    assert page.locator("#newrun-servers").input_value() == "2"

    # A cluster that breaks a rule is named before anything is sent.
    page.locator("#newrun-gpus").fill("12")
    page.locator("#newrun-servers").fill("5")
    assert "divide evenly" in page.locator("#newrun-problem").inner_text()
    assert page.locator("#newrun-start").is_disabled()
    web.screenshot(page, "lesson_newrun_bad")
    # Esc closes it even from inside a field; opened again, it shows the run as it is.
    page.locator("#newrun-gpus").press("Escape")
    assert web.tr(page, "newRunOpen") is False
    page.locator("#btn-newrun").click()
    assert page.locator("#newrun-gpus").input_value() == "8"

    page.locator("#newrun-gpus").fill("16")
    page.locator("#newrun-servers").fill("2")
    page.locator("#newrun-seed").fill("7")
    assert page.locator("#newrun-problem").inner_text() == ""
    page.locator("#newrun-start").click()
    page.wait_for_function(
        f"window.trainingRun.runId !== {old!r} && window.trainingRun.gpus === 16", timeout=30_000
    )
    assert web.tr(page, "servers") == 2
    assert web.tr(page, "newRunOpen") is False
    # "then start the lesson" was ticked: lesson pace and the tour from stop 1.
    assert web.tr(page, "tourActive") is True and web.tr(page, "tourStop") == 0
    until(page, "window.trainingRun.speed === 'lesson'")
    # The stage was rebuilt for the new cluster and still shows its seven parts.
    page.wait_for_function("window.trainingRun.labelCount === 7 && window.trainingRun.frames > 0")
    page.wait_for_function("window.trainingRun.stepShown !== null", timeout=20_000)
    web.screenshot(page, "lesson_newrun_16")
    page.keyboard.press("Escape")
    assert w.errors == []


def test_a_viewer_starts_a_run_of_its_own_and_leaves_the_class_run_alone(
    browser, tmp_path, web
) -> None:
    token = ("--public", "--token", "tok-lesson-42")
    srv = web.ServerProcess(tmp_path / "run", *web.SMALL, *token)
    srv.start(fresh=True)
    try:
        w = web.open_page(browser, srv.url, viewport={"width": 1280, "height": 720})
        page = w.page
        page.wait_for_function("window.trainingRun.runId", timeout=30_000)
        old = web.tr(page, "runId")
        button = page.locator("#btn-lesson")
        assert button.is_visible()
        assert button.get_attribute("aria-disabled") == "true"
        assert "presenter" in button.get_attribute("title")
        # Marked disabled for assistive technology, yet a click still says why.
        page.locator("#btn-lesson").click(force=True)
        page.wait_for_selector(".toast", timeout=5_000)
        assert "presenter" in page.locator("#toasts").inner_text()
        # "new run…" offers a run of the viewer's own instead, bounded in size.
        assert page.locator("#btn-newrun").get_attribute("aria-disabled") is None
        page.locator("#btn-newrun").click()
        assert page.locator("#newrun-title").inner_text() == "A run of your own"
        assert "presenter" in page.locator("#newrun-intro").inner_text()
        assert page.locator("#newrun-start").inner_text() == "Start my own run"
        assert not page.locator("#newrun-lesson").is_visible()
        page.locator("#newrun-gpus").fill("128")
        assert "between 1 and 64" in page.locator("#newrun-problem").inner_text()
        page.locator("#newrun-gpus").fill("2")
        page.locator("#newrun-servers").fill("1")
        # Its own batch and learning rate, checked as typed.
        page.locator("#newrun-lr").fill("0")
        assert "lr must be above 0" in page.locator("#newrun-problem").inner_text()
        page.locator("#newrun-lr").fill("0.01")
        page.locator("#newrun-batch").fill("16")
        assert page.locator("#newrun-problem").inner_text() == ""
        web.screenshot(page, "lesson_viewer")
        page.locator("#newrun-start").click()
        page.wait_for_function(
            "window.trainingRun.watching.startsWith('mine.') && window.trainingRun.gpus === 2",
            timeout=60_000,
        )
        assert web.tr(page, "lr") == 0.01 and web.tr(page, "batchSize") == 16
        assert page.locator("#newrun").is_hidden() and page.locator("#own-run").is_visible()
        web.screenshot(page, "lesson_viewer_own_run")
        mine = web.tr(page, "runId")
        assert mine != old and web.tr(page, "canControl") is True
        # Its own run is the viewer's to pause; the class run went on, unchanged.
        page.keyboard.press("p")
        page.wait_for_function("window.trainingRun.runState === 'paused'")
        status = web.get_json(f"{srv.url}/api/run")
        assert status["run_id"] == old and status["state"] == "running"
        page.locator("#own-back").click()
        page.wait_for_function(f"window.trainingRun.runId === {old!r}")
        assert page.locator("#own-run").is_hidden()
        page.context.close()
    finally:
        srv.stop()
