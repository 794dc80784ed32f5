"""The room's layout at the sizes a class meets (a 1024x768 projector, a 1366x768 laptop, a
1920x1080 screen, a 390x844 phone) in every language and in projector mode: no numbered
label sits under a panel, no tour stop covers the part it names, the step panel is a drawer
folded to its heading and bar where room is short (and opens with its button), and Present /
Copy link sit in the "more" menu instead of on the scene. Screenshots of each size land in
tests/web/screenshots (room_<lang>_<w>x<h>.png, tour_<lang>_<w>x<h>_stop<n>.png)."""

from __future__ import annotations

import pytest
from covered import PIECES_HIDDEN_JS

VIEWPORT = {"width": 1024, "height": 768}
SIZES = ((1024, 768), (1366, 768), (1920, 1080), (768, 1024))

# Every numbered label against every panel that shows: the boxes in CSS pixels.
OVERLAPS = r"""() => {
  const shown = (el) => {
    if (!el || el.closest('[hidden]')) return false;
    const s = getComputedStyle(el);
    const r = el.getBoundingClientRect();
    return s.display !== 'none' && s.visibility !== 'hidden' && r.width > 0 && r.height > 0;
  };
  const box = (el) => {
    const r = el.getBoundingClientRect();
    return { l: r.left, t: r.top, r: r.right, b: r.bottom };
  };
  const name = (el) => el.id ? `#${el.id}` : `.${[...el.classList].join('.')}`;
  const shownPanels = [...document.querySelectorAll(
    'section.panel, #field-panel, .presenter-bar > *, .presenter-row > *, .topbar, #legend,'
    + ' #colour-key, .tour-box, .story-box, .lab-panel, .card, .overlay-box, .toast'
  )].filter(shown);
  const panels = shownPanels.map((el) => ({ name: name(el), ...box(el) }));
  // A panel that holds text is opaque: nothing behind it shows through (the top bar is a
  // strip over the scene's edge, its fade kept; a line of bare text such as the keys'
  // legend has no box at all).
  const alpha = (c) => {
    const m = /rgba?\(([^)]*)\)/.exec(c);
    const p = m ? m[1].split(/[ ,/]+/).filter(Boolean) : [];
    return p.length > 3 ? Number(p[3]) : 1;
  };
  const seeThrough = shownPanels.filter((el) => !el.classList.contains('topbar'))
    .filter((el) => {
      const a = alpha(getComputedStyle(el).backgroundColor);
      return a > 0 && a < 1;
    })
    .map((el) => `${name(el)} ${getComputedStyle(el).backgroundColor}`);
  const labels = [...document.querySelectorAll('#labels .label')].filter(shown)
    .map((el) => ({ name: el.textContent.trim(), ...box(el) }));
  const cut = (a, b) => a.l < b.r - 1 && b.l < a.r - 1 && a.t < b.b - 1 && b.t < a.b - 1;
  const hits = [];
  for (const l of labels) {
    for (const p of panels) if (cut(l, p)) hits.push(`${l.name} under ${p.name}`);
  }
  return { hits, labels: labels.length, seeThrough };
}"""


@pytest.mark.parametrize(
    ("lang", "theme"), [("en", ""), ("de", ""), ("es", ""), ("en", "projector")]
)
def test_no_label_sits_under_a_panel_at_the_rooms_sizes(page_at, web, lang, theme) -> None:
    w = page_at(f"?lang={lang}" + (f"&{theme}" if theme else ""))
    page = w.page
    web.wait_stage(page)
    for width, height in SIZES:
        if page.viewport_size != {"width": width, "height": height}:
            since = web.tr(page, "frames")
            page.set_viewport_size({"width": width, "height": height})
            web.drawn(page, since)
        web.settled(page)
        got = page.evaluate(OVERLAPS)
        web.screenshot(page, f"room_{lang}{theme and '_' + theme}_{width}x{height}")
        assert got["labels"] == 7, (width, height, got)
        assert got["hits"] == [], (lang, theme, width, height, got["hits"])
        assert got["seeThrough"] == [], (lang, theme, width, height, got["seeThrough"])
    assert w.errors == [], w.errors


def test_the_step_panel_is_a_drawer_and_present_sits_in_the_menu(page_at, web) -> None:
    w = page_at("")
    page = w.page
    web.wait_stage(page)
    folded = "document.querySelector('.time-panel').classList.contains('folded')"
    assert page.evaluate(folded)
    # Folded, it keeps its heading and the bar; the lens and the plan wait in the drawer.
    assert page.locator(".time-panel .panel-head h2").is_visible()
    assert page.locator("#timebar").is_visible()
    assert not page.locator("#lens-model").is_visible()
    page.locator(".time-panel .drawer-toggle").click()
    assert not page.evaluate(folded)
    assert page.locator("#lens-model").is_visible()
    assert page.locator(".time-panel .drawer-toggle").get_attribute("aria-expanded") == "true"
    # Present and Copy link: in the menu, not on the scene.
    assert not page.locator(".present-btn").is_visible()
    assert page.evaluate("!!document.querySelector('#tb-more .copy-link')")
    page.locator("#btn-menu").click()
    assert page.locator(".present-btn").is_visible() and page.locator(".copy-link").is_visible()
    # On a wide screen the panel is open, its button gone, and the buttons back in the corner.
    page.keyboard.press("Escape")
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.wait_for_function(f"!{folded} && !document.body.classList.contains('compact')")
    assert not page.locator(".time-panel .drawer-toggle").is_visible()
    page.wait_for_function("!!document.querySelector('#presenter .copy-link')", timeout=10_000)
    assert page.locator(".copy-link").is_visible()
    assert w.errors == [], w.errors


# The label of the part a tour stop names, and every numbered label, against every panel.
NAMED = OVERLAPS.replace(
    "return { hits, labels: labels.length, seeThrough };",
    "const part = window.trainingRun.tourPart;"
    " const named = [...document.querySelectorAll(`#labels .label[data-part='${part}']`)]"
    ".filter(shown).map((el) => el.textContent.trim());"
    " return { hits, labels: labels.length, seeThrough, named };",
)


PHONE = (390, 844)


@pytest.mark.parametrize(
    ("size", "lang"),
    [
        (size, lang)
        for lang in ("en", "de", "es")
        for size in ((1024, 768), (1366, 768), (1920, 1080), PHONE)
    ],
)
def test_no_tour_stop_covers_the_part_it_names(page_at, web, size, lang) -> None:
    """At every stop of the tour, on a projector's 1024 x 768 (the box docked to the right
    edge, the scene framed left of it), a laptop's 1366 x 768, at 1920 x 1080 (the box along
    the bottom, the scene framed above it) and on a phone (the box under the scene, the
    labels turned on), in every language: the label of the part the stop names shows, and
    no numbered label sits under the tour's box or any panel."""
    phone = {"is_mobile": True, "has_touch": True} if size == PHONE else {}
    # The camera cuts from stop to stop (reduced motion): the test is about where things
    # land, not the flight between them.
    w = page_at(
        f"?tour=1&lang={lang}",
        viewport={"width": size[0], "height": size[1]},
        reduced_motion="reduce",
        **phone,
    )
    page = w.page
    if phone:  # a phone starts with the labels off (they pile up): L brings them back
        page.wait_for_function("window.trainingRun.stageReady && window.trainingRun.frames > 0")
        page.keyboard.press("l")
        page.wait_for_function("window.trainingRun.labels === true")
    web.wait_stage(page)
    n = web.tr(page, "tourLength")
    insides = 0
    for stop in range(n):
        for _ in range(3 if stop else 0):  # a stop that asks first shows its answer
            page.keyboard.press("PageDown")
            if web.tr(page, "tourStop") == stop:
                break
        page.wait_for_function(f"window.trainingRun.tourStop === {stop}")
        web.settled(page)
        got = page.evaluate(NAMED)
        if stop in (0, n - 1):
            web.screenshot(page, f"tour_{lang}_{size[0]}x{size[1]}_stop{stop + 1}")
        if web.tr(page, "tourInside"):
            # The stop opens GPU 1 up close: its pieces are what it names, and none is under
            # the tour's box or a panel.
            page.wait_for_function(
                "window.trainingRun.figure.some((p) => p.name === 'slab')"
                " && !window.trainingRun.cameraFlying"
            )
            inside = page.evaluate(PIECES_HIDDEN_JS)
            assert inside["pieces"] > 0 and inside["hits"] == [], (size, stop, inside)
            insides += 1
        else:
            assert got["named"], (size, stop, got)
        assert got["hits"] == [], (size, stop, got["hits"])
        assert got["seeThrough"] == [], (size, stop, got["seeThrough"])
    assert insides == 1, "one stop opens GPU 1"
    assert w.errors == [], w.errors
