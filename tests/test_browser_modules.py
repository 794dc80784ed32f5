"""The page's pure modules (layout, trace reader, pacing, timeline, formatting, languages,
lesson links, keys, palette, story index) tested in Node, without a browser: each
tests/js/*.test.mjs file runs with `node --test`, one pytest test per file, so pytest-xdist can
spread them. Node's own report is shown when one fails.

Without Node these tests skip, except with CI=true, where a missing Node is a failure (as a
missing browser is for tests/web/): CI must not pass by testing nothing. The fixtures the
Node tests read (tests/js/fixtures/) are the engine's own numbers; the last test here fails
when they are not what tests/js/make_fixtures.py makes now.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
JS_TESTS = ROOT / "tests" / "js"
NODE_MIN = 18  # node:test and --test-reporter
TIMEOUT_S = 120


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser module tests cannot run: {reason}")
    pytest.skip(reason)


def _node() -> str:
    node = os.environ.get("NODE") or shutil.which("node") or shutil.which("nodejs")
    if not node:
        _missing("no node on PATH (Debian package nodejs) for the browser module tests")
    try:
        version = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as err:
        _missing(f"{node} does not run: {err}")
    major = int(re.match(r"v(\d+)", version).group(1)) if re.match(r"v\d+", version) else 0
    if major < NODE_MIN:
        _missing(f"node {version} is older than {NODE_MIN}, which node:test needs")
    return node


@pytest.mark.parametrize(
    "path", sorted(JS_TESTS.glob("*.test.mjs")), ids=lambda p: p.name.removesuffix(".test.mjs")
)
def test_browser_module(path: Path) -> None:
    node = _node()
    proc = subprocess.run(
        [node, "--test", "--test-reporter=tap", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    out = proc.stdout + proc.stderr
    passed = re.search(r"^# pass (\d+)$", out, re.MULTILINE)
    failed = re.search(r"^# fail (\d+)$", out, re.MULTILINE)
    if proc.returncode != 0 or not failed or failed.group(1) != "0":
        pytest.fail(f"node --test {path.relative_to(ROOT)} failed:\n{out}", pytrace=False)
    assert passed and int(passed.group(1)) > 0, f"{path.name} ran no tests:\n{out}"


def test_there_are_node_tests() -> None:
    names = {p.name for p in JS_TESTS.glob("*.test.mjs")}
    assert {"layout.test.mjs", "trace.test.mjs", "pacing.test.mjs"} <= names, names


def test_the_fixtures_are_what_the_engine_gives_now() -> None:
    spec = importlib.util.spec_from_file_location("make_fixtures", JS_TESTS / "make_fixtures.py")
    assert spec and spec.loader
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    stale = []
    for name, text in make.build().items():
        path = make.FIXTURES / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    assert not stale, (
        f"tests/js/fixtures/{', '.join(stale)} out of date with the engine: "
        "run .venv/bin/python tests/js/make_fixtures.py and commit the result"
    )
