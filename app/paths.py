"""Where the browser files and scene data live, in a checkout and in an installed wheel.

In a checkout they sit at the repository root (`static/`, `scenes/`). In a wheel,
pyproject maps them into the package as `app/_static` and `app/_scenes`.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent
_ROOT = _PKG.parent


def _first_existing(*candidates: Path) -> Path:
    for c in candidates:
        if c.is_dir():
            return c
    return candidates[0]


STATIC_DIR = _first_existing(_ROOT / "static", _PKG / "_static")
SCENES_DIR = _first_existing(_ROOT / "scenes", _PKG / "_scenes")
