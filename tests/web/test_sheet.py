"""The printable question sheet in two versions: /sheet is the students' copy, with every
question and room to write and no teacher's note anywhere in the page; /sheet/teacher (and
/sheet?teacher) is the teacher's, with a note on each question and the note for grown-ups.
Both print on one page, on A4 and on Letter."""

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
    assert page.locator(".lines").count() == len(c["questions"])  # room to write
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
        kickers.append(page.locator(".kicker").text_content())
        for fmt in ("A4", "Letter"):
            assert pdf_pages(page.pdf(format=fmt)) == 1, (path, fmt)
        assert errors == []
        ctx.close()
    # The teacher's copy says so in the page's language, in its own text.
    assert kickers[1].startswith(kickers[0]) and len(kickers[1]) > len(kickers[0]), kickers
