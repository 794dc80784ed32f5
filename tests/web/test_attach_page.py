"""The page of a `trainingrun watch` server in a real headless Chromium: it opens at once and
says it is waiting for a run; once a real 4-rank DDP job attaches, it draws that job's cluster
and labels its numbers "measured on your cluster"."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import ServerProcess, free_port, get_json

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"  # git-ignored
EXAMPLE = ROOT / "examples" / "ddp_tiny.py"


@pytest.fixture
def watch_server(tmp_path: Path) -> Iterator[str]:
    """A real `trainingrun watch` on a free loopback port, waiting for a job; its URL."""
    srv = ServerProcess(tmp_path / "watch", "--log-level", "warning", command="watch").start()
    try:
        assert get_json(srv.url + "/api/attach")["waiting"] is True
        yield srv.url
    finally:
        srv.kill()


def start_job(url: str, log: Path) -> subprocess.Popen[bytes]:
    """examples/ddp_tiny.py under torchrun: 4 CPU ranks over gloo, reporting to `url`."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "4"]
    cmd += ["--master-addr", "127.0.0.1", "--master-port", str(free_port())]
    cmd += [str(EXAMPLE), "--steps", "100000", "--max-seconds", "60", "--report", url]
    return subprocess.Popen(
        cmd, cwd=ROOT, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True
    )


def test_the_page_waits_then_shows_the_attached_job_measured(
    browser: object, watch_server: str, tmp_path: Path, web
) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(watch_server + "/")
    box = page.locator("#attach-wait")
    box.wait_for(state="visible", timeout=15_000)
    assert "Waiting for a run to attach" in box.inner_text()
    assert f"--report {watch_server}" in page.locator(".attach-command").inner_text()
    assert page.locator("#hud-state").inner_text() == "waiting"
    page.screenshot(path=str(SCREENSHOTS / "attach_waiting.png"))

    job = start_job(watch_server, tmp_path / "job.log")
    try:
        page.wait_for_function(
            "window.trainingRun && window.trainingRun.step > 20", timeout=150_000
        )
        assert box.is_hidden()
        assert (
            page.locator("#attach-badge").inner_text().lower().endswith("measured on your cluster")
        )
        assert "measured on your cluster" in page.locator("#time-total").inner_text()
        assert "4 ranks on 1 machine, gloo on cpu" in page.locator("#time-assumption").inner_text()
        # The job's own shape: 4 ranks on one machine, drawn as the scene's cluster.
        assert page.evaluate("[window.trainingRun.gpus, window.trainingRun.servers]") == [4, 1]
        page.wait_for_function("window.trainingRun.stageReady", timeout=30_000)
        web.landed(page)
        page.screenshot(path=str(SCREENSHOTS / "attach_running_1920.png"))
        frames = page.evaluate("window.trainingRun.frames")
        page.set_viewport_size({"width": 1024, "height": 768})
        web.drawn(page, frames)
        page.screenshot(path=str(SCREENSHOTS / "attach_running_1024.png"))
    finally:
        os.killpg(job.pid, signal.SIGTERM)
        job.wait(30)
    assert errors == []
