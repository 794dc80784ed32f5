"""Packaging agrees with itself: README commands, CI script, Dockerfile, .dockerignore,
pyproject and the test markers; and the `trainingrun` command explains itself."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from app.cli.main import COMMANDS, main
from app.cli.serve import build_parser

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "README.md must open with a bash block of commands"
    return [line for line in block.group(1).splitlines() if line and not line.startswith("#")]


def test_readme_opens_with_run_and_test_commands():
    run, test = _readme_commands()[:2]
    assert run.endswith("trainingrun") and "pip install ." in run
    assert test == "bash tests/run.sh"


def test_the_test_command_sets_everything_up_and_ci_calls_it():
    script = (ROOT / "tests" / "run.sh").read_text()
    lines = [line for line in script.splitlines() if line and not line.startswith("#")]
    # The browser and node come from Debian's packages, never from a test tool's download.
    packages = (ROOT / "tests" / "system-packages.sh").read_text()
    assert "bash tests/system-packages.sh" in lines
    assert "apt-get install" in packages and "chromium" in packages and "nodejs" in packages
    assert "playwright install" not in script + packages
    steps = [
        "python3 -m venv .venv",
        ".venv/bin/pip install -q -e '.[test,torch,notebook]'",
        ".venv/bin/ruff check .",
        ".venv/bin/ruff format --check .",
        '.venv/bin/python -m pytest "$@"',
    ]
    assert [line for line in lines if line in steps] == steps
    ci = (ROOT / ".ci" / "run").read_text()
    assert _readme_commands()[1] in ci.splitlines()
    assert "pytest" not in ci  # CI runs exactly the README's command, nothing of its own


def _path_with(tmp_path: Path, *tools: str) -> str:
    """A PATH holding only these tools (links to the real ones)."""
    import shutil

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    return str(bin_dir)


def test_without_rights_to_install_one_line_says_what_to_install(tmp_path):
    """No chromium, no node, and no way to install them (no apt-get, no sudo): one line
    names the packages and the command, and the tests go on (their browser tests skip)."""
    path = _path_with(tmp_path, "bash", "id", "env", "true")
    proc = subprocess.run(
        ["bash", str(ROOT / "tests" / "system-packages.sh")],
        env={"PATH": path}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "Cannot install chromium nodejs here: run 'sudo apt-get install -y chromium nodejs' "
        "(until then their tests skip)"
    ]


def _fake(path: str, tool: str, body: str) -> None:
    fake = Path(path) / tool
    fake.write_text(f"#!/bin/sh\n{body}\n")
    fake.chmod(0o755)


def test_as_root_the_missing_packages_are_installed_with_apt(tmp_path):
    path = _path_with(tmp_path, "bash", "env", "true")
    log = tmp_path / "apt.log"
    _fake(path, "id", "echo 0")  # root
    _fake(path, "apt-get", f'echo "$@" >> {log}')
    proc = subprocess.run(
        ["bash", str(ROOT / "tests" / "system-packages.sh")],
        env={"PATH": path}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["Installing chromium nodejs (Debian packages) ..."]
    assert log.read_text().splitlines() == ["update -qq", "install -y -qq chromium nodejs"]


def test_with_both_installed_nothing_is_installed(tmp_path):
    path = _path_with(tmp_path, "bash", "id", "env", "true")
    _fake(path, "chromium", "echo 'Chromium 1.2.3'")
    _fake(path, "node", "echo v20.0.0")
    proc = subprocess.run(
        ["bash", str(ROOT / "tests" / "system-packages.sh")],
        env={"PATH": path}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Installing" not in proc.stdout and "Cannot" not in proc.stdout
    assert proc.stdout.splitlines() == ["Chromium 1.2.3", "node v20.0.0"]


def test_dockerfile_installs_the_package_and_starts_its_console_script():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    scripts = project["scripts"]
    assert scripts == {"trainingrun": "app.cli.main:main"}
    docker = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.1[1-9]-slim", docker, re.M)
    assert re.search(r"^RUN pip install \.$", docker, re.M)
    assert re.search(r"^USER (?!root)\w+", docker, re.M)
    assert re.search(r"^EXPOSE 8000$", docker, re.M)
    cmd = re.search(r"^CMD (\[.*\])$", docker, re.M)
    assert cmd and cmd.group(1) == '["trainingrun", "--host", "0.0.0.0"]'
    # Everything the package needs at run time is copied into the image.
    for folder in ("app", "static", "scenes"):
        assert re.search(rf"^COPY {folder} ", docker, re.M)
    assert project["requires-python"] == ">=3.11"
    for dep in ("fastapi", "uvicorn", "websockets", "pydantic", "numpy"):
        assert any(d.startswith(dep) for d in project["dependencies"])


def test_readme_states_the_python_version_and_a_fast_test_command():
    text = (ROOT / "README.md").read_text()
    opening = text[: text.index("```bash")]
    assert re.search(r"Python 3\.11 or newer", opening)
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"] == (
        ">=3.11"
    )
    fast = [c for c in _readme_commands() if '-m "not browser"' in c]
    assert fast == ['.venv/bin/python -m pytest -m "not browser"']
    # The headless examples name the venv's command, not one that may not be on PATH.
    assert ". .venv/bin/activate" in text and ".venv/bin/trainingrun" in text


def test_browser_marker_is_registered():
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("browser:") for m in ini["markers"])


def _collected(*args: str) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0"]
    proc = subprocess.run(
        [*cmd, "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_browser_marker_selects_exactly_the_web_tests():
    fast = _collected("-m", "not browser")
    browser = _collected("-m", "browser")
    assert fast and browser
    assert not [t for t in fast if t.startswith("tests/web/")]
    assert all(t.startswith("tests/web/") for t in browser)
    assert any(t.startswith("tests/engine/") for t in fast)
    assert any(t.startswith("tests/server/") for t in fast)


def test_starlette_deprecations_fail_the_tests():
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "error::starlette.exceptions.StarletteDeprecationWarning" in ini["filterwarnings"]
    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["test"]
    assert any(d.startswith("httpx2") for d in test_extra)


def _healthcheck() -> list[str]:
    docker = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    check = re.search(r"^HEALTHCHECK (.*?)CMD (\[.*\])$", docker, re.M)
    assert check, "the Dockerfile has no HEALTHCHECK in exec form"
    assert "--interval=" in check.group(1) and "--timeout=" in check.group(1)
    return json.loads(check.group(2))


def test_dockerfile_healthcheck_asks_the_api_with_python():
    cmd = _healthcheck()
    assert cmd[:2] == ["python", "-c"]  # python:3.11-slim has no curl or wget
    assert "http://127.0.0.1:" in cmd[2] and "/api/health" in cmd[2]


class _Health(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:  # noqa: N802 - the http.server spelling
        if self.path != "/api/health":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def health_server() -> Iterator[tuple[int, type[_Health]]]:
    handler = type("Handler", (_Health,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], handler
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("body", "healthy"),
    [
        (b'{"ok": true, "step": 3}', True),
        (b'{"ok": false, "step": 3}', False),
        (b'{"step": 3}', False),
        (b"not json", False),
    ],
)
def test_dockerfile_healthcheck_passes_only_when_ok_is_true(health_server, body, healthy):
    port, handler = health_server
    handler.body = body
    cmd = _healthcheck()
    env = {**os.environ, "TRAININGRUN_PORT": str(port)}
    proc = subprocess.run(
        [sys.executable, *cmd[1:]], env=env, capture_output=True, text=True, timeout=30
    )
    assert (proc.returncode == 0) == healthy, proc.stderr


def test_healthcheck_fails_when_nothing_listens():
    with socket.socket() as s:  # a port that was free a moment ago and is closed now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "TRAININGRUN_PORT": str(port)}
    proc = subprocess.run(
        [sys.executable, *_healthcheck()[1:]], env=env, capture_output=True, timeout=30
    )
    assert proc.returncode != 0


def test_dockerignore_keeps_local_state_out_of_the_build_context():
    ignored = {
        line.strip().rstrip("/")
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for name in (".venv", "runs", ".git", "**/__pycache__", ".pytest_cache", "tests"):
        assert name in ignored, name
    # ...and nothing the image is built from.
    docker = (ROOT / "Dockerfile").read_text()
    copied = {w for line in re.findall(r"^COPY (.*) \S+$", docker, re.M) for w in line.split()}
    assert copied == {"pyproject.toml", "README.md", "app", "static", "scenes"}
    assert not copied & ignored


# ---- the command line explains itself -----------------------------------------------------


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_top_level_help_lists_the_commands(capsys, flag):
    assert main([flag]) == 0
    out = capsys.readouterr().out
    for name in ("serve", "train", "memory"):
        (line,) = [x for x in out.splitlines() if x.strip().startswith(f"{name} ")]
        assert len(line.split(None, 1)[1]) > 10, line
    assert "(the default)" in out and "--port" in out  # how options alone are read


def test_help_on_the_real_command():
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == ""
    assert all(name in proc.stdout for name in COMMANDS)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_has_its_own_help(capsys, command):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: trainingrun {command}")


def test_serve_help_documents_every_option(capsys):
    parser = build_parser()
    for action in parser._actions:
        assert action.help, f"{action.option_strings} has no help text"
    with pytest.raises(SystemExit):
        main(["--port", "9000", "--help"])  # options alone mean `serve`
    out = capsys.readouterr().out
    assert out.startswith("usage: trainingrun serve")
    for action in parser._actions:
        assert action.option_strings[-1] in out


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["serve", "--gpus", "0"], "--gpus"),
        (["--port", "70000"], "--port"),
        (["--speed", "fast"], "--speed"),
        (["--max-fps", "0"], "--max-fps"),
        (["--token", "short"], "--token"),
        (["--gpus", "6", "--servers", "4"], "servers"),
        (["--preset", "tpu"], "--preset"),
        (["--log-level", "loud"], "--log-level"),
        (["--port", "eighty"], "--port"),
        (["--run-dir", "pyproject.toml"], "--run-dir"),
        (["--run-dir", "pyproject.toml/runs"], "--run-dir"),
    ],
    ids=shlex.join,
)
def test_serve_bad_values_are_one_line_errors(capsys, monkeypatch, args, named):
    monkeypatch.chdir(ROOT)  # a file to point --run-dir at
    for key in list(os.environ):
        if key.startswith("TRAININGRUN_"):
            monkeypatch.delenv(key)
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("trainingrun serve: "), err
    assert named in err and "Traceback" not in err and "validation error" not in err


def test_serve_names_a_bad_environment_variable(capsys, monkeypatch):
    monkeypatch.setenv("TRAININGRUN_PORT", "eighty")
    with pytest.raises(SystemExit) as exit_:
        main([])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("trainingrun serve: TRAININGRUN_PORT: ") and err.count("\n") == 1


BLOCK_EXTRAS = """
import importlib.abc, sys

class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "pythreejs", "ipywidgets"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Block())
"""


def test_the_fast_tests_run_without_the_optional_extras(tmp_path):
    """With only `.[test]` installed (torch, pythreejs and ipywidgets made unimportable
    here), the fast tests collect, and those needing an extra skip saying which; under CI a
    missing extra is an error instead."""
    (tmp_path / "sitecustomize.py").write_text(BLOCK_EXTRAS)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    env.pop("CI", None)
    args = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-rs"]
    needing = ["tests/engine/test_backend_torch.py", "tests/notebook/test_cluster_view.py"]
    collect = subprocess.run(
        [*args, "--collect-only", "-m", "not browser"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert collect.returncode == 0, collect.stdout[-2000:] + collect.stderr[-2000:]
    run = subprocess.run(
        [*args, *needing], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 5, run.stdout[-2000:]  # 5: every test in them skipped
    assert "needs the trainingrun[torch] extra" in run.stdout
    assert "needs the trainingrun[notebook] extra" in run.stdout
    ci = subprocess.run(
        [*args, *needing], cwd=ROOT, env={**env, "CI": "true"},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ci.returncode != 0 and "No module named 'torch'" in ci.stdout
