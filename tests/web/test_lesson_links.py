"""Lesson links: every state a teacher starts from is a URL, and "copy link to this view"
writes the URL that opens it again. Pages here run without WebGL (the state is the page's,
not the picture's), one module server for all of them."""

from __future__ import annotations

import pytest

VIEW = {"width": 800, "height": 600}
CHROMIUM = "/usr/bin/chromium"
READY = (
    "window.trainingRun && window.trainingRun.runId && window.trainingRun.tourLength > 0"
    " && window.trainingRunLabs && window.trainingRunPresenter"
)


@pytest.fixture(scope="module")
def flat(browser):
    b = browser.browser_type.launch(
        executable_path=CHROMIUM, headless=True, args=["--disable-3d-apis", "--mute-audio"]
    )
    try:
        yield b
    finally:
        b.close()


def _open(flat, server, web, query: str):
    w = web.open_page(flat, server.url, query, viewport=VIEW)
    w.page.wait_for_function(READY, timeout=60_000)
    return w


def test_each_lesson_link_opens_the_state_it_names(flat, server, web) -> None:
    cases = [
        ("?view=3", "window.trainingRun.view === 3 && !window.trainingRun.tourActive"),
        ("?tour=4", "window.trainingRun.tourActive && window.trainingRun.tourStop === 3"),
        (
            "?lab=memory&params=70B&precision=bf16",
            "window.trainingRunLabs.open === 'memory' && window.trainingRunLabs.memory?.params"
            " === '70B' && window.trainingRunLabs.memory?.precision === 'bf16'"
            " && document.getElementById('mem-params').value === '70B'",
        ),
        (
            "?lab=memory&params=405B&precision=fp8",
            "window.trainingRunLabs.open === 'memory' && window.trainingRunLabs.memory?.params"
            " === '405B' && window.trainingRunLabs.memory?.precision === 'fp8'",
        ),
        ("?labels=0", "window.trainingRun.labels === false"),
        ("?projector", "window.trainingRun.projector === true"),
        (
            "?hide=controls&lang=xx",
            "document.body.classList.contains('hide-controls')"
            " && getComputedStyle(document.getElementById('toolbar')).display === 'none'"
            " && getComputedStyle(document.getElementById('legend')).display === 'none'",
        ),
    ]
    for query, expect in cases:
        w = _open(flat, server, web, query)
        w.page.wait_for_function(expect, timeout=30_000)
        assert w.errors == [], (query, w.errors)
        w.page.context.close()
    # Nothing named: nothing changed from a freshly opened page.
    w = _open(flat, server, web, "")
    state = w.page.evaluate(
        "[trainingRun.view, trainingRun.tourActive, trainingRun.labels,"
        " window.trainingRunLabs.open]"
    )
    assert state == [0, False, True, None]
    w.page.context.close()


def test_copy_link_to_this_view_reopens_it(flat, server, web) -> None:
    w = _open(flat, server, web, "?lab=memory&params=405B&lang=de")
    p = w.page
    p.wait_for_function("window.trainingRunLabs.memory?.params === '405B'", timeout=30_000)
    p.keyboard.press("Escape")
    p.wait_for_function("!window.trainingRunLabs.open", timeout=10_000)
    p.keyboard.press("t")
    p.keyboard.press("PageDown")
    p.keyboard.press("l")
    p.wait_for_function("window.trainingRun.tourStop === 1 && !window.trainingRun.labels")
    # (at 800 px the link button sits in the toolbar's menu: press it where it is)
    p.evaluate("document.querySelector('.copy-link').click()")
    p.wait_for_function("window.trainingRunPresenter.lastCopied", timeout=10_000)
    link = p.evaluate("window.trainingRunPresenter.lastCopied")
    assert link.startswith(server.url) and "tour=2" in link and "labels=0" in link
    assert "lang=de" in link and "lab=" not in link
    w.page.context.close()
    again = web.open_page(flat, server.url, link[len(server.url) + 1 :], viewport=VIEW)
    again.page.wait_for_function(
        "window.trainingRun.tourActive && window.trainingRun.tourStop === 1"
        " && window.trainingRun.labels === false",
        timeout=60_000,
    )
    again.page.context.close()


def test_a_question_waits_for_the_press_then_shows_the_live_answer(flat, server, web) -> None:
    # Stop 5 (the ring) asks before it tells: the first press reveals, the next moves on.
    w = _open(flat, server, web, "?tour=5")
    p = w.page
    p.wait_for_function("window.trainingRun.tourStop === 4", timeout=30_000)
    caption = p.locator("#tour-caption")
    assert caption.inner_text().startswith("Predict first:")
    assert p.evaluate("window.trainingRunPresenter.parts.tour.revealed") is False
    p.keyboard.press("PageDown")
    p.wait_for_function("window.trainingRunPresenter.parts.tour.revealed === true")
    assert web.tr(p, "tourStop") == 4
    passes = 2 * (web.tr(p, "gpus") - 1)  # the answer quotes the live ring
    assert caption.inner_text().startswith(f"Answer: 2 × ({web.tr(p, 'gpus')} − 1) = {passes}:")
    p.keyboard.press("PageDown")
    p.wait_for_function("window.trainingRun.tourStop === 5")
    w.page.context.close()


def test_the_sheets_carry_the_tours_questions(flat, server, web) -> None:
    import httpx

    spec = httpx.get(server.url + "/api/scenes/training-run", timeout=10).json()
    asks = [(i, s["ask"]) for i, s in enumerate(spec["tour"]) if s.get("ask")]
    assert len(asks) >= 3
    for path, teacher in (("/sheet", False), ("/sheet/teacher", True)):
        page = flat.new_page(viewport=VIEW)
        page.goto(server.url + path)
        page.wait_for_function("document.body.dataset.ready === 'true'", timeout=30_000)
        items = page.locator("#predict-list li").all_inner_texts()
        assert len(items) == len(asks)
        for text, (i, ask) in zip(items, asks, strict=True):
            assert text.startswith(f"Tour stop {i + 1}: ")
            first = ask["question"].split("{")[0][:30]
            assert first in text and "{" not in text
            assert ("On screen after the press" in text) is teacher
        page.close()
