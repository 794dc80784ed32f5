"""Accessibility, checked by axe-core (tests/web/vendor/axe-core, the npm package's build,
MPL-2.0, for tests only): no serious or critical violation on the main page, a tour stop,
each lab, a story chapter, the page in German, and the students' and teachers' sheets."""

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
