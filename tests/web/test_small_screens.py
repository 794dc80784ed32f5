"""Small screens in a real browser: at 1024x768 and 1280x720 every toolbar control can be
reached (directly or from the "more" menu) inside the window and nothing covers the title;
on a phone (390x844) the scene is drawn in a band of its own, the step and loss show, labels
start off, and the menu opens with every control inside the screen."""

from __future__ import annotations

import struct
import zlib

import pytest

# Steps arriving live are what these tests watch: the module's server keeps training.
TRAINS = True

# Every button of the toolbar, the labs' included (they arrive a moment after the page).
# (a button marked hidden is not offered at all: the join code's while nobody presents)
BUTTONS = """() => [...document.querySelectorAll('#toolbar button')]
  .filter((b) => !b.hidden).map((b) => {
  const r = b.getBoundingClientRect();
  const s = getComputedStyle(b);
  const seen = b.checkVisibility({ checkVisibilityCSS: true, visibilityProperty: true });
  const shown = r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && seen;
  const text = b.textContent.trim();
  return { id: b.id, text, shown, x: r.left, y: r.top, r: r.right, b: r.bottom };
})"""

# The page's own controls (outside the menu, and not the labels, off on a phone) smaller than
# a finger: their names and sizes.
TARGETS = """() => [...document.querySelectorAll('button, select, input, a[href]')]
  .filter((e) => !e.closest('#toolbar, #labels, [hidden]'))
  .filter((e) => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0
      && e.checkVisibility({ checkVisibilityCSS: true, visibilityProperty: true });
  })
  .map((e) => {
    const r = e.getBoundingClientRect();
    const name = e.id || e.className || e.textContent.trim();
    return [name, Math.round(r.width), Math.round(r.height)];
  })
  .filter(([, w, h]) => w < 44 || h < 44)"""

RECT = """(sel) => {
  const e = document.querySelector(sel);
  if (!e) return null;
  const r = e.getBoundingClientRect();
  const seen = e.checkVisibility({ checkVisibilityCSS: true, visibilityProperty: true });
  const shown = r.width > 0 && r.height > 0 && seen;
  return { x: r.left, y: r.top, r: r.right, b: r.bottom, shown };
}"""


def inside(box: dict, w: int, h: int) -> bool:
    return box["x"] >= -0.5 and box["y"] >= -0.5 and box["r"] <= w + 0.5 and box["b"] <= h + 0.5


def overlap(a: dict, b: dict) -> bool:
    apart_x = a["r"] - 1 <= b["x"] or b["r"] - 1 <= a["x"]
    apart_y = a["b"] - 1 <= b["y"] or b["b"] - 1 <= a["y"]
    return not (apart_x or apart_y)


def wait_labs(page) -> None:
    page.wait_for_function("document.querySelectorAll('#toolbar .labs button').length >= 3")


def reachable_buttons(page, w: int, h: int) -> list[dict]:
    """Every toolbar button, each seen where a person could click it: in the bar, or in the
    menu once it is opened. Fails on any that is in neither, or outside the window."""
    buttons = page.evaluate(BUTTONS)
    direct = [b for b in buttons if b["shown"]]
    hidden = [b for b in buttons if not b["shown"]]
    for b in direct:
        assert inside(b, w, h), f"{w}x{h}: {b['text']!r} is outside the window: {b}"
    if hidden:
        menu = page.locator("#btn-menu")
        assert menu.is_visible(), f"{w}x{h}: hidden controls and no menu: {hidden}"
        menu.click()
        assert page.evaluate("window.trainingRun.menuOpen") is True
        again = {(b["id"], b["text"]): b for b in page.evaluate(BUTTONS)}
        for b in hidden:
            now = again[(b["id"], b["text"])]
            assert now["shown"], f"{w}x{h}: {b['text']!r} is not in the menu either"
            assert inside(now, w, h), f"{w}x{h}: {b['text']!r} in the menu is off screen: {now}"
    return buttons


@pytest.mark.parametrize("size", [(1024, 768), (1280, 720)])
def test_every_toolbar_control_is_reachable_and_the_title_is_clear(page_at, web, size) -> None:
    w, h = size
    watch = page_at(viewport={"width": w, "height": h})
    page = watch.page
    web.wait_stage(page)
    wait_labs(page)
    page.wait_for_function("window.trainingRun.step > 0")

    title = page.evaluate(RECT, ".brand h1")
    assert title and title["shown"] and inside(title, w, h)
    # Nothing in the header, and no panel, lies on the title or on the live numbers.
    stats = page.evaluate(RECT, "#hud-step")
    loss = page.evaluate(RECT, "#hud-loss")
    for name in ("#hud-state", "#hud-step", "#hud-loss", "#hud-tps", "#hud-epoch", "#hud-restarts"):
        box = page.evaluate(RECT, name)
        assert box["shown"] and inside(box, w, h), name
    for b in page.evaluate(BUTTONS):
        if b["shown"]:
            for other in (title, stats, loss):
                assert not overlap(b, other), f"{w}x{h}: {b['text']!r} covers the title or stats"
    for panel in (".time-panel", ".chart-panel", ".probe-panel"):
        box = page.evaluate(RECT, panel)
        if box and box["shown"]:
            for other in (title, stats, loss):
                assert not overlap(box, other), f"{w}x{h}: {panel} covers the title or stats"
    web.screenshot(page, f"small_{w}x{h}")

    reachable_buttons(page, w, h)
    web.screenshot(page, f"small_{w}x{h}_menu")
    # Choosing from the menu closes it; Esc closes it too.
    page.keyboard.press("Escape")
    assert page.evaluate("window.trainingRun.menuOpen") is False
    assert watch.errors == []


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of a PNG as Chromium writes it: 8 bits per
    channel, not interlaced. Enough to ask "is anything drawn here?" without an image library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    h = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8
            channels = {2: 3, 6: 4}[colour]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = w * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line[: w * channels : 1]))
        prev = line
    return w, h, [bytes(r) for r in rows]


def bright_share(png: bytes) -> float:
    """The share of pixels clearly brighter than the dark background: the drawn scene."""
    w, h, rows = _png_pixels(png)
    channels = len(rows[0]) // w
    lit = 0
    for row in rows:
        for x in range(0, w * channels, channels):
            if row[x] + row[x + 1] + row[x + 2] > 180:
                lit += 1
    return lit / (w * h)


def test_phone_shows_the_scene_the_numbers_and_a_menu(page_at, web) -> None:
    w, h = 390, 844
    watch = page_at(viewport={"width": w, "height": h}, is_mobile=True, has_touch=True)
    page = watch.page
    page.wait_for_function("window.trainingRun.stageReady && window.trainingRun.frames > 0")
    wait_labs(page)
    page.wait_for_function("window.trainingRun.step > 0")

    # Labels pile up on a narrow screen: they start off there (L or the menu brings them back).
    assert page.evaluate("window.trainingRun.labels") is False
    assert page.locator("#labels").is_hidden()

    canvas = page.evaluate(RECT, "#stage")
    assert canvas["shown"] and canvas["r"] - canvas["x"] >= w - 1
    # The scene takes most of the screen (60% at least), standing tall to fill it.
    assert 0.6 * h <= canvas["b"] - canvas["y"] <= h, canvas
    assert page.evaluate("window.trainingRun.portrait") is True
    # The middle of the scene is not covered by a panel.
    mid = page.evaluate(
        """() => { const r = document.getElementById('stage').getBoundingClientRect();
        const e = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return e ? e.id || e.className : null; }"""
    )
    assert mid == "stage", mid
    web.landed(page)
    clip = {
        "x": canvas["x"],
        "y": max(0, canvas["y"]),
        "width": canvas["r"] - canvas["x"],
        "height": min(h, canvas["b"]) - max(0, canvas["y"]),
    }
    share = bright_share(page.screenshot(clip=clip))
    assert share > 0.01, f"the scene is not visibly drawn on a phone ({share:.4f} lit)"

    for name in ("#hud-step", "#hud-loss", ".brand h1"):
        box = page.evaluate(RECT, name)
        assert box["shown"] and inside(box, w, h), name
    assert page.locator("#hud-loss").inner_text() != "–"
    web.screenshot(page, "small_phone")
    # Every control on the page itself is finger-sized (44 px), and none floats over another
    # part of the page: Present and Copy link wait in the menu.
    tiny = page.evaluate(TARGETS)
    assert tiny == [], tiny
    assert not page.locator(".present-btn").is_visible()

    buttons = reachable_buttons(page, w, h)
    texts = [b["text"] for b in buttons]
    for needed in ("pause", "fail a GPU", "tour", "projector", "labels"):
        assert any(needed in t for t in texts), needed
    # A finger-sized target for each control in the menu.
    small = [
        b["text"]
        for b in page.evaluate(BUTTONS)
        if b["shown"] and (b["b"] - b["y"] < 32 or b["r"] - b["x"] < 32)
    ]
    assert not small, small
    web.screenshot(page, "small_phone_menu")
    page.locator("#btn-labels").click()
    assert page.evaluate("window.trainingRun.labels") is True
    assert page.evaluate("window.trainingRun.menuOpen") is False
    assert watch.errors == []


# Every panel, box and card shown on the page now, by its id or class.
SHOWN_PANELS = """() => [
  ...document.querySelectorAll('.panel, .field-panel, .tour-box, .story-box')]
  .filter((e) => e.checkVisibility({ checkVisibilityCSS: true, visibilityProperty: true }))
  .map((e) => { const r = e.getBoundingClientRect();
    return { name: e.id || e.className, x: r.left, y: r.top, r: r.right, b: r.bottom }; })
  .filter((b) => b.r > b.x && b.b > b.y)"""


def test_on_a_phone_the_tour_reads_under_the_scene_and_steps_by_touch(page_at, web) -> None:
    """The tour's box takes the room under the scene, which still has half the screen and
    more; nothing else is drawn over the box; a tap on "next" goes to the next stop."""
    w, h = 390, 844
    watch = page_at("?tour=1", viewport={"width": w, "height": h}, is_mobile=True, has_touch=True)
    page = watch.page
    page.wait_for_function("window.trainingRun.stageReady && window.trainingRun.tourStop === 0")
    canvas = page.evaluate(RECT, "#stage")
    assert canvas["b"] - canvas["y"] >= 0.5 * h, canvas
    box = page.evaluate(RECT, "#tour-box")
    assert box["shown"] and inside(box, w, h) and box["y"] >= canvas["b"] - 1, box
    for panel in page.evaluate(SHOWN_PANELS):
        if panel["name"] != "tour-box":
            assert not overlap(panel, box), f"{panel['name']} is drawn over the tour: {panel}"
    web.screenshot(page, "small_phone_tour")
    page.locator("#tour-next").tap()
    page.wait_for_function("window.trainingRun.tourStop === 1")
    assert watch.errors == []


def test_on_a_phone_a_lab_and_one_gpu_open_by_touch(page_at, web) -> None:
    """From the menu, a tap opens a lab (its panel whole on the screen), and a tap on One GPU
    starts the story at its first chapter."""
    w, h = 390, 844
    watch = page_at(viewport={"width": w, "height": h}, is_mobile=True, has_touch=True)
    page = watch.page
    page.wait_for_function("window.trainingRun.stageReady")
    wait_labs(page)
    page.locator("#btn-menu").tap()
    page.wait_for_function("window.trainingRun.menuOpen === true")
    lab = page.locator("#toolbar .labs button").first
    lab.tap()
    page.wait_for_function("window.trainingRunLabs.open !== null")
    panel = page.evaluate(
        """() => { const p = [...document.querySelectorAll('.lab-panel')].find((e) => !e.hidden);
        const r = p.getBoundingClientRect();
        return { x: r.left, y: r.top, r: r.right, b: r.bottom }; }"""
    )
    assert panel["r"] - panel["x"] > 0.8 * w and panel["x"] >= -0.5 and panel["r"] <= w + 0.5, panel
    web.screenshot(page, "small_phone_lab")
    page.keyboard.press("Escape")
    page.wait_for_function("window.trainingRunLabs.open === null")
    if not page.evaluate("window.trainingRun.menuOpen"):
        page.locator("#btn-menu").tap()
    page.locator("#story-open").tap()
    page.wait_for_function("window.trainingRun.story.chapter === 1")
    assert watch.errors == []


def _touch(cdp, kind: str, points: list[tuple[float, float]]) -> None:
    cdp.send(
        "Input.dispatchTouchEvent",
        {
            "type": kind,
            "touchPoints": [{"x": x, "y": y, "id": i} for i, (x, y) in enumerate(points)],
        },
    )


def _gesture(cdp, start: list[tuple[float, float]], end: list[tuple[float, float]]) -> None:
    """Fingers down at `start`, moved in ten even steps to `end`, lifted."""
    _touch(cdp, "touchStart", start)
    for k in range(1, 11):
        f = k / 10
        pts = [
            (a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f)
            for a, b in zip(start, end, strict=True)
        ]
        _touch(cdp, "touchMove", pts)
    _touch(cdp, "touchEnd", [])


def test_on_a_phone_a_drag_turns_the_scene_and_a_pinch_zooms(page_at, web) -> None:
    """Real touch events (Chromium's own, as a phone sends them): one finger dragged across
    the scene turns the camera round what it looks at; two fingers spread apart bring it
    closer, pinched together take it back."""
    w, h = 390, 844
    watch = page_at(viewport={"width": w, "height": h}, is_mobile=True, has_touch=True)
    page = watch.page
    page.wait_for_function("window.trainingRun.stageReady && window.trainingRun.frames > 0")
    web.landed(page)
    canvas = page.evaluate(RECT, "#stage")
    cx, cy = (canvas["x"] + canvas["r"]) / 2, (canvas["y"] + canvas["b"]) / 2
    cdp = page.context.new_cdp_session(page)
    dist = "window.trainingRun.camera.distance"
    before = page.evaluate(dist)

    # Two fingers spread apart: closer.
    _gesture(cdp, [(cx - 30, cy), (cx + 30, cy)], [(cx - 150, cy), (cx + 150, cy)])
    page.wait_for_function(f"{dist} < {before * 0.8}")
    closer = page.evaluate(dist)
    pose = page.evaluate("window.trainingRun.cameraPose")
    # One finger across: the camera turns round the same point, at the same distance.
    _gesture(cdp, [(cx - 100, cy)], [(cx + 60, cy)])
    was = ",".join(map(str, pose["position"]))
    page.wait_for_function(f"window.trainingRun.cameraPose.position.join() !== {was!r}")
    turned = page.evaluate("window.trainingRun.cameraPose")
    assert turned["target"] == pytest.approx(pose["target"], abs=1e-6)
    assert page.evaluate(dist) == pytest.approx(closer, rel=0.02)
    # Pinched together: further again.
    _gesture(cdp, [(cx - 150, cy), (cx + 150, cy)], [(cx - 30, cy), (cx + 30, cy)])
    page.wait_for_function(f"{dist} > {closer * 1.25}")
    web.screenshot(page, "small_phone_touched")
    assert watch.errors == [], watch.errors


SMALL_PRINT = [
    "#time-assumption",
    "#time-total",
    "#chart-note",
    "#probe-step",
    ".stat .k",
    ".timelegend li:not([hidden])",
    ".weights-head",
    ".probe-bars .pct",
    "#legend",
    ".colour-key",
]


def test_projector_small_print_reads_from_the_back(page_at, web) -> None:
    w, h = 1920, 1080
    watch = page_at("?projector", viewport={"width": w, "height": h})
    page = watch.page
    web.wait_stage(page)
    wait_labs(page)
    page.wait_for_function("window.trainingRun.step > 0")
    page.wait_for_function("document.querySelectorAll('#probe-bars li').length > 0")
    page.wait_for_function("document.getElementById('time-assumption').textContent !== ''")
    # In projector mode the step panel is a drawer (folded off the scene's labels): its small
    # print is read with the drawer open, as a teacher opens it to talk about the step.
    assert page.evaluate("document.querySelector('.time-panel').classList.contains('folded')")
    page.locator(".time-panel .drawer-toggle").click()
    for sel in SMALL_PRINT:
        sizes = page.evaluate(
            """(sel) => [...document.querySelectorAll(sel)]
              .filter((e) => e.checkVisibility())
              .map((e) => parseFloat(getComputedStyle(e).fontSize))""",
            sel,
        )
        assert sizes, f"{sel} is not on the page"
        assert min(sizes) >= 20, f"{sel}: {min(sizes)} px is too small for the back of a room"

    # The panels grew downwards, not into the scene's middle, and cover nothing of the bar.
    band = {"x": 0.3 * w, "r": 0.7 * w, "y": 0, "b": h}
    header = [page.evaluate(RECT, s) for s in (".brand h1", "#hud-step", "#hud-loss", "#hud-tps")]
    header += [b for b in page.evaluate(BUTTONS) if b["shown"]]
    panels = {s: page.evaluate(RECT, s) for s in (".time-panel", ".chart-panel", ".probe-panel")}
    for name, box in panels.items():
        assert box["shown"] and inside(box, w, h), name
        assert not overlap(box, band), f"{name} reaches into the middle of the scene: {box}"
        for other in header:
            assert not overlap(box, other), f"{name} covers {other}"
    assert not overlap(panels[".time-panel"], panels[".chart-panel"])
    key = page.evaluate(RECT, ".colour-key")
    for other in header:
        assert not overlap(key, other), f"the colour key covers {other}"
    web.landed(page)
    web.screenshot(page, "projector_small_print")
    assert watch.errors == []
