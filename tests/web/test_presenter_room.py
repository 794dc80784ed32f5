"""One presenter page and three followers in a real browser, on a public server: the presenter
(with the token) starts the tour, advances twice, opens the memory lab and types 405B; within
a second every follower shows the same stop, view and lab inputs. A follower breaks away and
rejoins, a late page lands on the current stop, and a follower's control attempt is refused
with a clear error."""

from __future__ import annotations

import pytest

TOKEN = "presenter-t0ken-14"
CHROMIUM = "/usr/bin/chromium"
VIEW = {"width": 800, "height": 600}
STATE = (
    "JSON.stringify({stop: trainingRun.tourStop, active: trainingRun.tourActive, view:"
    " trainingRun.view, following: trainingRun.following, presenting: trainingRun.presenting,"
    " followers: trainingRun.followers, lab: window.trainingRunLabs && trainingRunLabs.open,"
    " focus: document.activeElement && document.activeElement.id,"
    " params: window.trainingRunLabs && trainingRunLabs.memory && trainingRunLabs.memory.params})"
)
READY = "window.trainingRun && window.trainingRun.runId && window.trainingRun.tourLength > 0"


def wait(page, expr: str, timeout: float = 30_000) -> None:
    """Wait for `expr` on a busy machine; say where the page was if it never comes true."""
    try:
        page.wait_for_function(expr, timeout=timeout)
    except Exception as exc:
        errors = getattr(page, "errors_seen", [])
        raise AssertionError(f"{expr} never came true: {page.evaluate(STATE)} {errors}") from exc


@pytest.fixture
def lesson_server(tmp_path, web):
    """A loopback server at lesson pace: any page may present on it."""
    srv = web.ServerProcess(tmp_path / "run", *web.SMALL, "--speed", "lesson")
    srv.start(fresh=True)
    try:
        yield srv
    finally:
        srv.stop()


def lead_and_follower(browser, web, url: str):
    """A presenting page and one page following it, both with the stage up."""
    lead = web.open_page(browser, url, "?present", viewport=VIEW).page
    follow = web.open_page(browser, url, "", viewport=VIEW).page
    for page in (lead, follow):
        wait(page, READY + " && window.trainingRun.stageReady")
    wait(lead, "window.trainingRun.presenting && window.trainingRun.followers === 1")
    wait(follow, "window.trainingRun.following")
    return lead, follow


def _same_as(stop: int, view: int, params: str) -> str:
    return (
        f"window.trainingRun.following && window.trainingRun.tourActive"
        f" && window.trainingRun.tourStop === {stop} && window.trainingRun.view === {view}"
        f" && window.trainingRunLabs && window.trainingRunLabs.open === 'memory'"
        f" && window.trainingRunLabs.memory?.params === '{params}'"
        f" && document.getElementById('mem-params').value === '{params}'"
    )


def test_the_room_follows_the_presenter(browser, tmp_path, web) -> None:
    srv = web.ServerProcess(
        tmp_path / "run", *web.SMALL, "--speed", "lesson", "--public", "--token", TOKEN
    )
    srv.start(fresh=True)
    flat = None
    try:
        lead = web.open_page(browser, srv.url, f"?token={TOKEN}&present", viewport=VIEW)
        p = lead.page
        wait(p, READY)
        # The presenter draws the 3D scene; the followers (and the late page) are laptops
        # without WebGL, which follow all the same (and keep this test light on a busy machine).
        flat = browser.browser_type.launch(
            executable_path=CHROMIUM, headless=True, args=["--disable-3d-apis", "--mute-audio"]
        )
        followers = [web.open_page(flat, srv.url, "", viewport=VIEW) for _ in range(3)]
        for f in followers:
            f.page.errors_seen = f.errors
            wait(f.page, READY)
        wait(p, "window.trainingRun.presenting")
        wait(p, "window.trainingRun.followers === 3")
        assert p.locator(".present-count").inner_text() == "3 following"
        assert p.locator(".join-qr").is_visible() and p.locator(".join-url").inner_text()
        for f in followers:
            wait(f.page, "window.trainingRun.following")
            assert f.page.locator("#follow-badge").is_visible()
            assert "Following the presenter" in f.page.locator("#follow-badge").inner_text()

        # The presenter starts the tour, advances twice, opens the memory lab, types 405B.
        p.keyboard.press("t")
        wait(p, "window.trainingRun.tourActive && window.trainingRun.tourStop === 0")
        for n in (1, 2):
            p.keyboard.press("PageDown")
            wait(p, f"window.trainingRun.tourStop === {n}")
        p.keyboard.press("m")
        p.wait_for_selector("#mem-params", state="visible")
        p.fill("#mem-params", "405B")
        # Enter in the field picks the size; Enter anywhere else would move the tour on, so
        # the field must hold the focus when it is pressed.
        p.focus("#mem-params")
        wait(p, "document.activeElement && document.activeElement.id === 'mem-params'")
        p.keyboard.press("Enter")
        stop, view = web.tr(p, "tourStop"), web.tr(p, "view")
        assert stop == 2 and web.tr(p, "tourActive")
        for f in followers:
            f.page.wait_for_function(_same_as(stop, view, "405B"), timeout=15_000)

        def first(entries: list[dict]) -> int | None:
            for a in entries:
                parts = a["parts"]
                if (
                    parts["tour"]["stop"] == stop
                    and parts["view"]["view"] == view
                    and parts["lab"].get("params") == "405B"
                ):
                    return a["at"]
            return None

        # By the pages' own clocks (one machine, one clock): the presenter's page sent this
        # view at `moved`; every follower showed it within a second of that.
        moved = first(p.evaluate("window.trainingRunPresenter.sent"))
        assert moved is not None
        for f in followers:
            shown = first(f.page.evaluate("window.trainingRunPresenter.applied"))
            assert shown is not None and shown - moved < 1000, (shown, moved)

        # One follower breaks away (any key) and explores; the others keep following.
        away = followers[0].page
        away.keyboard.press("ArrowLeft")
        wait(away, "!window.trainingRun.following")
        assert "Exploring on your own" in away.locator("#follow-badge").inner_text()
        wait(p, "window.trainingRun.followers === 2")
        p.locator("#lab-memory .lab-close").click()  # the lab closes ...
        wait(p, "!window.trainingRunLabs.open")
        p.keyboard.press("PageDown")  # ... then the next stop
        wait(p, f"window.trainingRun.tourStop === {stop + 1}")
        for f in followers[1:]:
            wait(f.page, f"window.trainingRun.tourStop === {stop + 1}")
        assert web.tr(away, "tourStop") == stop  # it stayed where it was
        # ... and rejoins with one click.
        away.locator("#follow-badge .rejoin").click()
        wait(away, f"window.trainingRun.following && window.trainingRun.tourStop === {stop + 1}")
        wait(p, "window.trainingRun.followers === 3")

        # A page that joins late lands on the current stop.
        late = web.open_page(flat, srv.url, "", viewport=VIEW)
        landed = f"window.trainingRun.following && window.trainingRun.tourStop === {stop + 1}"
        wait(late.page, landed)
        wait(p, "window.trainingRun.followers === 4")

        # A follower's control attempt (P: pause) is refused with a clear error.
        f = followers[1].page
        f.keyboard.press("p")
        toast = f.locator(".toast", has_text="Not done")
        toast.first.wait_for(timeout=5_000)
        assert "presenter token" in toast.first.inner_text()
        assert web.tr(p, "runState") != "paused"

        for w in [lead, late, *followers]:
            assert w.errors == [], w.errors
            w.page.context.close()
    finally:
        if flat is not None:
            flat.close()
        srv.stop()


CONTRAST = """
(sel) => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const over = (top, under) => {
    const a = top.length > 3 ? top[3] : 1;
    return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a));
  };
  const node = document.querySelector(sel);
  let bg = rgb(getComputedStyle(document.body).backgroundColor);
  if (bg.length > 3 && bg[3] === 0) bg = [0, 0, 0];
  const chain = [];
  for (let n = node; n && n !== document.body; n = n.parentElement) chain.unshift(n);
  for (const n of chain) {
    const c = rgb(getComputedStyle(n).backgroundColor);
    if (c.length && !(c.length > 3 && c[3] === 0)) bg = over(c, bg);
  }
  const fg = over(rgb(getComputedStyle(node).color), bg);
  const [hi, lo] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}
"""


def test_badge_and_presenter_bar_read_well_in_both_themes_and_by_screen_reader(
    browser, server, web
) -> None:
    flat = browser.browser_type.launch(
        executable_path=CHROMIUM, headless=True, args=["--disable-3d-apis", "--mute-audio"]
    )
    try:
        lead = web.open_page(flat, server.url, "?present", viewport=VIEW).page
        wait(lead, "window.trainingRun.presenting")
        fol = web.open_page(flat, server.url, "", viewport=VIEW).page
        wait(fol, "window.trainingRun.following")
        wait(lead, "window.trainingRun.followers >= 1")
        for theme in ("default", "projector"):
            if theme == "projector":
                # (at 800 px the toolbar folds it into its menu: press it where it is)
                lead.evaluate(
                    "[...document.querySelectorAll('#toolbar button')]"
                    ".find((b) => b.textContent.trim() === 'projector').click()"
                )
                wait(fol, "window.trainingRun.projector === true")  # it follows the theme too
            for page, sel in ((fol, ".follow-text"), (lead, ".present-count"), (lead, ".join-url")):
                ratio = page.evaluate(CONTRAST, sel)
                assert ratio >= 4.5, (theme, sel, ratio)
        # Keyboard: the presenter's buttons take the focus, and it shows.
        lead.keyboard.press("Shift")  # the last thing done was a key, as a keyboard user's
        # (at 800 px the presenter's buttons are in the toolbar's menu: open it where it is)
        lead.evaluate("document.getElementById('btn-menu').click()")
        lead.locator(".copy-link").focus()
        outline = lead.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert outline != "none"
        # Each step in words for screen readers, with the live run's numbers.
        fol.wait_for_function("document.getElementById('step-words').textContent.length > 0")
        said = fol.evaluate("document.getElementById('step-words').textContent")
        gpus = web.tr(fol, "gpus")
        assert said.startswith("Step ") and f"{gpus} GPUs" in said
        assert f"{2 * (gpus - 1)} passes" in said
        assert fol.evaluate("document.getElementById('stage').getAttribute('aria-describedby')")
    finally:
        flat.close()


def test_a_follower_sees_the_presenters_orbit(browser, lesson_server, web) -> None:
    """The presenter drags the scene round by hand: a follower's camera turns to the same
    angle; choosing a numbered view again brings the follower back to it as well."""
    lead, follow = lead_and_follower(browser, web, lesson_server.url)
    assert follow.evaluate("window.trainingRun.cameraPose") is None
    # Orbit on the presenter's canvas with the mouse.
    # A point where the canvas itself is under the mouse (labels and panels lie over it).
    x, y = lead.evaluate(
        "(() => { for (let y = 300; y < 560; y += 20) for (let x = 160; x < 520; x += 20)"
        " if (document.elementFromPoint(x, y)?.id === 'stage') return [x, y];"
        " return [400, 300]; })()"
    )
    lead.mouse.move(x, y)
    lead.mouse.down()
    for i in range(1, 11):
        lead.mouse.move(x + 18 * i, y + 4 * i)
    lead.mouse.up()
    wait(lead, "window.trainingRun.cameraPose !== null")
    wait(
        follow,
        "(() => { const a = window.trainingRun.cameraPose; if (!a) return false;"
        f" const b = {lead.evaluate('JSON.stringify(window.trainingRun.cameraPose)')};"
        " return [0, 1, 2].every((i) => Math.abs(a.position[i] - b.position[i]) < 0.05"
        " && Math.abs(a.target[i] - b.target[i]) < 0.05); })()",
        timeout=10_000,
    )
    assert follow.evaluate("window.trainingRun.following")  # it followed, it did not leave
    lead.keyboard.press("2")
    wait(follow, "window.trainingRun.view === 2 && window.trainingRun.cameraPose === null")


def test_followers_see_the_end_of_the_tour_and_the_start_again(browser, lesson_server, web) -> None:
    """The presenter presses past the last stop: followers show the end of the tour too, and
    go back to stop 1 with the presenter when it starts again."""
    lead, follow = lead_and_follower(browser, web, lesson_server.url)
    n = lead.evaluate("window.trainingRun.tourLength")
    lead.keyboard.press("t")
    for _ in range(2 * n):
        lead.keyboard.press("PageDown")
        if lead.evaluate("window.trainingRun.tourEnded"):
            break
    assert lead.evaluate("window.trainingRun.tourEnded")
    wait(
        follow,
        "window.trainingRun.tourEnded && window.trainingRun.tourActive"
        " && document.getElementById('tour-title').textContent === 'End of the tour'",
        timeout=10_000,
    )
    lead.keyboard.press("PageDown")  # start again
    wait(
        follow,
        "!window.trainingRun.tourEnded && window.trainingRun.tourStop === 0"
        " && window.trainingRun.tourActive",
        timeout=10_000,
    )


CHIP = """() => {
  const box = (el) => {
    const r = el.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  };
  const chip = document.getElementById('follow-badge');
  const others = [...document.querySelectorAll('#labels .label, .stats .stat')]
    .filter((el) => el.offsetParent !== null).map((el) => [el.textContent.trim(), box(el)]);
  return { chip: box(chip), shown: !chip.hidden, w: innerWidth, h: innerHeight, others };
}"""


def test_a_followers_chip_is_small_and_in_the_corner(browser, lesson_server, web) -> None:
    """Following shows as a small chip in the top right corner, over no numbered label and no
    number of the run, in English and German, on a projector's 1024 px and at 1920."""
    lead = web.open_page(browser, lesson_server.url, "?present", viewport=VIEW).page
    wait(lead, READY)
    for size, lang in (((1024, 768), "de"), ((1024, 768), "en"), ((1920, 1080), "en")):
        view = {"width": size[0], "height": size[1]}
        page = web.open_page(browser, lesson_server.url, f"?lang={lang}", viewport=view).page
        wait(page, READY + " && window.trainingRun.following && window.trainingRun.stageReady")
        page.wait_for_function("window.trainingRun.labelCount === 7")
        got = page.evaluate(CHIP)
        left, top, right, bottom = got["chip"]
        assert got["shown"], got
        assert top <= 16 and got["w"] - right <= 16, (size, lang, got["chip"])
        assert (right - left) * (bottom - top) <= 260 * 60, (size, lang, got["chip"])
        for name, (l2, t2, r2, b2) in got["others"]:
            apart = right <= l2 or left >= r2 or bottom <= t2 or top >= b2
            assert apart, (size, lang, name, got["chip"], (l2, t2, r2, b2))
        page.context.close()


STORY = (
    "(() => {{ const s = window.trainingRun.story; return s && s.chapter === {n}"
    " && s.title !== '' && s.caption !== ''"
    " && !document.getElementById('story-box').hidden; }})()"
)


def test_followers_and_a_late_joiner_see_the_presenters_story(browser, lesson_server, web) -> None:
    """The presenter opens the One GPU story and takes the room through five chapters: both
    followers show the same chapter card (number, title, words) within seconds, a page that
    joins late lands on the current chapter and follows on, every page watches the chapter's
    run, and leaving the story takes the room back out to the class run."""
    lead, follow = lead_and_follower(browser, web, lesson_server.url)
    # A second follower, words only (it skips the WebGL draws: the cards are what is checked).
    second = web.open_page(browser, lesson_server.url, "?draw=0", viewport=VIEW).page
    wait(second, READY + " && window.trainingRun.following")
    wait(lead, "window.trainingRun.followers === 2")
    lead.evaluate("document.getElementById('story-open').click()")
    room = [lead, follow, second]
    late = None
    for n in range(1, 6):
        if n > 1:
            lead.keyboard.press("PageDown")
        wait(lead, STORY.format(n=n))
        for page in room[1:]:
            wait(page, STORY.format(n=n), timeout=15_000)
        shown = [p.evaluate("window.trainingRun.story") for p in room]
        # The same card (its words carry live numbers, which each page fills as its steps come).
        for s in shown[1:]:
            assert s["chapterId"] == shown[0]["chapterId"] and s["title"] == shown[0]["title"]
            assert s["caption"] != "", s
        if n == 3:
            # A page joining late lands on the chapter, then follows on with the room.
            late = web.open_page(browser, lesson_server.url, "?draw=0", viewport=VIEW).page
            wait(late, READY + " && window.trainingRun.following")
            wait(late, STORY.format(n=3), timeout=15_000)
            assert late.evaluate("window.trainingRun.story.chapterId") == "walls"
            room.append(late)
    assert late is not None and late.evaluate("window.trainingRun.story.chapter") == 5
    # Every page of the room watches the chapter's own run with the presenter.
    for page in room:
        wait(page, "window.trainingRun.watching === 'one-gpu.one'", timeout=60_000)
    lead.keyboard.press("Escape")
    for page in room[1:]:
        wait(
            page,
            "!window.trainingRun.story.chapter && document.getElementById('story-box').hidden",
        )
        wait(page, "window.trainingRun.watching === 'class'")
