"""The printable question sheet in two versions: /sheet is the students' copy, with every
question and room to write and no teacher's note anywhere in the page; /sheet/teacher (and
/sheet?teacher) is the teacher's, with a note on each question and the note for grown-ups.
Both have the seven parts drawn and numbered as in the app, and the step's loop (forward,
error, backward, update): the students' copy leaves lines to write what happens in each, the
teacher's says it. Both print on one page, on A4 and on Letter, in every language."""

from __future__ import annotations

import re

import httpx
import pytest


def squash(s: str) -> str:
    return re.sub(r"\s+", "", s).lower()


def pdf_pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page\b", pdf))


def open_sheet(browser, url: str):
    ctx = browser.new_context()
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto(url)
    page.wait_for_function("document.body.dataset.ready === 'true'")
    return ctx, page, errors


def content(server) -> dict:
    return httpx.get(f"{server.url}/api/labs/content", timeout=10).json()


PARTS_JS = """[...document.querySelectorAll('#parts .part')].map((e) => {
  const r = e.getBoundingClientRect();
  return { id: e.dataset.part, n: e.querySelector('b').textContent, text: e.textContent,
           box: [r.left, r.top, r.right, r.bottom] };
})"""
LOOP_JS = """[...document.querySelectorAll('#loop li')].map((e) => ({
  id: e.dataset.step, text: e.innerText, lines: e.querySelectorAll('.lines i').length,
}))"""


def scene_parts(server) -> list[dict]:
    return httpx.get(f"{server.url}/api/scenes/training-run", timeout=10).json()["parts"]


def check_parts(page, server) -> None:
    """The seven parts, each numbered and named as the app labels it, none over another."""
    assert page.locator("#figs").is_visible()
    got = page.evaluate(PARTS_JS)
    want = {p["id"]: p for p in scene_parts(server)}
    assert sorted(g["id"] for g in got) == sorted(want), got
    for g in got:
        assert g["n"] == str(want[g["id"]]["number"]), g
        assert squash(want[g["id"]]["name"]) in squash(g["text"]), g
    for i, a in enumerate(got):
        for b in got[i + 1 :]:
            (l1, t1, r1, b1), (l2, t2, r2, b2) = a["box"], b["box"]
            assert r1 <= l2 or r2 <= l1 or b1 <= t2 or b2 <= t1, (a["id"], b["id"])


def test_the_students_copy_has_the_questions_and_no_teacher_notes(browser, server, web) -> None:
    c = content(server)
    notes = [q["teacher_note"] for q in c["questions"]]
    assert all(notes), "every question has a note for the teacher"
    ctx, page, errors = open_sheet(browser, f"{server.url}/sheet")
    # Everything in the page, shown or not, and what the printer gets.
    everything = squash(page.evaluate("document.documentElement.textContent"))
    shown = squash(page.locator("body").inner_text())
    for q in c["questions"]:
        assert squash(q["text"]) in shown, q["id"]
    for note in [*notes, c["grown_ups"]]:
        assert squash(note) not in everything, note
    assert "teacher" not in shown
    # The seven parts, and the loop with room to write what happens in each step; its
    # answers are the teacher's, not in the page.
    check_parts(page, server)
    loop = page.evaluate(LOOP_JS)
    assert [s["id"] for s in loop] == ["forward", "error", "backward", "update"]
    for step, want in zip(loop, c["sheet"]["loop"], strict=True):
        assert squash(want["name"]) in squash(step["text"]) and step["lines"] == 2, step
        assert squash(want["answer"]) not in everything, step
    assert page.locator("#questions .lines").count() == len(c["questions"])  # room to write
    for fmt in ("A4", "Letter"):
        assert pdf_pages(page.pdf(format=fmt)) == 1, fmt
    page.set_viewport_size({"width": 1280, "height": 1400})
    web.screenshot(page, "sheet_student")
    assert errors == []
    ctx.close()


@pytest.mark.parametrize("path", ["/sheet/teacher", "/sheet?teacher"])
def test_the_teachers_copy_has_every_note(browser, server, web, path) -> None:
    c = content(server)
    ctx, page, errors = open_sheet(browser, f"{server.url}{path}")
    shown = squash(page.locator("body").inner_text())
    for q in c["questions"]:
        assert squash(q["text"]) in shown, q["id"]
        assert squash(q["teacher_note"]) in shown, q["id"]
    assert squash(c["grown_ups"]) in shown
    assert "teacher" in shown
    assert page.locator(".lines").count() == 0
    check_parts(page, server)
    loop = page.evaluate(LOOP_JS)
    for step, want in zip(loop, c["sheet"]["loop"], strict=True):
        assert squash(want["answer"]) in squash(step["text"]), step
    assert page.locator("#other").get_attribute("href") == "/sheet"
    for fmt in ("A4", "Letter"):
        assert pdf_pages(page.pdf(format=fmt)) == 1, fmt
    if path == "/sheet/teacher":
        page.set_viewport_size({"width": 1280, "height": 1400})
        web.screenshot(page, "sheet_teacher")
    assert errors == []
    ctx.close()


@pytest.mark.parametrize("lang", ["de", "es"])
def test_the_sheet_in_the_page_language(browser, server, lang) -> None:
    """/sheet?lang=de (es): both copies have words in that language for every line, questions
    numbered with its letter, the teacher's copy marked in it too, and still one page each."""
    c = content(server)
    letter = {"de": '"F"', "es": '"P"'}[lang]
    kickers = []
    for path in ("/sheet", "/sheet/teacher"):
        ctx, page, errors = open_sheet(browser, f"{server.url}{path}?lang={lang}")
        page.wait_for_function("window.trainingRunI18n")
        assert page.evaluate("document.documentElement.lang") == lang
        assert page.evaluate("[...window.trainingRunI18n.misses.keys()]") == [], path
        shown = squash(page.locator("body").inner_text())
        for q in c["questions"]:
            assert squash(q["text"]) not in shown, (path, q["id"])
        assert "teacher" not in shown and "predictfirst" not in shown, path
        before = "getComputedStyle(document.querySelector('#questions li'), '::before').content"
        assert page.evaluate(before).startswith(letter), path
        assert page.locator("#parts .part").count() == 7 and page.locator("#loop li").count() == 4
        kickers.append(page.locator(".kicker").text_content())
        for fmt in ("A4", "Letter"):
            assert pdf_pages(page.pdf(format=fmt)) == 1, (path, fmt)
        assert errors == []
        ctx.close()
    # The teacher's copy says so in the page's language, in its own text.
    assert kickers[1].startswith(kickers[0]) and len(kickers[1]) > len(kickers[0]), kickers
