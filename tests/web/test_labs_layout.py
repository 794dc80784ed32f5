"""The lab panels on the screens they are used on: a laptop, a 1920x1080 projector, a
1024x768 school projector and a phone, in every language. A lab that changes the scene frames
the part it changes clear of its panel and of every other (on a phone the panel is a sheet
under the scene); the ring lab's table and chart read at small sizes; every panel
fits the window, can be closed, and keeps its words at least 14 px (larger in projector mode).
Real server, real page; the part's place on screen is found by picking the canvas."""

from __future__ import annotations

import pytest
from covered import PANELS_OVER_JS
from playwright.sync_api import TimeoutError as PlaywrightTimeout

SMALL_SCREEN = {"width": 1024, "height": 768}
LAPTOP = {"width": 1280, "height": 720}
FULL_HD = {"width": 1920, "height": 1080}
LABS = [("r", "ring"), ("m", "memory"), ("w", "swap"), ("c", "cost"), ("q", "talk")]

RECT = """(sel) => {
  const e = document.querySelector(sel);
  if (!e) return null;
  const r = e.getBoundingClientRect();
  if (r.width < 1 || r.height < 1 || getComputedStyle(e).display === 'none') return null;
  return {left: r.left, top: r.top, right: r.right, bottom: r.bottom};
}"""


def rect(page, selector: str) -> dict | None:
    return page.evaluate(RECT, selector)


def overlap(a: dict, b: dict, margin: float = 0) -> bool:
    return (
        a["left"] < b["right"] + margin
        and a["right"] > b["left"] - margin
        and a["top"] < b["bottom"] + margin
        and a["bottom"] > b["top"] - margin
    )


def inside(a: dict, w: float, h: float) -> bool:
    return a["left"] >= 0 and a["top"] >= 0 and a["right"] <= w and a["bottom"] <= h


def size_name(vp: dict) -> str:
    return f"{vp['width']}x{vp['height']}"


def open_lab(page, web, key: str, name: str) -> None:
    web.wait_stage(page)
    # The labs mount beside the stage; a key pressed before they are there opens nothing.
    page.wait_for_function("window.trainingRunLabs !== undefined")
    page.keyboard.press(key)
    page.wait_for_selector(f"#lab-{name}:not([hidden])")


def settle_framing(page) -> None:
    """Wait until the open lab has framed its part and the camera has stopped moving."""
    try:
        page.wait_for_function("window.trainingRunLabs.safeArea !== null", timeout=20_000)
    except PlaywrightTimeout:
        pytest.fail(
            "the lab never framed its part: it needs the stage, which main.js hands over as"
            " mountLabs({ store, ui: { actions, getStage } })"
        )
    page.wait_for_function(
        """(() => {
          const d = window.trainingRun.camera.distance;
          const w = window.__lastDistance;
          window.__lastDistance = d;
          return w !== undefined && Math.abs(w - d) < 1e-6;
        })()""",
        polling=400,
        timeout=20_000,
    )


# ---- 1. a lab does not cover what it changes ----------------------------------------------


# In projector mode (bigger type, a wider panel); the laptop's page at every size and in
# every language is test_a_labs_part_is_clear_of_every_panel_at_every_size below.
@pytest.mark.parametrize("viewport", [FULL_HD, SMALL_SCREEN], ids=size_name)
@pytest.mark.parametrize(("key", "name"), [("m", "memory"), ("w", "swap")])
def test_scene_labs_frame_their_part_clear_of_the_panel(page_at, web, key, name, viewport) -> None:
    w = page_at("?projector", viewport=viewport, reduced_motion="reduce")
    page = w.page
    open_lab(page, web, key, name)
    if name == "swap":
        # Fine-tuning uses the first GPUs, the ones nearest the panel.
        page.locator("#lab-swap .swap-card[data-placement=finetune]").click()
        page.wait_for_function("window.trainingRunLabs.placement === 'finetune'")
    else:
        page.wait_for_function("window.trainingRun.stageDebug.overflowWalls > 0", timeout=30_000)
    settle_framing(page)
    web.screenshot(page, f"layout_{name}_{size_name(viewport)}_projector")
    panel = rect(page, f"#lab-{name}")
    part = page.evaluate("window.trainingRun.partBox('gpus', 12)")
    assert part is not None, "the GPU servers are not on screen at all"
    vw, vh = viewport["width"], viewport["height"]
    assert not overlap(part, panel), f"the GPU servers {part} are behind the panel {panel}"
    assert inside(part, vw, vh), f"the GPU servers {part} leave the window"
    if name == "memory":
        walls = page.evaluate("window.trainingRun.wallsOnScreen")
        label = walls["label"]
        assert label is not None, "no label over the walls"
        assert inside(label, vw, vh), f"the 'doesn't fit' label {label} leaves the window"
        assert not overlap(label, panel), "the 'doesn't fit' label is under the panel"
        key_box = rect(page, "#colour-key")
        if key_box:
            assert not overlap(label, key_box), f"the label {label} is under the colour key"
        assert inside(walls["box"], vw, vh), f"the walls and towers {walls['box']} leave the window"
    # Closing gives the stage its own safe area back.
    page.keyboard.press("Escape")
    page.wait_for_function("window.trainingRunLabs.safeArea === null")
    assert w.errors == []


# ---- 4. the ring lab at small sizes -------------------------------------------------------

HEADERS = """() => {
  const wrap = document.querySelector('#lab-ring .ring-table-wrap');
  const panel = document.querySelector('#lab-ring .lab-body').getBoundingClientRect();
  const w = wrap.getBoundingClientRect();
  return [...wrap.querySelectorAll('thead th[scope=col]')].map((th) => {
    const r = th.getBoundingClientRect();
    return {
      text: th.textContent,
      visible: r.left >= w.left - 0.5 && r.right <= w.right + 0.5 && r.left >= panel.left - 0.5
        && r.right <= panel.right + 0.5,
    };
  });
}"""

REACH = """(i) => {
  const wrap = document.querySelector('#lab-ring .ring-table-wrap');
  const th = wrap.querySelectorAll('thead th[scope=col]')[i];
  th.scrollIntoView({block: 'nearest', inline: 'nearest'});
  const r = th.getBoundingClientRect();
  const w = wrap.getBoundingClientRect();
  const panel = document.querySelector('#lab-ring .lab-body').getBoundingClientRect();
  const row = wrap.querySelector('tbody th[scope=row]').getBoundingClientRect();
  const scrolls = ['auto', 'scroll'].includes(getComputedStyle(wrap).overflowX);
  return {
    scrolls,
    visible: r.left >= w.left - 0.5 && r.right <= w.right + 0.5 && r.right <= panel.right + 0.5,
    // The row's name stays in view and does not sit on the column's header.
    rowName: row.left >= w.left - 0.5 && row.right <= r.left + 0.5,
  };
}"""

# The chart's title (the words about "of gradients") and its key ("ring", "all to one"),
# wherever and however they are drawn.
CHART_WORDS = """() => {
  const root = document.querySelector('#lab-ring');
  const own = (e) => [...e.childNodes]
    .filter((n) => n.nodeType === 3).map((n) => n.textContent).join('').trim();
  const box = (e) => {
    const r = e.getBoundingClientRect();
    return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, text: e.textContent};
  };
  const all = [...root.querySelectorAll('*')].filter((e) => own(e));
  const title = all.filter((e) => /of gradients/.test(own(e))).map(box);
  const key = all
    .filter((e) => /^(ring\\b|all to one)/i.test(own(e)) && !/of gradients/.test(own(e)))
    .map(box);
  return {title, key};
}"""


@pytest.mark.parametrize("projector", [False, True], ids=["laptop", "projector"])
@pytest.mark.parametrize("viewport", [SMALL_SCREEN, LAPTOP, FULL_HD], ids=size_name)
def test_ring_lab_table_and_chart_read_at_every_size(page_at, web, viewport, projector) -> None:
    w = page_at("?projector" if projector else "", viewport=viewport)
    page = w.page
    page.wait_for_function("window.trainingRunLabs !== undefined")
    page.keyboard.press("r")
    page.wait_for_function("window.trainingRunLabs.ring && window.trainingRunLabs.ring.loaded")
    web.settled(page)
    # Six GPUs: every column of the table shows at once.
    heads = page.evaluate(HEADERS)
    assert [h["text"] for h in heads] == list("ABCDEF")
    hidden = [h["text"] for h in heads if not h["visible"]]
    assert not hidden, f"columns {hidden} are cut off at {size_name(viewport)}"
    # The chart's title and its key do not run into each other.
    words = page.evaluate(CHART_WORDS)
    assert words["title"] and len(words["key"]) >= 2, words
    for t in words["title"]:
        for k in words["key"]:
            assert not overlap(t, k), f"chart title {t['text']!r} overlaps the key {k['text']!r}"
    page.locator("#lab-ring .ring-chart").scroll_into_view_if_needed()
    mode = "_projector" if projector else ""
    web.screenshot(page, f"layout_ring_chart_{size_name(viewport)}{mode}")

    # Sixteen GPUs: a wider table; every column can be scrolled to inside the panel.
    more = page.locator("#lab-ring button[aria-label='More GPUs']")
    for _ in range(10):
        more.click()
    page.wait_for_function("window.trainingRunLabs.ring.gpus === 16")
    web.quiet(page)
    for i in range(16):
        got = page.evaluate(REACH, i)
        assert got["visible"], f"column {i} cannot be brought into view"
        assert got["rowName"], f"the GPU names scroll away or cover column {i}"
    web.screenshot(page, f"layout_ring16_{size_name(viewport)}{mode}")
    assert w.errors == []


# ---- 5. every panel fits a 1024x768 projector ---------------------------------------------

# Every piece of text in the panel and its size as drawn: computed font size for HTML, and
# for SVG the font size times the drawing's scale on screen.
TEXT_SIZES = """(sel) => {
  const panel = document.querySelector(sel);
  const out = [];
  const walk = document.createTreeWalker(panel, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (!n.textContent.trim()) continue;
    const e = n.parentElement;
    if (!e.getClientRects().length) continue; // not displayed
    let px = parseFloat(getComputedStyle(e).fontSize);
    if (e instanceof SVGElement) {
      const m = e.getScreenCTM();
      px *= m ? Math.hypot(m.a, m.b) : 1;
    }
    out.push({text: n.textContent.trim().slice(0, 40), px});
  }
  return out;
}"""

CLOSE_REACHABLE = """(sel) => {
  const b = document.querySelector(sel + ' .lab-close');
  const r = b.getBoundingClientRect();
  const x = r.left + r.width / 2;
  const y = r.top + r.height / 2;
  const hit = document.elementFromPoint(x, y);
  return {
    inside: x >= 0 && y >= 0 && x <= innerWidth && y <= innerHeight,
    onTop: !!hit && b.contains(hit),
  };
}"""


@pytest.mark.parametrize("projector", [False, True], ids=["laptop", "projector"])
def test_every_panel_fits_a_small_projector(page_at, web, projector) -> None:
    w = page_at("?projector" if projector else "", viewport=SMALL_SCREEN)
    page = w.page
    page.wait_for_function("window.trainingRunLabs !== undefined")
    web.wait_stage(page)
    least = 16 if projector else 14
    for key, name in LABS:
        page.keyboard.press(key)
        sel = f"#lab-{name}"
        page.wait_for_selector(f"{sel}:not([hidden])")
        web.settled(page)  # content and drawings arrive, the camera lands
        web.screenshot(page, f"panel_{name}_1024x768{'_projector' if projector else ''}")
        box = rect(page, sel)
        assert inside(box, 1024, 768), f"{name}: the panel {box} leaves the window"
        close = page.evaluate(CLOSE_REACHABLE, sel)
        assert close["inside"] and close["onTop"], f"{name}: the close button is covered: {close}"
        bg = page.evaluate("(s) => getComputedStyle(document.querySelector(s)).background", sel)
        assert bg.startswith("rgb("), f"{name}: the panel lets the page show through: {bg}"
        small = [t for t in page.evaluate(TEXT_SIZES, sel) if t["px"] < least - 0.01]
        assert not small, f"{name}: text under {least} px: {small[:6]}"
        page.locator(f"{sel} .lab-close").click()
        page.wait_for_selector(f"{sel}[hidden]", state="attached")
    assert w.errors == []


# ---- 6. every size, every language ----------------------------------------------------------

ROOM_SIZES = (FULL_HD, {"width": 1366, "height": 768}, SMALL_SCREEN, {"width": 390, "height": 844})


@pytest.mark.parametrize("lang", ["en", "de", "es"])
def test_a_labs_part_is_clear_of_every_panel_at_every_size(page_at, web, lang) -> None:
    """The memory and swap-it labs change the GPU servers: with either open, at 1920x1080,
    1366x768, 1024x768 and on a 390x844 phone (the panel a sheet under the scene), in every
    language, the servers stay on screen and no panel (the lab's own, the HUD's, the top bar)
    sits over them, nor over the memory lab's "doesn't fit" label."""
    w = page_at(f"?lang={lang}", viewport=FULL_HD, reduced_motion="reduce")
    page = w.page
    misses: list[str] = []
    for key, name in (("m", "memory"), ("w", "swap")):
        if page.viewport_size != FULL_HD:
            page.set_viewport_size(FULL_HD)
        open_lab(page, web, key, name)
        if name == "swap":
            page.locator("#lab-swap .swap-card[data-placement=finetune]").click()
            page.wait_for_function("window.trainingRunLabs.placement === 'finetune'")
        else:
            page.wait_for_function("window.trainingRun.stageDebug.overflowWalls > 0")
        for size in ROOM_SIZES:
            if page.viewport_size != size:
                since = web.tr(page, "frames")
                page.set_viewport_size(size)
                web.drawn(page, since)
            settle_framing(page)
            where = f"{name} at {size_name(size)}"
            if size["width"] in (390, 1366):
                web.screenshot(page, f"layout_{name}_{lang}_{size_name(size)}")
            part = page.evaluate("window.trainingRun.partBox('gpus', 12)")
            if part is None:
                misses.append(f"{where}: the GPU servers are off screen")
                continue
            if not inside(part, size["width"], size["height"]):
                misses.append(f"{where}: the GPU servers {part} leave the window")
            misses += [f"{where}: under {p}" for p in page.evaluate(PANELS_OVER_JS, part)]
            if name == "memory":
                # The "doesn't fit" label over the walls, in the window and clear of panels.
                label = page.evaluate("window.trainingRun.wallsOnScreen")["label"]
                if label is None or not inside(label, size["width"], size["height"]):
                    misses.append(f"{where}: the walls' label {label} is not in the window")
                else:
                    misses += [
                        f"{where}: the walls' label under {p}"
                        for p in page.evaluate(PANELS_OVER_JS, label)
                    ]
        page.keyboard.press("Escape")
        page.wait_for_function("window.trainingRunLabs.safeArea === null")
    assert misses == [], misses
    assert w.errors == [], w.errors
