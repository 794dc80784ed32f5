"""The live cluster in a Jupyter notebook: `ClusterView(url)` (pythreejs, the
`trainingrun[notebook]` extra). See view.py.

`ClusterView` is imported when first asked for, so the pure layout (layout.py) can be used,
and tested, without the extra installed."""

from __future__ import annotations

from typing import Any

__all__ = ["ClusterView"]


def __getattr__(name: str) -> Any:
    if name == "ClusterView":
        from .view import ClusterView

        return ClusterView
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
