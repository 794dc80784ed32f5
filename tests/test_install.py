"""The built package works on its own: the wheel carries the page, three.js and the scenes, and
an installed `trainingrun` streams steps to a websocket client within seconds of starting."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import sysconfig
import time
import venv
import zipfile
from pathlib import Path

import httpx
import pytest
import websockets
from servers import free_port

ROOT = Path(__file__).resolve().parent.parent


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
        "app/_static/vendor/swagger-ui/swagger-ui-bundle.js",
        "app/_static/vendor/swagger-ui/swagger-ui.css",
        "app/_static/vendor/swagger-ui/LICENSE",
        "app/_scenes/training-run.json",
        "app/_scenes/stories/one-gpu.json",
        "app/_scenes/climb/tiny.json",
        "app/engine/trainer.py",
    ):
        assert needed in names, needed
    assert any(n.startswith("app/_static/vendor/three/build/three") for n in names)


def _venv_using_these_dependencies(env_dir: Path) -> Path:
    """A fresh virtual environment that sees none of the base interpreter's packages and finds
    the project's dependencies in the environment running the tests, through a `.pth` file of
    plain paths (so that environment's own `.pth` files, the checkout's editable install among
    them, are not processed). Returns its python."""
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    paths = sysconfig.get_paths()
    ours = dict.fromkeys([paths["purelib"], paths["platlib"]])  # ordered, without duplicates
    (Path(site) / "trainingrun-test-deps.pth").write_text("".join(f"{p}\n" for p in ours))
    return py


def _clean_env(**extra: str) -> dict[str, str]:
    # Nothing from the checkout or the outer environment may decide what gets imported.
    drop = ("TRAININGRUN_", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONNOUSERSITE"] = "1"
    return {**env, **extra}


def test_installed_command_streams_steps_within_five_seconds(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    py = _venv_using_these_dependencies(env_dir)
    # --ignore-installed: the checkout's editable install is visible to pip through the .pth
    # file's paths; it must neither satisfy this requirement nor be touched.
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed"]
        + [str(wheel)],
        check=True,
        timeout=300,
        env=_clean_env(),
    )
    exe = env_dir / "bin" / "trainingrun"
    assert exe.exists()
    work = tmp_path / "elsewhere"  # not the checkout: the installed files must be used
    work.mkdir()

    where = subprocess.run(
        [str(py), "-c", "import app, fastapi; print(app.__file__)"],
        cwd=work,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.returncode == 0, where.stderr
    app_file = Path(where.stdout.strip()).resolve()
    assert app_file.is_relative_to(env_dir.resolve()), f"app imported from {app_file}"
    assert not app_file.is_relative_to(ROOT), f"app imported from the checkout: {app_file}"

    port = free_port()
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [str(exe)],
            cwd=work,
            env=_clean_env(TRAININGRUN_PORT=str(port), PYTHONUNBUFFERED="1"),
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def output() -> str:
        return log_path.read_text(errors="replace")

    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the installed server exited with {proc.returncode}:\n{output()}")
            try:
                if httpx.get(base + "/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the installed server did not come up in 120 s:\n{output()}")
            time.sleep(0.2)
        page = httpx.get(base + "/")
        assert page.status_code == 200 and "importmap" in page.text
        # The other languages' words and the story travel with the package.
        for lang in ("de", "es"):
            words = httpx.get(f"{base}/api/locale/{lang}")
            assert words.status_code == 200 and len(words.json()) > 100, (lang, words.text[:200])
        assert httpx.get(base + "/api/stories/one-gpu").status_code == 200

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
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
