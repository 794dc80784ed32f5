"""The reporter a real job calls (app/reporter/): what it measures, what it sends, and that a
server that is away never holds the training loop up."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from extras import need

torch = need("torch", "torch")

import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from app.protocol import AttachBatch  # noqa: E402
from app.reporter import Reporter  # noqa: E402

from .conftest import ROOT, free_port  # noqa: E402


class Collector(ThreadingHTTPServer):
    """A loopback HTTP server that keeps every batch posted to /api/attach."""

    def __init__(self) -> None:
        self.batches: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.batches.append(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def steps(self) -> list[dict[str, Any]]:
        return [s for b in self.batches for s in b["steps"]]


@pytest.fixture
def collector() -> Iterator[Collector]:
    srv = Collector()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def one_rank_group() -> Iterator[None]:
    """A real gloo process group of one rank, so DDP (and its hook) run for real."""
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def train(reporter: Reporter, model: nn.Module, steps: int) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.randn(16, 2)
    for _ in range(steps):
        with reporter.step(tokens=16) as s:
            with s.forward():
                loss = ((model(x) - y) ** 2).mean()
            with s.backward():
                loss.backward()
            with s.optimizer():
                opt.step()
                opt.zero_grad()
            s.loss = loss


def test_importing_the_reporter_needs_no_torch() -> None:
    code = "import sys, app.reporter; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


def test_each_step_is_measured_and_sent_in_the_servers_shape(collector: Collector) -> None:
    reporter = Reporter(collector.url, model=nn.Linear(8, 2), run_id="job-t", interval_s=0.05)
    train(reporter, reporter.model, 5)
    reporter.close()
    assert reporter.sent == 5 and reporter.dropped == 0
    for b in collector.batches:
        AttachBatch.model_validate(b)  # what the server will accept, field for field
    steps = collector.steps()
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5]
    assert all(s["forward_s"] > 0 and s["backward_s"] > 0 and s["optimizer_s"] > 0 for s in steps)
    assert all(s["step_s"] >= s["forward_s"] + s["backward_s"] for s in steps)
    assert all(isinstance(s["loss"], float) for s in steps)
    assert steps[-1]["tokens_total"] == 80
    rank = collector.batches[-1]["rank"]
    assert rank["params"] == 18 and rank["weights_bytes"] == 18 * 4 and rank["device"] == "cpu"


def test_the_ddp_hook_measures_the_all_reduce_and_its_bytes(
    collector: Collector, one_rank_group: None
) -> None:
    model = DDP(nn.Sequential(nn.Linear(8, 32), nn.Linear(32, 2)))
    reporter = Reporter(collector.url, model=model, run_id="job-ddp", interval_s=0.05)
    assert reporter.comm is not None and reporter.backend == "gloo"
    train(reporter, model, 4)
    reporter.close()
    steps = collector.steps()
    assert len(steps) == 4
    n_params = sum(p.numel() for p in model.parameters())
    for s in steps:
        assert s["allreduce_bytes"] == n_params * 4 and s["allreduce_elements"] == n_params
        assert s["allreduce_calls"] >= 1 and s["allreduce_s"] > 0
        assert s["allreduce_exposed_s"] <= s["backward_s"]


def test_a_dead_server_never_holds_the_loop_and_drops_with_a_count() -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    reporter = Reporter(dead, run_id="job-dead", buffer=8, interval_s=0.01)
    t0 = time.perf_counter()
    for i in range(200):
        with reporter.step(tokens=1) as s:
            s.loss = float(i)
    spent = time.perf_counter() - t0
    assert spent < 0.5, f"200 reported steps took {spent:.3f} s of the loop's time"
    assert reporter.sent == 0
    assert reporter.dropped >= 200 - 8 - 128  # the buffer and one batch waiting to be resent
    assert len(reporter.sender.buffer) <= 8
    t0 = time.perf_counter()
    reporter.close(timeout_s=0.5)
    assert time.perf_counter() - t0 < 3.0


def test_a_remote_server_without_a_token_is_not_reported_to(capfd: Any) -> None:
    reporter = Reporter("http://192.0.2.10:8000", run_id="job-far")  # TEST-NET: never dialled
    assert not reporter.enabled
    with reporter.step(tokens=1) as s:
        s.loss = 1.0  # the step still runs
    assert "token" in capfd.readouterr().err


def test_nothing_is_reported_without_a_url() -> None:
    reporter = Reporter(None)
    with reporter.step() as s:
        s.loss = 1.0
    assert not reporter.enabled and reporter.sent == 0


def test_the_example_trains_the_same_with_and_without_reporting(tmp_path: Path) -> None:
    """--report only watches: the loss after the same steps is the same to the bit."""
    from .conftest import start_job

    losses = []
    for url in (None, f"http://127.0.0.1:{free_port()}"):
        out = tmp_path / f"job-{len(losses)}.log"
        job = start_job(url, ranks=2, steps=30, out=out)
        assert job.wait(180) == 0, out.read_text()[-2000:]
        losses.append(json.loads(out.read_text().strip().splitlines()[-1])["loss"])
    assert losses[0] == losses[1]
