"""docs/architecture.md names the code as it is: no module missing, no name that is gone.

The page writes every path from the repository root (`app/run/view.py`,
`static/js/ui/hud.js`, `scenes/`), in the map and in the feature table alike. These tests
read the page as plain text and check that

- every Python module under `app/` is named by its path (an `__init__.py` need not be: its
  package is named by its folder, `app/run/`, and every package folder must be);
- every path the page names (Python, browser, CSS, scene data, tests, benches, docs; a
  glob such as `app/labs/*.py` must match something) exists;
- no file is named by a bare or folder-relative name (`` `view.py` ``, `` `ui/hud.js` ``),
  which a reader could not place and these tests could not check.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
TOP_FOLDERS = ("app", "static", "scenes", "tests", "bench", "examples", "docs")
ROOTED = tuple(f + "/" for f in TOP_FOLDERS)

# A path from the repository root: starts with one of the top folders, not preceded by a
# character that would make it part of a longer path or URL (`/static/js/main.js` on the
# wire is not a file name).
PATH_RE = re.compile(r"(?<![\w./-])((?:" + "|".join(TOP_FOLDERS) + r")/[\w./*-]*)")
CODE_SPAN_RE = re.compile(r"`([^`\n]+)`")
FENCE_RE = re.compile(r"^```.*?^```", re.S | re.M)


def named_paths(text: str) -> set[str]:
    """Every root-relative path the text names, trailing sentence punctuation removed."""
    return {m.group(1).rstrip(".,;:") for m in PATH_RE.finditer(text)}


def bare_file_names(text: str) -> set[str]:
    """Code spans naming a .py or .js file by anything but its path from the root."""
    prose = FENCE_RE.sub("", text)
    bare = set()
    for span in CODE_SPAN_RE.findall(prose):
        word = span.split()[0]
        if word.endswith((".py", ".js")) and not word.startswith(ROOTED):
            bare.add(word)
    return bare


def app_modules(root: Path = ROOT) -> set[str]:
    """Every Python module under `root/app/` but the `__init__.py` files, root-relative."""
    modules = (root / "app").rglob("*.py")
    return {p.relative_to(root).as_posix() for p in modules if p.name != "__init__.py"}


def app_packages(root: Path = ROOT) -> set[str]:
    """Every package folder under `root/app/` (not `app/` itself), written `app/run/`."""
    return {
        p.parent.relative_to(root).as_posix() + "/"
        for p in (root / "app").rglob("__init__.py")
        if p.parent != root / "app"
    }


def path_exists(root: Path, path: str) -> bool:
    """A glob must match something, a folder (`app/run/`) must be one, anything else a file."""
    if "*" in path:
        return any(root.glob(path))
    if path.endswith("/"):
        return (root / path).is_dir()
    return (root / path).is_file()


def undocumented(root: Path, text: str) -> list[str]:
    """The modules and package folders under `root/app/` that `text` does not name."""
    named = named_paths(text)
    return sorted((app_modules(root) | app_packages(root)) - named)


def stale(root: Path, text: str) -> list[str]:
    """The paths `text` names that do not exist under `root`."""
    return sorted(p for p in named_paths(text) if not path_exists(root, p))


def test_every_module_and_package_under_app_is_named():
    missing = undocumented(ROOT, DOC.read_text(encoding="utf-8"))
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_every_named_path_exists():
    text = DOC.read_text(encoding="utf-8")
    assert len(named_paths(text)) > 50, "the page's paths were not found: has its notation changed?"
    gone = stale(ROOT, text)
    assert not gone, f"docs/architecture.md names paths that do not exist: {gone}"


def test_the_checks_catch_a_missing_module_and_a_stale_path(tmp_path: Path):
    for name in ("app/__init__.py", "app/paths.py", "app/run/__init__.py", "app/run/view.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    complete = "- `app/paths.py`: paths.\n\n### `app/run/`\n\n- `app/run/view.py`: views.\n"
    assert undocumented(tmp_path, complete) == []
    assert stale(tmp_path, complete) == []

    # A module added to the code but not to the page, and one in a new package
    (tmp_path / "app/run/pacer.py").write_text("")
    (tmp_path / "app/edge").mkdir()
    (tmp_path / "app/edge/__init__.py").write_text("")
    (tmp_path / "app/edge/hub.py").write_text("")
    assert undocumented(tmp_path, complete) == ["app/edge/", "app/edge/hub.py", "app/run/pacer.py"]

    # Paths the page still names after their files went (a module, a folder, a glob)
    old = complete + "- `app/runner.py`, `app/old/`, `app/labs/*.py`: gone.\n"
    assert stale(tmp_path, old) == ["app/labs/*.py", "app/old/", "app/runner.py"]


def test_files_are_named_from_the_repository_root():
    bare = sorted(bare_file_names(DOC.read_text(encoding="utf-8")))
    assert not bare, f"docs/architecture.md names files without their path from the root: {bare}"


def test_the_parsers_read_the_notation():
    text = (
        "- `app/run/view.py`: see `static/js/ui/hud.js` (`app/labs/*.py`), app/web/.\n"
        "GET /static/js/main.js and `view.py` and `ui/keys.js` (`KEYMAP`)\n"
        "```\napp/engine/   loop.js\n```\n"
    )
    assert named_paths(text) == {
        "app/run/view.py",
        "static/js/ui/hud.js",
        "app/labs/*.py",
        "app/web/",
        "app/engine/",
    }
    assert bare_file_names(text) == {"view.py", "ui/keys.js"}
