"""Packaging agrees with itself: README commands, CI script, Dockerfile and pyproject."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "README.md must open with a bash block of commands"
    return [line for line in block.group(1).splitlines() if line and not line.startswith("#")]


def test_readme_opens_with_run_and_test_commands():
    run, test = _readme_commands()[:2]
    assert run.endswith("trainingrun") and "pip install ." in run
    assert "pytest" in test and "[test]" in test


def test_ci_runs_the_readme_test_command_and_installs_chromium():
    ci = (ROOT / ".ci" / "run").read_text()
    test = _readme_commands()[1]
    assert test in ci.splitlines()
    assert "apt-get install" in ci and "chromium" in ci
    assert "playwright install" not in ci


def test_dockerfile_installs_the_package_and_starts_its_console_script():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    scripts = project["scripts"]
    assert scripts == {"trainingrun": "app.cli:main"}
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
