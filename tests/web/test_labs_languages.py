"""The concept labs in German and Spanish, in a real browser: the memory calculator with a big
model in fp8, the ring lab stepped to its end and the cost panel read in the language, with
every line they fill in at run time matched (no lab line left without words), the GPU names
kept as they are, the years in the cost panel's sources not written as thousands, and the
"Big idea" the stylesheet writes in the language too."""

from __future__ import annotations

import langwalk
import pytest

# Where the labs live on the page (the leftover check's `misses` say where each line was seen).
LAB_PLACES = ("#lab-", "#labs", "#cost-", "#mem-")

WORDS = {
    "de": {
        "nofit": "Passt nicht auf eine GPU.",
        "spread": "Jede der ",
        "done": "Fertig.",
        "sources": "Quellen: ",
        "idea": "Die große Idee: ",
        "kicker": "PROBIER ES AUS · KONZEPTLABOR · TASTE R",
        "check": "Prüfe die Modellgröße: '12 Äpfel' ist keine Anzahl wie 70B, 1T oder 7e9",
    },
    "es": {
        "nofit": "No cabe en una GPU.",
        "spread": "Cada una de las ",
        "done": "Listo.",
        "sources": "Fuentes: ",
        "idea": "La gran idea: ",
        "kicker": "PRUÉBALO · LABORATORIO DE CONCEPTOS · TECLA R",
        "check": "Revisa el tamaño del modelo: '12 Äpfel' no es una cantidad como 70B, 1T o 7e9",
    },
}


def lab_misses(page) -> list[list[str]]:
    return langwalk.misses_in(page, LAB_PLACES)


def click(page, selector: str) -> None:
    page.evaluate("(s) => document.querySelector(s).click()", selector)


@pytest.mark.parametrize("lang", ["de", "es"])
def test_the_labs_speak_the_language(page_at, web, lang) -> None:
    words = WORDS[lang]
    w = page_at(f"?lang={lang}&words=check", viewport={"width": 800, "height": 600})
    page = w.page
    page.wait_for_function("window.trainingRunLabs !== undefined && window.trainingRunI18n")
    web.wait_stage(page)

    # Memory: 405B in fp8 does not fit one GPU; spread over the GPUs it takes, it does.
    page.keyboard.press("m")
    page.wait_for_selector('#lab-memory .chip[data-value="405B"]')
    click(page, '#lab-memory .chip[data-value="405B"]')
    click(page, '#lab-memory .chip[data-value="fp8"]')
    page.wait_for_function(
        "window.trainingRunLabs.memory.result?.params === 405e9"
        " && window.trainingRunLabs.memory.result?.precision === 'fp8'"
    )
    web.quiet(page)
    assert page.text_content("#lab-memory .mem-verdict-word") == words["nofit"]
    gpus = page.locator("#lab-memory .chip[data-group=gpu]").all_inner_texts()
    assert "H100 80 GB" in gpus and "V100 32 GB" in gpus  # product names, as they are
    click(page, "#lab-memory .mem-spread")
    web.quiet(page)
    assert page.text_content("#lab-memory .mem-spread-note").startswith(words["spread"])
    idea = page.evaluate(
        "getComputedStyle(document.querySelector('#lab-memory .lab-idea'), '::before').content"
    )
    assert idea.strip("\"'") == words["idea"]
    # A size the server refuses: the field named and the server's reason, in the language.
    page.fill("#mem-params", "12 Äpfel")
    page.press("#mem-params", "Enter")
    page.wait_for_selector("#lab-memory .lab-error:not(:empty)")
    assert page.text_content("#lab-memory .lab-error") == words["check"]
    page.keyboard.press("Escape")

    # Ring: every pass, to the end.
    page.keyboard.press("r")
    page.wait_for_function("window.trainingRunLabs.ring?.loaded")
    passes = page.evaluate("window.trainingRunLabs.ring.passes")
    for _ in range(passes):
        page.keyboard.press(".")
    page.wait_for_function(f"window.trainingRunLabs.ring.pass === {passes}")
    web.quiet(page)
    assert page.text_content("#lab-ring .ring-phase").startswith(words["done"])
    assert page.inner_text("#lab-ring .lab-kicker") == words["kicker"]
    page.keyboard.press("Escape")

    # Cost: the sources read in the language; a year stays a year.
    page.keyboard.press("c")
    page.wait_for_function("window.trainingRunLabs.cost !== null")
    web.quiet(page)
    sources = page.text_content("#lab-cost .lab-source")
    assert sources.startswith(words["sources"])
    assert "Kaplan et al. 2020" in sources and "(Meta, 2024)" in sources
    page.keyboard.press("Escape")

    assert lab_misses(page) == []
    # The browser logs the refused size itself; anything else is a real error.
    assert [e for e in w.errors if "status of 422" not in e] == []
