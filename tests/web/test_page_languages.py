"""The page's own words in German and Spanish, in a real browser: the toolbar, the HUD and its
time panel, the key list with its key names (in <kbd>),
the legend and the colour key read in the language with nothing left in English; the longer
words keep the toolbar on one row on a wide screen and inside the window on a laptop; and a
failed GPU is told in the language, on the chart's canvas label too."""

from __future__ import annotations

import langwalk
import pytest

# Where on the page the chrome lives (the leftover check's `misses` say where each line was seen).
CHROME = (
    "#toolbar",
    "#tb-",
    "#btn-",
    "section.stats",
    "#hud-",
    "#time-total",
    "#time-which",
    "#timebar",
    "#timelegend",
    "#plan-card",
    "#help-keys",
    "#legend",
    "#colour-key",
    "#rewind",
    "#loss-chart",
    "#toasts",
    "#probe-step",
    "#weights-name",
)

ROWS = """() => [...document.querySelectorAll('#toolbar button')]
  .filter((b) => b.checkVisibility())
  .map((b) => {
    const r = b.getBoundingClientRect();
    return { text: b.textContent.trim(), top: r.top, right: r.right };
  })"""

WORDS = {
    "de": {
        "lesson": "Unterricht starten",
        "keys": ["Pfeiltasten", "Leertaste", "Bild ab / Bild auf"],
        "live": "Live-Schritt ",
    },
    "es": {
        "lesson": "Empezar clase",
        "keys": ["flechas", "Espacio", "Av Pág / Re Pág"],
        "live": "Paso en vivo ",
    },
}


def chrome_misses(page) -> list[list[str]]:
    return langwalk.misses_in(page, CHROME)


@pytest.mark.parametrize(("lang", "w", "h"), [("de", 1920, 1080), ("es", 1024, 768)])
def test_the_chrome_speaks_the_language_and_fits(page_at, web, lang, w, h) -> None:
    words = WORDS[lang]
    watch = page_at(f"?lang={lang}&words=check", viewport={"width": w, "height": h})
    page = watch.page
    web.wait_stage(page)
    page.wait_for_function("document.querySelectorAll('#toolbar .labs button').length >= 3")
    page.wait_for_function("window.trainingRun.step > 1")
    web.quiet(page)

    assert page.text_content("#btn-lesson") == words["lesson"]
    assert page.text_content("#time-which").startswith(words["live"])
    legend = page.locator("#legend kbd").all_text_contents()
    assert words["keys"][0] in legend and words["keys"][1] in legend

    rows = page.evaluate(ROWS)
    tops = {round(b["top"]) for b in rows}
    if w >= 1600:
        # One row: a second one would run into the panels below the bar.
        assert len(tops) == 1, rows
        panel = page.evaluate("document.querySelector('.time-panel').getBoundingClientRect().top")
        assert all(b["top"] < panel for b in rows)
    assert all(b["right"] <= w for b in rows), rows

    page.keyboard.press("?")
    page.wait_for_function("!document.getElementById('help').hidden")
    keys = page.locator("#help-keys kbd").all_text_contents()
    for k in words["keys"]:
        assert k in keys, (k, keys)
    page.keyboard.press("Escape")
    web.screenshot(page, f"lang_{lang}_{w}x{h}")
    assert chrome_misses(page) == []
    assert watch.errors == []


def test_a_failure_is_told_in_german_on_the_toast_and_the_chart(page_at, web) -> None:
    watch = page_at("?lang=de&words=check")
    page = watch.page
    page.wait_for_function("window.trainingRun.step > 2")
    page.keyboard.press("k")
    page.wait_for_function(
        "[...document.querySelectorAll('#toasts .toast')]"
        ".some((t) => t.textContent.includes('ausgefallen'))",
        timeout=20_000,
    )
    page.wait_for_function(
        "document.getElementById('loss-chart').getAttribute('aria-label')"
        ".includes('Zurückgesetzt auf Schritt')",
        timeout=20_000,
    )
    label = page.get_attribute("#loss-chart", "aria-label")
    assert label.startswith("Verlust über die Schritte 0 bis "), label
    assert "verloren." in label, label
    assert chrome_misses(page) == []
    assert watch.errors == []
