"""Fixtures for the real-browser tests: headless Chromium driven by Playwright, and real
`trainingrun serve` processes on free loopback ports.

The browser is the Debian `chromium` at /usr/bin/chromium (Playwright's own download is not
used). Without a browser or Playwright these tests skip, except with CI=true, where a missing
browser is a failure: CI must not pass by testing nothing.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from quiet import INIT_JS, quiet
from servers import ServerProcess, get_json

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
# Pages open small unless a test is about layout, legibility or screenshots: SwiftShader draws
# every pixel on the CPU, and a 960x540 frame costs a quarter of a 1920x1080 one.
VIEWPORT = {"width": 960, "height": 540}
FULL_HD = {"width": 1920, "height": 1080}
# WebGL on the CPU: headless Chromium has no GPU here, SwiftShader draws instead. The page's
# layers are put together in software, not through SwiftShader's GL as well: a sixth less
# of the CPU the browser's GPU process takes (measured on the plans and presenter tests).
CHROMIUM_ARGS = [
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--disable-gpu-compositing",
    "--mute-audio",
]


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests cannot run: {reason}")
    pytest.skip(reason)


# A small, quick cluster: 8 GPUs on 2 servers, a checkpoint every 5 steps so a failure
# visibly rolls back, and a pace the tests can watch.
SMALL = ("--gpus", "8", "--servers", "2", "--checkpoint-every", "5", "--speed", "4")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless Chromium per test module. Not one per session: while Playwright's sync API
    is open it keeps an event loop running in the process, and under pytest-xdist the same
    worker goes on to tests that start a loop of their own (asyncio.run), which would fail."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed")
    exe = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if not exe:
        _missing(f"no Chromium at {CHROMIUM} or on PATH")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def control(srv: ServerProcess, **body: object) -> dict:
    """A run control through REST (pause, resume, step, ...); fails the test on a refusal."""
    r = httpx.post(f"{srv.url}/api/run/control", json={"type": "control", **body}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def wait_steps(srv: ServerProcess, steps: int, timeout: float = 60.0) -> int:
    """Poll /api/run until the run has made `steps` steps; returns the step reached."""
    deadline = time.monotonic() + timeout
    while (step := get_json(f"{srv.url}/api/run")["step"]) < steps:
        assert time.monotonic() < deadline, f"run stuck at step {step} of {steps}"
        time.sleep(0.1)  # a poll interval of the loop above, not a wait for state
    return step


def _serve(tmp_path_factory: pytest.TempPathFactory, *, paused: bool) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("run") / "run", *SMALL)
    srv.start(fresh=True)
    try:
        if paused:
            wait_steps(srv, 6)
            control(srv, action="pause")
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """One real server per test module (starting one costs a few seconds of CPU). It trains
    past its first checkpoint and is then paused: a page gets its hello, its scene and the
    last step, nothing moves behind the test, and the page stops drawing. A module about
    steps arriving live says `TRAINS = True` and gets a server that goes on training at
    SMALL's pace."""
    yield from _serve(tmp_path_factory, paused=not getattr(request.module, "TRAINS", False))


class PageWatch:
    """A page plus everything worth failing a test over: console errors, page errors,
    failed requests and requests that leave the app's origin."""

    def __init__(self, page: object, origin: str) -> None:
        self.page = page
        self.origin = origin
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}"))

    def foreign_requests(self) -> list[str]:
        ok = (self.origin, self.origin.replace("http://", "ws://"), "data:")
        return [u for u in self.requests if not u.startswith(ok)]


def open_page(
    browser: object, base_url: str, query: str = "", *, clock: bool = False, **context: object
) -> PageWatch:
    """A new context and page on the app, once its socket is open. With `clock`, the page's
    timers run on Playwright's clock (installed before the page loads): a test moves time on
    with `page.clock.fast_forward(ms)` instead of waiting it out."""
    ctx = browser.new_context(**{"viewport": VIEWPORT, **context})
    if clock:
        ctx.clock.install()
    ctx.add_init_script(INIT_JS)  # for quiet(): fetches in flight, the last change
    page = ctx.new_page()
    watch = PageWatch(page, base_url)
    page.goto(f"{base_url}/{query}")
    page.wait_for_function("window.trainingRun && window.trainingRun.connection === 'open'")
    return watch


@pytest.fixture
def page_at(
    request: pytest.FixtureRequest, browser: object, server: ServerProcess
) -> Iterator[object]:
    """Open the app on this module's server; pages and their contexts are closed after. The
    page is small (VIEWPORT) unless the test asks for a size, or its module is about layout
    and says so with a `VIEWPORT` of its own."""
    opened: list[PageWatch] = []
    size = getattr(request.module, "VIEWPORT", VIEWPORT)

    def _open(query: str = "", **context: object) -> PageWatch:
        w = open_page(browser, server.url, query, **{"viewport": size, **context})
        opened.append(w)
        return w

    yield _open
    for w in opened:
        w.page.context.close()


def wait_stage(page: object, timeout: float = 30_000) -> None:
    """Wait until the 3D stage is up and has drawn, and the seven labels are placed."""
    page.wait_for_function(
        "window.trainingRun.stageReady && window.trainingRun.frames > 0"
        " && window.trainingRun.labelCount === 7",
        timeout=timeout,
    )


def landed(page: object, timeout: float = 20_000) -> None:
    """Wait until no camera flight is under way: the frame at its goal has been drawn. Call it
    after whatever started the flight (a key, a click) has returned."""
    page.wait_for_function("!window.trainingRun.cameraFlying", timeout=timeout)


def drawn(page: object, since: int, timeout: float = 20_000) -> None:
    """Wait until the stage has drawn a frame after frame `since` (read before the change it
    must show: a resize, a new size of wall). A page that has nothing moving stops drawing,
    so the count is taken before the change, not after."""
    page.wait_for_function(f"window.trainingRun.frames > {since}", timeout=timeout)


def settled(page: object, timeout: float = 30_000) -> None:
    """Wait until what the last action started has arrived and the camera has landed: the
    page is quiet (no fetch in flight, no change to its text for a moment) and no flight is
    under way. On a paused run; a live one changes its numbers at every step."""
    quiet(page, timeout)
    landed(page, timeout)


def tr(page: object, name: str) -> object:
    return page.evaluate(f"window.trainingRun.{name}")


def screenshot(page: object, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


@pytest.fixture(scope="session")
def web() -> SimpleNamespace:
    """The helpers above, for test modules (conftest modules are not imported directly)."""
    return SimpleNamespace(
        tr=tr,
        wait_stage=wait_stage,
        landed=landed,
        quiet=quiet,
        drawn=drawn,
        settled=settled,
        screenshot=screenshot,
        open_page=open_page,
        ServerProcess=ServerProcess,
        SMALL=SMALL,
        FULL_HD=FULL_HD,
        control=control,
        wait_steps=wait_steps,
        get_json=get_json,
    )
