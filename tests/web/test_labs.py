"""The concept labs in a real browser against the real server: every panel opens from its key
and its toolbar button, the ring lab steps to the end and back, the memory calculator drives
the scene's memory walls, the swap-it cards set the placement, the cost panel recomputes, and
/sheet prints to ONE page (A4 and Letter) with every question in it."""

from __future__ import annotations

import re
import zlib

import httpx
import pytest

# About layout: the pages open at full HD, not the small size the other browser tests use.
VIEWPORT = {"width": 1920, "height": 1080}

LABS = [
    ("r", "ring"),
    ("m", "memory"),
    ("w", "swap"),
    ("c", "cost"),
    ("q", "talk"),
    ("h", "reallook"),
]


def labs(page, name: str):
    return page.evaluate(f"window.trainingRunLabs.{name}")


def open_app(page_at, web):
    w = page_at()
    w.page.wait_for_function("window.trainingRunLabs !== undefined")
    return w


def test_every_panel_opens_from_key_and_toolbar_and_esc_closes(page_at, web) -> None:
    w = open_app(page_at, web)
    page = w.page
    web.wait_stage(page)
    labels = page.locator("#toolbar .group.labs button").all_inner_texts()
    assert labels == ["ring lab", "memory", "swap it", "cost", "questions", "real look"]
    for key, name in LABS:
        page.keyboard.press(key)
        page.wait_for_selector(f"#lab-{name}:not([hidden])")
        assert labs(page, "open") == name
        # Only one panel at a time.
        assert page.locator(".lab-panel:not([hidden])").count() == 1
        web.settled(page)  # the content has arrived and the camera has landed
        web.screenshot(page, f"lab_{name}")
    page.keyboard.press("Escape")
    assert labs(page, "open") is None
    assert page.locator(".lab-panel:not([hidden])").count() == 0
    page.locator("#toolbar .group.labs button", has_text="memory").click()
    assert labs(page, "open") == "memory"
    page.keyboard.press("m")  # the same key again puts it away
    assert labs(page, "open") is None
    # The help overlay lists the lab keys.
    page.keyboard.press("?")
    help_text = page.locator("#help").inner_text()
    for key, _ in LABS:
        assert re.search(rf"\b{key.upper()}\b", help_text)
    assert w.errors == []
    assert w.foreign_requests() == []


def test_ring_lab_steps_to_the_end_and_back(page_at, server, web) -> None:
    w = open_app(page_at, web)
    page = w.page
    page.keyboard.press("r")
    page.wait_for_function("window.trainingRunLabs.ring && window.trainingRunLabs.ring.loaded")
    info = labs(page, "ring")
    g = info["gpus"]
    assert g == 6 and info["passes"] == 2 * (g - 1) and info["pass"] == 0
    api = httpx.get(f"{server.url}/api/labs/ring", params={"gpus": g, "seed": 1}).json()
    assert info["values"] == api["initial"]
    counter = page.locator(".ring-counter")
    assert counter.inner_text() == f"pass 0 / {2 * (g - 1)}"
    nxt = page.locator("#lab-ring button[data-act=next]")
    for k in range(1, 2 * (g - 1) + 1):
        nxt.click()
        assert counter.inner_text() == f"pass {k} / {2 * (g - 1)}"
        assert labs(page, "ring")["values"] == api["passes"][k - 1]["values"]
        if k == g - 1:
            # After reduce-scatter each GPU owns one complete sum, outlined in the table.
            assert page.locator(".ring-table td.done").count() == g
            assert labs(page, "ring")["phase"] == "reduce_scatter"
    end = labs(page, "ring")
    assert end["everyGpuHasTotals"] and end["phase"] == "all_gather"
    assert nxt.is_disabled()
    assert page.locator(".ring-table td.done").count() == g * g
    web.screenshot(page, "lab_ring_done")
    # And back, with the keyboard this time.
    for _ in range(2 * (g - 1)):
        page.keyboard.press(",")
    back = labs(page, "ring")
    assert back["pass"] == 0 and back["values"] == api["initial"]
    assert page.locator("#lab-ring button[data-act=back]").is_disabled()
    # More GPUs: more passes, fetched from the engine again.
    page.locator("#lab-ring button[aria-label='More GPUs']").click()
    page.wait_for_function("window.trainingRunLabs.ring.gpus === 7")
    assert labs(page, "ring")["passes"] == 12
    assert page.locator(".ring-svg .ring-node").count() == 7
    assert w.errors == []


def test_memory_calculator_drives_the_memory_walls(page_at, web) -> None:
    w = open_app(page_at, web)
    page = w.page
    web.wait_stage(page)
    assert labs(page, "memoryCase") is None
    page.keyboard.press("m")
    page.wait_for_function("window.trainingRunLabs.memoryCase !== null")
    outs = page.locator("#lab-memory .mem-outs")
    text = outs.inner_text()
    assert "140 GB" in text and "1.12 TB" in text
    assert re.search(r"GPUs to answer\s*4\b", text)  # 3 hold 168 GB; served tensor-parallel on 4
    assert re.search(r"GPUs just to fit training\s*16\b", text)
    case = labs(page, "memoryCase")
    assert case["fits"] is False and abs(case["fraction"] - 1120 / 72) < 1e-6
    web.settled(page)
    web.screenshot(page, "lab_memory_70b")

    page.locator("#lab-memory .chip[data-group=params][data-value='1B']").click()
    page.wait_for_function("window.trainingRunLabs.memoryCase.fits === true")
    assert "16 GB" in outs.inner_text()
    assert abs(labs(page, "memoryCase")["fraction"] - 16 / 72) < 1e-6
    web.settled(page)
    web.screenshot(page, "lab_memory_1b")

    page.locator("#lab-memory .chip[data-group=params][data-value='70B']").click()
    page.locator("#lab-memory .chip[data-group=precision][data-value=int4]").click()
    page.wait_for_function(
        "document.querySelector('#lab-memory .mem-outs').innerText.includes('35 GB')"
    )
    page.locator("#lab-memory .chip[data-group=gpu][data-value='b200-180gb']").click()
    page.wait_for_function(
        "Math.abs(window.trainingRunLabs.memoryCase.fraction - 1120 / (180 * 0.9)) < 1e-6"
    )
    assert re.search(r"GPUs just to fit training\s*7\b", outs.inner_text())

    # Serving traffic: Llama 3 70B's published shape, 32 requests of 8K tokens, in int4
    # (half a byte a number): 85.9 / 4 = 21.5 GB of keys and values beside 35 GB of weights.
    traffic = "#lab-memory .chip[data-group=traffic]"
    page.locator(f"{traffic}[data-value='32 x 8K']").click()
    page.wait_for_function(
        "document.querySelector('#lab-memory .mem-outs').innerText.includes('of keys and values')"
    )
    assert "56.5 GB: the weights and 21.5 GB of keys and values" in outs.inner_text()
    # A size with no published shape keeps the rule of thumb, and says why.
    page.locator("#lab-memory .chip[data-group=params][data-value='13B']").click()
    page.wait_for_function(
        "document.querySelector('#lab-memory .mem-outs').innerText.includes('with +20%')"
    )
    assert page.locator(f"{traffic}[data-value='32 x 8K']").is_disabled()
    assert page.locator(f"{traffic}[data-value='rule']").get_attribute("aria-pressed") == "true"

    # A bad size is refused by the server, and the message names the field.
    page.fill("#mem-params", "0")
    page.press("#mem-params", "Enter")
    page.wait_for_selector("#lab-memory .lab-error:not(:empty)")
    assert page.locator("#lab-memory .lab-error").inner_text().startswith("Check the model size: ")
    page.fill("#mem-params", "13B")
    page.press("#mem-params", "Enter")
    page.wait_for_function("document.querySelector('#lab-memory .lab-error').textContent === ''")
    assert "208 GB" in outs.inner_text()  # 13B x 16 bytes

    # Esc works even with the focus still in the size field.
    page.keyboard.press("Escape")
    assert labs(page, "open") is None
    assert labs(page, "memoryCase") is None
    # The browser logs the refused request itself; anything else is a real error.
    assert [e for e in w.errors if "status of 422" not in e] == []


def test_swap_it_cards_set_the_placement(page_at, web) -> None:
    w = open_app(page_at, web)
    page = w.page
    web.wait_stage(page)
    page.keyboard.press("w")
    page.wait_for_selector("#lab-swap .swap-card")
    for placement in ["tensor_pipeline", "expert", "finetune", "data"]:
        card = page.locator(f"#lab-swap .swap-card[data-placement={placement}]")
        card.click()
        assert labs(page, "placement") == placement
        assert card.get_attribute("aria-pressed") == "true"
        assert page.locator("#lab-swap .swap-card[aria-pressed=true]").count() == 1
        assert (
            page.locator("#lab-swap .swap-detail h3").inner_text()
            == card.locator(".swap-title").inner_text()
        )
        if placement == "expert":
            web.settled(page)
            web.screenshot(page, "lab_swap_expert")
    page.locator("#lab-swap .swap-card[data-placement=expert]").click()
    page.keyboard.press("Escape")
    # A card re-plans the live run: closing the panel leaves the scene on the run's new plan.
    assert labs(page, "placement") == "expert"
    page.wait_for_function("window.trainingRun.plan && window.trainingRun.plan.experts > 0")
    assert labs(page, "placement") == "expert"
    assert w.errors == []


def test_cost_panel_recomputes_from_edited_assumptions(page_at, web) -> None:
    w = open_app(page_at, web)
    page = w.page
    page.keyboard.press("c")
    page.wait_for_function("window.trainingRunLabs.cost !== null")
    first = labs(page, "cost")
    assert first["inputs"]["peak_tflops"] == 989  # the H100 datasheet figure, shown in the form
    assert page.input_value("#cost-peak_tflops") == "989"
    page.fill("#cost-gpus", "2048")
    page.press("#cost-gpus", "Tab")
    page.wait_for_function("window.trainingRunLabs.cost.inputs.gpus === 2048")
    second = labs(page, "cost")
    assert abs(second["days"] - first["days"] / 2) < 1e-9
    assert abs(second["gpu_hours"] - first["gpu_hours"]) < 1e-6
    page.select_option("#cost-gpu", "a100-80gb")
    page.wait_for_function("window.trainingRunLabs.cost.inputs.gpu === 'a100-80gb'")
    assert page.input_value("#cost-peak_tflops") == "312"
    assert "2026" in page.locator("#lab-cost").inner_text()
    assert "Is it worth it?" in page.locator("#lab-cost").inner_text()
    # The whole-run estimate says what the interruptions cost: the share of time that trains,
    # with checkpoints at Young's interval, as the estimator works it out.
    page.wait_for_function("window.trainingRunLabs.cost.estimate?.goodput")
    g = labs(page, "cost")["estimate"]["goodput"]
    assert 0 < g["effective"] < 1
    shown = page.locator("#cost-estimate").inner_text()
    assert "Time that trains" in shown and f"{g['effective']:.1%}" in shown, shown
    # The grid's CO2 a kWh is an assumption like the others: halved, the emissions halve.
    co2 = labs(page, "cost")["co2_tonnes"]
    assert page.input_value("#cost-co2_kg_per_kwh") == "0.37" and co2 > 0
    page.fill("#cost-co2_kg_per_kwh", "0.185")
    page.press("#cost-co2_kg_per_kwh", "Tab")
    page.wait_for_function("window.trainingRunLabs.cost.inputs.co2_kg_per_kwh === 0.185")
    assert labs(page, "cost")["co2_tonnes"] == pytest.approx(co2 / 2)
    assert w.errors == []


def test_panels_in_projector_mode(page_at, web) -> None:
    w = page_at("?projector")
    page = w.page
    page.wait_for_function("window.trainingRunLabs !== undefined")
    web.wait_stage(page)
    page.keyboard.press("r")
    page.wait_for_function("window.trainingRunLabs.ring && window.trainingRunLabs.ring.loaded")
    size = page.evaluate("getComputedStyle(document.querySelector('#lab-ring')).fontSize")
    assert float(size.removesuffix("px")) >= 20
    for _ in range(3):
        page.keyboard.press(".")
    web.settled(page)
    web.screenshot(page, "lab_ring_projector")
    assert w.errors == []


def test_sheet_prints_on_one_page_with_every_question(browser, server, web) -> None:
    questions = httpx.get(f"{server.url}/api/labs/content").json()["questions"]
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{server.url}/sheet")
    page.wait_for_function("document.body.dataset.ready === 'true'")
    for fmt in ("A4", "Letter"):
        pdf = page.pdf(format=fmt)
        pages, text = pdf_pages_and_text(pdf)
        assert pages == 1, f"{fmt}: {pages} pages"
        flat = squash(text)
        for q in questions:
            assert squash(q["text"]) in flat, q["id"]
        # The note for grown-ups is on the teacher's copy only (tests/web/test_sheet.py).
        assert squash("why do you think that") not in flat
    ctx.close()


# ---- a small PDF text reader (Chromium's PDFs: Flate streams, Type0 fonts, ToUnicode) ----


def squash(s: str) -> str:
    return re.sub(r"\s+", "", s).lower()


def _objects(pdf: bytes) -> dict[int, tuple[bytes, bytes | None]]:
    out: dict[int, tuple[bytes, bytes | None]] = {}
    for num, body in re.findall(rb"(\d+) 0 obj(.*?)endobj", pdf, re.S):
        head, stream = body, None
        m = re.search(rb"stream\r?\n(.*)\r?\nendstream", body, re.S)
        if m:
            head, stream = body[: m.start()], m.group(1)
            if b"/FlateDecode" in head:
                stream = zlib.decompress(stream)
        out[int(num)] = (head, stream)
    return out


def _cmap(data: bytes) -> dict[int, str]:
    table: dict[int, str] = {}
    for block in re.findall(rb"beginbfchar(.*?)endbfchar", data, re.S):
        for src, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
            table[int(src, 16)] = bytes.fromhex(dst.decode()).decode("utf-16-be")
    pair = rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>"
    for block in re.findall(rb"beginbfrange(.*?)endbfrange", data, re.S):
        for a, b, dst in re.findall(pair, block):
            start = int(dst, 16)
            for i, code in enumerate(range(int(a, 16), int(b, 16) + 1)):
                table[code] = chr(start + i)
    return table


def pdf_pages_and_text(pdf: bytes) -> tuple[int, str]:
    """(page count, text) of a PDF, enough to check what a printed sheet says."""
    objs = _objects(pdf)
    pages = sum(1 for head, _ in objs.values() if re.search(rb"/Type\s*/Page\b", head))
    cmaps: dict[int, dict[int, str]] = {}
    for num, (head, _) in objs.items():
        m = re.search(rb"/ToUnicode\s+(\d+)\s+0\s+R", head)
        if m and objs.get(int(m.group(1)), (b"", None))[1] is not None:
            cmaps[num] = _cmap(objs[int(m.group(1))][1] or b"")
    names: dict[bytes, int] = {}
    for head, _ in objs.values():
        for fonts in re.findall(rb"/Font\s*<<(.*?)>>", head, re.S):
            for name, num in re.findall(rb"/(\w+)\s+(\d+)\s+0\s+R", fonts):
                names[name] = int(num)
    text: list[str] = []
    token = re.compile(rb"/(\w+)\s+[\d.]+\s+Tf|<([0-9A-Fa-f]*)>|(ET)")
    for _, stream in objs.values():
        if stream is None or b"Tf" not in stream:
            continue
        table: dict[int, str] = {}
        for m in token.finditer(stream):
            if m.group(1):
                table = cmaps.get(names.get(m.group(1), -1), {})
            elif m.group(2) is not None:
                raw = bytes.fromhex(m.group(2).decode())
                codes = (int.from_bytes(raw[i : i + 2], "big") for i in range(0, len(raw) - 1, 2))
                text.append("".join(table.get(c, "") for c in codes))
            else:
                text.append(" ")
    return pages, "".join(text)
