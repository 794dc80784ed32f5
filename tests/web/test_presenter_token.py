"""The presenter's page on a public server: opened with `?token=`, it connects as the
presenter (the toolbar is in control mode) and takes the token out of the address bar, so
copying the link does not share it; without the token the page is view-only."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

TOKEN = "presenter-t0ken-77"
VIEW = {"width": 1280, "height": 720}
HELLO = "window.trainingRun && window.trainingRun.runId"


def _view_only(page) -> bool:
    return page.evaluate("document.getElementById('toolbar').classList.contains('view-only')")


def test_presenter_token_gives_control_and_leaves_the_address_bar(browser, tmp_path, web) -> None:
    srv = web.ServerProcess(tmp_path / "run", *web.SMALL, "--public", "--token", TOKEN)
    srv.start(fresh=True)
    try:
        w = web.open_page(browser, srv.url, f"?token={TOKEN}&projector=0", viewport=VIEW)
        page = w.page
        page.wait_for_function(HELLO, timeout=30_000)
        assert not _view_only(page)
        href = page.evaluate("window.location.href")
        assert TOKEN not in href and "token" not in href
        assert "projector=0" in href  # other parameters stay
        page.keyboard.press("p")
        page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=15_000)
        # A reload of the same tab keeps the presenter in control, and the websocket itself
        # carries the token (so hello.can_control is true from the start).
        sockets: list[str] = []
        page.on("websocket", lambda ws: sockets.append(ws.url))
        web.wait_stage(page)  # nothing left loading for the reload to cut short
        page.reload()
        page.wait_for_function(HELLO, timeout=30_000)
        web.wait_stage(page)
        assert not _view_only(page)
        # (beside the page's own key, which only ever controls a run of the page's own)
        asks = [parse_qs(urlsplit(u).query) for u in sockets]
        assert asks and all(q["token"] == [TOKEN] and set(q) <= {"token", "key"} for q in asks)
        assert TOKEN not in page.evaluate("window.location.href")
        assert w.errors == []
        page.context.close()

        viewer = web.open_page(browser, srv.url, viewport=VIEW)
        viewer.page.wait_for_function(HELLO, timeout=30_000)
        assert _view_only(viewer.page)
        viewer.page.context.close()

        wrong = web.open_page(browser, srv.url, "?token=not-the-token", viewport=VIEW)
        wrong.page.wait_for_function(HELLO, timeout=30_000)
        assert _view_only(wrong.page)
        assert "not-the-token" not in wrong.page.evaluate("window.location.href")
        wrong.page.context.close()
    finally:
        srv.stop()
