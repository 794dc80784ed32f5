"""Projector mode in a real browser: `?projector` turns on the high-contrast theme with
captions of at least 32 px and labels of at least 24 px at 1920x1080; the toolbar toggles
it; prefers-reduced-motion is honoured."""

from __future__ import annotations

# About layout: the pages open at full HD, not the small size the other browser tests use.
VIEWPORT = {"width": 1920, "height": 1080}


def px(page, selector: str, prop: str = "font-size") -> float:
    value = page.evaluate(
        f"getComputedStyle(document.querySelector({selector!r})).getPropertyValue({prop!r})"
    )
    return float(value.removesuffix("px"))


def test_projector_mode_sizes_and_toggle(page_at, web) -> None:
    w = page_at("?projector")
    page = w.page
    web.wait_stage(page)
    assert web.tr(page, "projector") is True
    assert page.evaluate("document.body.classList.contains('projector')")
    page.keyboard.press("t")  # the tour caption is the caption a room reads
    page.wait_for_function("window.trainingRun.step > 0")
    assert px(page, "#tour-caption") >= 32
    for size in page.evaluate(
        "[...document.querySelectorAll('#labels .label')].map(l => getComputedStyle(l).fontSize)"
    ):
        assert float(size.removesuffix("px")) >= 24
    assert px(page, "#hud-step") >= 24
    web.landed(page)  # the photograph is taken where the first stop's flight lands
    web.screenshot(page, "projector")
    page.keyboard.press("Escape")

    # In projector mode the less-used controls wait in the toolbar's menu, off the scene.
    if not page.locator("#btn-projector").is_visible():
        page.locator("#btn-menu").click()
    page.locator("#btn-projector").click()
    assert web.tr(page, "projector") is False
    assert px(page, "#labels .label") < 24
    assert w.errors == []


def test_reduced_motion_is_honoured(page_at, web) -> None:
    w = page_at(viewport={"width": 1280, "height": 720}, reduced_motion="reduce")
    page = w.page
    web.wait_stage(page)
    assert web.tr(page, "reducedMotion") is True
    assert page.evaluate("document.body.classList.contains('reduced-motion')")
    # Views change at once instead of flying; the state still changes.
    page.keyboard.press("2")
    assert web.tr(page, "view") == 2
    assert w.errors == []
