"""A walk through everything the page can show, in one language, that collects every text
shown without having been made in that language (`?words=check`: the leftover check's
`misses`, static/js/i18n/translate.js `watchLeftovers`).

The language test runs it and expects nothing missing. Run by hand, it lists what to add to
`scenes/locales/<lang>/`, with where each line was seen:

    .venv/bin/python tests/web/langwalk.py de            # everything
    .venv/bin/python tests/web/langwalk.py es --only story,labs

It starts its own servers on loopback ports: one whose page may change the run (the main
page, tour, labs, panels, presenting) and one public server the story is watched on as a
viewer (so the walk never resets the run into the story's larger clusters).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from quiet import INIT_JS, quiet, watch_requests

PARTS = ("page", "tour", "labs", "panels", "story", "present", "sheet")
LAB_KEYS = ("r", "m", "c", "w", "h", "q")
# The walk's quiet window: every request in flight is counted too (quiet.watch_requests), so
# a short window is enough for what an action puts on the page.
QUIET_MS = 60
MISSES_JS = "window.trainingRunI18n ? [...window.trainingRunI18n.misses.entries()] : null"
# The servers: one whose page may change the run (a small cluster), one public, watched as a
# viewer without rights, for the story. Both train a few steps and are then paused (`settle`),
# so the page is quiet between the walk's actions and draws nothing it does not need to.
RIGHTS = ("--gpus", "8", "--servers", "2", "--checkpoint-every", "5", "--speed", "4")
VIEWER_TOKEN = "langwalk-7"
# The viewer's server holds no story runs (--side-runs 0): the walk reads each chapter's words
# on the class run, with the note that says so, and trains nothing more for it.
VIEWER = ("--gpus", "1", "--servers", "1", "--public", "--token", VIEWER_TOKEN, "--speed", "max",
          "--rest-after", "0", "--side-runs", "0")  # fmt: skip


def settle(srv, token: str | None = None, steps: int = 6) -> None:
    """Let the run reach `steps` (past its first checkpoint), then pause it."""
    import time
    import urllib.request

    from servers import get_json

    deadline = time.monotonic() + 120
    while get_json(f"{srv.url}/api/run")["step"] < steps:
        assert time.monotonic() < deadline, "the run did not start"
        time.sleep(0.1)  # a poll interval of the loop above
    body = {"type": "control", "action": "pause", **({"token": token} if token else {})}
    req = urllib.request.Request(
        f"{srv.url}/api/run/control",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200


def misses_in(page, places: tuple[str, ...]) -> list[list[str]]:
    """The lines without words seen in these places of the page ("#lab-", "section.stats"):
    [text, where] each."""
    got = page.evaluate(MISSES_JS) or []
    return [m for m in got if m[1].startswith(places) or any(f" {p}" in m[1] for p in places)]


def _collect(page, into: dict[str, str]) -> None:
    got = page.evaluate(MISSES_JS)
    if got is None:
        raise AssertionError("the page did not load its words")
    for text, where in got:
        into.setdefault(text, where)


def _quiet(page) -> None:
    quiet(page, ms=QUIET_MS)


def _press(page, key: str) -> None:
    page.keyboard.press(key)
    _quiet(page)


def _click(page, selector: str, nth: int = 0) -> None:
    page.evaluate(f"document.querySelectorAll('{selector}')[{nth}].click()")
    _quiet(page)


LENS_JS = """([model, gpus]) => {
  const m = document.getElementById('lens-model');
  m.value = model;
  if (model) document.getElementById('lens-gpus').value = gpus;
  m.dispatchEvent(new Event('change'));
}"""
# The lens has answered for the model: its step, or why it cannot price it.
LENS_SHOWN_JS = """(m) => /^(priced|refused)$/.test(
  (document.getElementById('time-which').dataset.lens || '').slice(m.length + 1))
  && document.getElementById('time-which').dataset.lens.startsWith(`${m}:`)"""


def walk_main(page, into: dict[str, str], parts: tuple[str, ...]) -> None:
    """On a page with the run's controls: panels, tour, labs, presenting."""
    page.wait_for_function("window.trainingRun.step > 0", timeout=120_000)
    page.wait_for_function("window.trainingRun.stageReady", timeout=120_000)
    _quiet(page)
    # The walk reads words: the page runs everything but the WebGL draw (?draw=0).
    debug = page.evaluate("window.trainingRun.stageDebug")
    assert debug["frames"] > 0 and debug["drawCalls"] == 0, debug
    _collect(page, into)
    if "panels" in parts:
        for key in ("?", "Escape"):
            _press(page, key)
        for btn in ("#btn-howbig", "#btn-newrun"):
            if page.locator(btn).count():
                _click(page, btn)
                _collect(page, into)
                _press(page, "Escape")
        # Cards: every part's, opened from its label.
        for i in range(page.locator("#labels .label").count()):
            _click(page, "#labels .label", i)
            _collect(page, into)
        _press(page, "Escape")
        # The run starts paused: a single step, a slow step, resume and pause again (the
        # events each leave a line), then the scale field's sizes.
        for key in ("n", "o"):
            _press(page, key)
        page.keyboard.press("p")
        page.wait_for_function("window.trainingRun.runState === 'running'")
        _collect(page, into)
        page.keyboard.press("p")
        page.wait_for_function("window.trainingRun.runState === 'paused'")
        for key in ("g", "g", "Escape"):
            _press(page, key)
        _collect(page, into)
        # The lens on every model it knows, on the largest cluster offered: its sentences,
        # assumptions and sources; then one plan it refuses, and back to the live step.
        models = page.evaluate(
            "[...document.getElementById('lens-model').options].map((o) => o.value)"
        )
        gpus = page.evaluate(
            "[...document.getElementById('lens-gpus').options].map((o) => o.value)"
        )
        for model, size in [(m, gpus[-1]) for m in models if m] + [("671B", gpus[0]), ("", "")]:
            page.evaluate(LENS_JS, [model, size])
            if model:
                page.wait_for_function(LENS_SHOWN_JS, arg=model, timeout=60_000)
            _quiet(page)
            _collect(page, into)
    if "tour" in parts:
        _press(page, "t")
        n = page.evaluate("window.trainingRun.tourLength")
        # Every stop and its "more"; a stop that asks first takes two presses. The tour goes
        # round again after its last stop: the walk ends there.
        last = -1
        for _ in range(n * 2 + 2):
            _press(page, "i")
            _press(page, "PageDown")
            _collect(page, into)
            stop = page.evaluate("window.trainingRun.tourStop")
            if stop < last:
                break
            last = stop
        assert last == n - 1, f"the walk saw the tour's stops up to {last + 1} of {n}"
        _press(page, "Escape")
    if "labs" in parts:
        for key in LAB_KEYS:
            _press(page, key)
            _collect(page, into)
            _press(page, "Escape")
    if "present" in parts:
        click = "document.querySelector('.present-btn').click()"
        page.evaluate(click)
        page.wait_for_function("window.trainingRun.presenting", timeout=20_000)
        _quiet(page)
        _collect(page, into)
        page.evaluate(click)
        _quiet(page)
    if "page" in parts:
        failures = page.evaluate("window.trainingRun.failures")
        page.keyboard.press("k")  # a GPU fails and the run rolls back
        page.wait_for_function(f"window.trainingRun.failures > {failures}", timeout=60_000)
        _quiet(page)
        _collect(page, into)


def walk_story(page, into: dict[str, str]) -> None:
    page.wait_for_function(
        "window.trainingRun && window.trainingRunI18n && window.trainingRun.story.chapter === 1",
        timeout=60_000,
    )
    n = page.evaluate("window.trainingRun.story.chapters")
    for i in range(1, n + 1):
        page.wait_for_function(f"window.trainingRun.story.chapter === {i}")
        _quiet(page)
        _collect(page, into)
        _press(page, " ")  # "do it": a viewer is told it is the presenter's
        _collect(page, into)
        page.keyboard.press("PageDown")


def walk(
    browser, rights_url: str, viewer_url: str | None, lang: str, parts: tuple[str, ...] = PARTS
) -> dict[str, str]:
    """Every miss seen, text -> where on the page."""
    into: dict[str, str] = {}
    view = {"width": 1280, "height": 800}  # where every toolbar button has its place
    # The story's page starts loading first, beside the main page's walk. With reduced motion
    # a chapter shows at once what it ends on (the climb to a million, its last line).
    story = None
    if "story" in parts and viewer_url:
        story = browser.new_context(viewport=view, reduced_motion="reduce")
        url = f"{viewer_url}/?lang={lang}&words=check&draw=0&story=one-gpu&chapter=1"
        story_page = _open(story, url, wait=False)
    if {"page", "tour", "labs", "panels", "present"} & set(parts):
        ctx = browser.new_context(viewport=view)
        walk_main(_open(ctx, f"{rights_url}/?lang={lang}&words=check&draw=0"), into, parts)
        ctx.close()
    if story is not None:
        walk_story(story_page, into)
        story.close()
    if "sheet" in parts:
        for copy in ("/sheet", "/sheet/teacher"):
            ctx = browser.new_context(viewport=view)
            page = ctx.new_page()
            page.goto(f"{rights_url}{copy}?lang={lang}&words=check")
            page.wait_for_function("document.body.dataset.ready === 'true'", timeout=30_000)
            _collect(page, into)
            ctx.close()
    return into


def _open(ctx, url: str, wait: bool = True):
    page = ctx.new_page()
    page.add_init_script(INIT_JS)
    watch_requests(page)
    page.goto(url, wait_until="load" if wait else "commit")
    if wait:
        page.wait_for_function("window.trainingRun && window.trainingRunI18n", timeout=60_000)
    return page


# ---- by hand --------------------------------------------------------------------------------


def servers(tmp: Path):
    """The two servers the walk needs, as the browser tests start them (tests/web/conftest.py,
    this file's folder when it runs as a script)."""
    from servers import ServerProcess

    rights = ServerProcess(tmp / "rights", *RIGHTS).start(fresh=True, timeout=120)
    viewer = ServerProcess(tmp / "viewer", *VIEWER).start(fresh=True, timeout=120)
    settle(rights)
    settle(viewer, VIEWER_TOKEN)
    return rights, viewer


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lang", choices=["de", "es"])
    ap.add_argument("--only", default=",".join(PARTS), help=f"some of {','.join(PARTS)}")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    parts = tuple(p for p in args.only.split(",") if p in PARTS)
    sys.path.append(str(Path(__file__).resolve().parents[1]))  # tests/, for servers.py
    from conftest import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    exe = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    with tempfile.TemporaryDirectory() as d:
        rights, viewer = servers(Path(d))
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
                misses = walk(browser, rights.url, viewer.url, args.lang, parts)
                browser.close()
        finally:
            rights.stop()
            viewer.stop()
    if args.json:
        print(json.dumps(misses, ensure_ascii=False, indent=1))
        return 0
    # Lines that differ only in their numbers are one line with a {n} in the locale file.
    shapes: dict[str, tuple[str, str, int]] = {}
    for text, where in misses.items():
        shape = re.sub(r"\d[\d,.]*", "#", text)
        first = shapes.get(shape)
        shapes[shape] = (first[0], first[1], first[2] + 1) if first else (text, where, 1)
    for text, where, n in sorted(shapes.values(), key=lambda t: (t[1], t[0])):
        count = f"x{n:<4d}" if n > 1 else "     "
        print(f"{where:36.36}  {count} {text}")
    print(f"{len(misses)} lines ({len(shapes)} shapes) without {args.lang} words", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
