"""Resilience in a real browser: when the server goes away the page says so, and when it
comes back (same port, same run directory) the page reconnects by itself and carries on
from the saved run. A control the server refuses shows up as a clear message."""

from __future__ import annotations


def test_page_reconnects_after_a_server_restart(browser, tmp_path, web) -> None:
    srv = web.ServerProcess(tmp_path / "run", *web.SMALL).start(fresh=True)
    try:
        w = web.open_page(browser, srv.url, viewport={"width": 1280, "height": 720})
        page = w.page
        web.wait_stage(page)  # everything loaded, so only the websocket can fail below
        page.wait_for_function("window.trainingRun.step >= 6", timeout=60_000)
        run_id = web.tr(page, "runId")

        srv.stop()
        page.wait_for_function("window.trainingRun.connection === 'lost'", timeout=15_000)
        assert page.locator("#conn").is_visible()
        assert "Connection lost" in page.locator("#conn").inner_text()

        srv.start()  # same port and run directory: the run resumes from its checkpoint
        page.wait_for_function("window.trainingRun.connection === 'open'", timeout=30_000)
        assert page.locator("#conn").is_hidden()
        # The snapshot restored the state, and steps flow again.
        page.wait_for_function("window.trainingRun.historyLength > 0", timeout=15_000)
        step = web.tr(page, "step")
        page.wait_for_function(f"window.trainingRun.step > {step}", timeout=30_000)
        assert web.tr(page, "runId")  # the restarted server names its run
        assert run_id
        # Only the expected noise: the browser logs the refused reconnect attempts.
        unexpected = [e for e in w.errors if "ERR_CONNECTION_REFUSED" not in e and "/ws" not in e]
        assert unexpected == []
        w.page.context.close()
    finally:
        srv.stop()


def test_a_refused_control_shows_a_clear_message(browser, tmp_path, web) -> None:
    srv = web.ServerProcess(tmp_path / "run", *web.SMALL, "--token", "presenter-s3cret", "--public")
    srv.start(fresh=True)
    try:
        w = web.open_page(browser, srv.url, viewport={"width": 1280, "height": 720})
        page = w.page
        page.wait_for_function("window.trainingRun.step >= 1", timeout=60_000)
        page.keyboard.press("p")  # no presenter token in this page's address
        toast = page.locator(".toast-error").first
        toast.wait_for(timeout=10_000)
        assert "presenter token" in toast.inner_text()
        assert web.tr(page, "runState") == "running"
        w.page.context.close()

        # With the token in the address, the same key works.
        w2 = web.open_page(
            browser, srv.url, "?token=presenter-s3cret", viewport={"width": 1280, "height": 720}
        )
        w2.page.keyboard.press("p")
        w2.page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=15_000)
        w2.page.context.close()
    finally:
        srv.stop()
