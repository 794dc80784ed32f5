"""The live cluster in a Jupyter notebook: `ClusterView(url)` (pythreejs, the
`trainingrun[notebook]` extra). See view.py."""

from __future__ import annotations

from .view import ClusterView

__all__ = ["ClusterView"]
