"""The built package works on its own: the wheel carries the page, three.js and the scenes, and
an installed `trainingrun` streams steps to a websocket client within seconds of starting."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import httpx
import pytest
import websockets

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True,
        timeout=300,
    )
    (path,) = out.glob("trainingrun-*.whl")
    return path


def test_wheel_carries_the_browser_files_and_scenes(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "app/_static/index.html",
        "app/_static/sheet.html",
        "app/_static/js/main.js",
        "app/_static/vendor/three/LICENSE",
        "app/_scenes/training-run.json",
        "app/engine/trainer.py",
    ):
        assert needed in names, needed
    assert any(n.startswith("app/_static/vendor/three/build/three") for n in names)


def test_installed_command_streams_steps_within_five_seconds(wheel, tmp_path):
    # A fresh virtual environment; its dependencies come from this environment's packages.
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=300,
    )
    exe = env_dir / "bin" / "trainingrun"
    assert exe.exists()
    port = free_port()
    work = tmp_path / "elsewhere"  # not the checkout: the installed files must be used
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAININGRUN_")}
    env["TRAININGRUN_PORT"] = str(port)
    proc = subprocess.Popen(
        [str(exe)], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if httpx.get(base + "/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail("the installed server did not come up")
        page = httpx.get(base + "/")
        assert page.status_code == 200 and "importmap" in page.text

        async def first_step() -> tuple[float, dict]:
            t0 = time.monotonic()
            async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
                while True:
                    msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
                    if msg["type"] == "step":
                        return time.monotonic() - t0, msg

        waited, step = asyncio.run(first_step())
        assert waited <= 5.0, f"first step after {waited:.1f} s"
        assert step["loss"] > 0 and len(step["gpu_losses"]) == 32
        assert (work / "runs" / "default" / "runs.sqlite").exists()
    finally:
        proc.terminate()
        proc.wait(60)
