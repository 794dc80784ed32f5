"""Shared fixtures: `live_server` starts the real app (uvicorn + training worker) on a free
loopback port in a subprocess and hands back its URLs; any test folder can use it.

    def test_x(live_server):
        srv = live_server("--speed", "max")          # extra `trainingrun serve` options
        httpx.get(srv.url + "/api/run")
        srv.stop()                                  # optional: SIGINT, final checkpoint

`live_server_module` is the same factory with module scope, for suites that share one server.
Defaults keep runs small and quick: 8 GPUs on 2 servers, 10 steps/s, no resting.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from servers import ServerProcess

# numpy's BLAS on one thread in every test process, as the product trains (app/cli/main.py):
# the model's matrices are small, and two test workers on two cores each running two BLAS
# threads only wait for each other (a 100-step climb took 49 s instead of 4). Set before
# anything imports numpy (nothing above does); tests/engine/conftest.py also tells the
# library itself.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ARGS = ("--gpus", "8", "--servers", "2", "--speed", "10", "--rest-after", "0")


def _starter(base: Path, started: list[ServerProcess]) -> Callable[..., ServerProcess]:
    def start(
        *args: str, run_dir: Path | None = None, env: dict[str, str] | None = None
    ) -> ServerProcess:
        n = len(started)
        srv = ServerProcess(
            run_dir or base / f"run-{n}",
            *DEFAULT_ARGS, "--log-level", "warning", *args,
            env=env, log_name=f"server-{n}",
        )  # fmt: skip
        started.append(srv)
        return srv.start()

    return start


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []
    yield _starter(tmp_path, started)
    for srv in started:
        srv.stop()


@pytest.fixture(scope="module")
def live_server_module(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []
    yield _starter(tmp_path_factory.mktemp("live"), started)
    for srv in started:
        srv.stop()


WEB_TESTS = ROOT / "tests" / "web"


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects, so the mark counts
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under tests/web/ drives a real browser: marked `browser`, so that
    `pytest -m "not browser"` runs all the others (fast) and `-m browser` only these."""
    for item in items:
        if item.path.is_relative_to(WEB_TESTS):
            item.add_marker(pytest.mark.browser)
