"""Accessibility, checked by axe-core (tests/web/vendor/axe-core, the npm package's build,
MPL-2.0, for tests only): no serious or critical violation on the main page, a tour stop,
each lab, a story chapter, the page in German, and the students' and teachers' sheets. From
the keyboard: Tab reaches every control that shows, and each shows its focus."""

from __future__ import annotations

from pathlib import Path

import pytest

AXE = (Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js").read_text()

# The pages a class meets. Words and colours are what axe reads, not pixels: the scene's WebGL
# draws are skipped (draw=0).
PAGES = [
    ("main", "?draw=0"),
    ("tour stop", "?draw=0&tour=4"),
    ("lab ring", "?draw=0&lab=ring"),
    ("lab memory", "?draw=0&lab=memory"),
    ("lab swap", "?draw=0&lab=swap"),
    ("lab cost", "?draw=0&lab=cost"),
    ("lab talk", "?draw=0&lab=talk"),
    ("lab real look", "?draw=0&lab=reallook"),
    ("story chapter", "?draw=0&story=one-gpu&chapter=13"),
    ("German", "?draw=0&lang=de&tour=2"),
]

RUN = """async () => {
  const found = await axe.run(document, { resultTypes: ['violations'] });
  return found.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                   where: v.nodes.slice(0, 5).map((n) => n.target.join(' ')) }));
}"""


def serious(page) -> list[dict]:
    page.add_script_tag(content=AXE)
    return page.evaluate(RUN)


def test_no_serious_violation_on_the_pages_a_class_meets(page_at, web) -> None:
    found = {}
    for name, query in PAGES:
        w = page_at(query)
        page = w.page
        page.wait_for_function("window.trainingRun.step > 0 && window.trainingRun.stageReady")
        if "lab=" in query:
            page.wait_for_function("window.trainingRunLabs && window.trainingRunLabs.open")
        if "story=" in query:
            page.wait_for_function("window.trainingRun.story.ready")
        web.settled(page)
        got = serious(page)
        if got:
            found[name] = got
        assert w.errors == [], (name, w.errors)
        page.context.close()
    assert not found, found


@pytest.mark.parametrize("path", ["/sheet", "/sheet/teacher"])
def test_no_serious_violation_on_the_sheets(browser, server, path) -> None:
    ctx = browser.new_context(viewport={"width": 900, "height": 1200})
    try:
        page = ctx.new_page()
        page.goto(f"{server.url}{path}")
        page.wait_for_load_state("networkidle")
        got = serious(page)
        assert got == [], got
    finally:
        ctx.close()


# Tab through a page: every control that shows is reached, and each one reached shows that it
# has the focus (an outline or a ring) on screen.
TAB_STOP = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const s = getComputedStyle(el);
  const r = el.getBoundingClientRect();
  const ring = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0;
  const words = (el.getAttribute('aria-label') || el.textContent || el.value || '').trim();
  const name = `${el.id ? `#${el.id}` : el.tagName.toLowerCase()} '${words.slice(0, 30)}'`;
  return { key: el.dataset.tabSeen || (el.dataset.tabSeen = String(Math.random())), name,
    ring, seen: r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0
      && r.top < innerHeight && r.left < innerWidth };
}"""

CONTROLS = """() => [...document.querySelectorAll(
  'button, a[href], input, select, textarea, [tabindex]:not([tabindex="-1"])'
)].filter((el) => {
  if (el.disabled || el.closest('[hidden], [inert]')) return false;
  const s = getComputedStyle(el);
  const r = el.getBoundingClientRect();
  return s.visibility !== 'hidden' && s.display !== 'none' && r.width > 0 && r.height > 0
    && r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth;
}).filter((el) => !el.dataset.tabSeen).map((el) => {
  const words = (el.getAttribute('aria-label') || el.textContent || el.value || '').trim();
  return `${el.id ? `#${el.id}` : el.tagName.toLowerCase()} '${words.slice(0, 30)}'`;
})"""


@pytest.mark.parametrize(
    ("name", "query"),
    [
        ("main", "?draw=0"),
        ("tour stop", "?draw=0&tour=3"),
        ("memory lab", "?draw=0&lab=memory"),
        ("story chapter", "?draw=0&story=one-gpu&chapter=4"),
    ],
)
def test_tab_reaches_every_control_with_a_visible_focus(page_at, web, name, query) -> None:
    # The camera cuts instead of flying (reduced motion): a label does not come into view
    # in the middle of the walk.
    w = page_at(query, viewport={"width": 1024, "height": 768}, reduced_motion="reduce")
    page = w.page
    page.wait_for_function("window.trainingRun.stageReady")
    if "lab=" in query:
        # Open, and its part framed: the labels have taken their places.
        page.wait_for_function(
            "window.trainingRunLabs && window.trainingRunLabs.open"
            " && window.trainingRunLabs.safeArea !== null"
        )
    if "story=" in query:
        page.wait_for_function("window.trainingRun.story.ready")
    web.settled(page)
    no_ring: list[str] = []
    off_screen: list[str] = []
    keys: list[str] = []
    for _ in range(200):  # a bounded walk: the page's controls are far fewer
        page.keyboard.press("Tab")
        stop = page.evaluate(TAB_STOP)
        if stop is None:
            continue
        if keys and stop["key"] == keys[0]:
            break  # round again
        keys.append(stop["key"])
        if not stop["ring"]:
            no_ring.append(stop["name"])
        if not stop["seen"]:
            off_screen.append(stop["name"])
    missed = page.evaluate(CONTROLS)
    assert len(keys) > 5, (name, keys)
    assert no_ring == [], (name, "focused without a visible ring", no_ring)
    assert off_screen == [], (name, "focused off screen", off_screen)
    assert missed == [], (name, "shown but never reached by Tab", missed)
    assert w.errors == [], w.errors
