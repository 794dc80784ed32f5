"""Every key in the keyboard map does what the help says, read back through
window.trainingRun, in a real browser against a real server. Views 1-4 are photographed."""

from __future__ import annotations

# Steps arriving live are what these tests watch: the module's server keeps training.
TRAINS = True


def press(page, key: str) -> None:
    page.keyboard.press(key)


def wait_true(page, expr: str, timeout: float = 10_000) -> None:
    page.wait_for_function(
        f"() => {{ const t = window.trainingRun; return {expr}; }}", timeout=timeout
    )


def test_every_key_changes_its_state(page_at, web) -> None:
    w = page_at()
    page = w.page
    web.wait_stage(page)
    tr = lambda name: web.tr(page, name)  # noqa: E731

    # Arrows rotate the camera, and the scene is redrawn for it.
    frames = tr("frames")
    for key, field, sign in [
        ("ArrowLeft", "azimuth", -1),
        ("ArrowRight", "azimuth", 0),
        ("ArrowUp", "polar", -1),
        ("ArrowDown", "polar", 0),
    ]:
        before = tr("camera")[field]
        press(page, key)
        after = tr("camera")[field]
        assert after != before, key
        if sign:
            assert (after - before) * sign > 0, key
    wait_true(page, f"t.frames > {frames}")

    # + / = zoom in (the camera really comes closer), - / _ zoom out.
    z = tr("camera")["zoom"]
    d = tr("camera")["distance"]
    press(page, "+")
    assert tr("camera")["zoom"] > z
    assert tr("camera")["distance"] < d * 0.95
    press(page, "-")
    assert abs(tr("camera")["distance"] - d) < 1e-6 * d
    press(page, "+")
    press(page, "=")
    z2 = tr("camera")["zoom"]
    assert z2 > z
    press(page, "-")
    press(page, "_")
    assert abs(tr("camera")["zoom"] - z) < 1e-9

    # 1-4 views (photographed), 0 resets.
    for n in (1, 2, 3, 4):
        press(page, str(n))
        assert tr("view") == n
        web.landed(page)  # the photograph is taken where the view's flight lands
        web.screenshot(page, f"view-{n}")
    press(page, "0")
    assert tr("view") == 0
    cam = tr("camera")
    assert (cam["azimuth"], cam["polar"], cam["zoom"]) == (0, 0, 1)

    # Toggles: S signal, L labels, Space spin, E explode.
    for key, name in [("s", "signal"), ("l", "labels"), ("Space", "spin"), ("e", "exploded")]:
        before = tr(name)
        press(page, key)
        assert tr(name) is (not before), key
        press(page, key)
        assert tr(name) is before, key
    press(page, "l")
    assert page.locator("#labels").is_hidden()
    press(page, "l")
    assert page.locator("#labels").is_visible()

    # ? opens the help, which lists every key, the labs' keys too; Esc closes it.
    press(page, "?")
    assert tr("helpOpen") is True
    help_text = page.locator("#help-keys").inner_text()
    for shown in ("arrows", "+ / −", "1–4", "Space", "PgDn / PgUp", "Esc", "K", "N", "P"):
        assert shown in help_text, shown
    lab_keys = page.evaluate(
        "[...document.querySelectorAll('#toolbar .labs button')].map(b => b.title)"
    )
    for title in lab_keys:
        key = title.rsplit("(", 1)[-1].rstrip(")")
        assert key in help_text, title
    press(page, "Escape")
    assert tr("helpOpen") is False

    # T starts and stops the tour; PageDown starts it when off, then moves on; PageUp back.
    press(page, "t")
    assert tr("tourActive") is True
    press(page, "t")
    assert tr("tourActive") is False
    press(page, "PageDown")
    assert tr("tourActive") is True and tr("tourStop") == 0
    press(page, "PageDown")
    assert tr("tourStop") == 1
    press(page, "PageUp")
    assert tr("tourStop") == 0
    press(page, "Escape")
    assert tr("tourActive") is False

    # F asks for full screen.
    press(page, "f")
    wait_true(page, "t.fullscreen === true")
    press(page, "f")
    wait_true(page, "t.fullscreen === false")

    # P pauses the real run (the server confirms), N runs exactly one step, P resumes.
    press(page, "p")
    wait_true(page, "t.runState === 'paused'")
    web.quiet(page)  # a step already under way has landed
    step = tr("step")
    press(page, "n")
    wait_true(page, f"t.step === {step + 1}")
    # Nothing to wait for: the check is that no second step comes (three at this pace).
    page.wait_for_timeout(800)
    assert tr("step") == step + 1  # still paused: no more steps than asked for
    press(page, "p")
    wait_true(page, "t.runState === 'running'")

    # Keys are ignored while typing in a field.
    page.evaluate(
        "() => { const i = document.createElement('input'); i.id = 'typing'; "
        "document.body.append(i); i.focus(); }"
    )
    before = tr("labels")
    page.keyboard.type("l")
    assert tr("labels") is before

    assert w.errors == []


def test_key_legend_is_drawn_from_the_key_map(page_at, web) -> None:
    # One key map: the legend along the bottom shows the entries of KEYMAP that carry a
    # legend word, in its order, and ends with the help key, which opens the help.
    w = page_at()
    page = w.page
    expected = page.evaluate(
        """async () => {
          const { KEYMAP } = await import('/static/js/ui/keys.js');
          return KEYMAP.filter((k) => k.legend).map((k) => [k.show, k.legend]);
        }"""
    )
    items = page.locator("#legend > span:not(.sep)").all_inner_texts()
    help_item = next(i for i, (show, _) in enumerate(expected) if show == "?")
    expected.append(expected.pop(help_item))
    assert [" ".join(i.split()) for i in items] == [f"{show} {word}" for show, word in expected]
    assert items[-1].startswith("?")
    page.locator("#legend .more").click()
    assert web.tr(page, "helpOpen") is True
    page.keyboard.press("Escape")
    assert web.tr(page, "helpOpen") is False
    assert w.errors == []


def test_space_after_clicking_a_toolbar_button_only_spins(page_at, web) -> None:
    """A clicker's or a stray Space must never press the button the mouse last clicked."""
    w = page_at()
    page = w.page
    web.wait_stage(page)
    page.wait_for_function("window.trainingRun.step > 0")
    page.click("#btn-fail")
    page.wait_for_function("window.trainingRun.failures === 1", timeout=20_000)
    spin = web.tr(page, "spin")
    assert page.evaluate("document.activeElement.id") in ("btn-fail", "")
    page.keyboard.press(" ")
    # Nothing to wait for: the check is that no second failure comes; one would have been
    # sent and reported by now.
    page.wait_for_timeout(1500)
    assert web.tr(page, "failures") == 1
    assert web.tr(page, "spin") is (not spin)
    page.keyboard.press(" ")
    assert web.tr(page, "spin") is spin
    assert w.errors == []
