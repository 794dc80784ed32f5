"""Tests that need an optional extra (`trainingrun[torch]`, `trainingrun[notebook]`) skip,
saying which, when it is not installed; under CI (CI=true) a missing extra fails instead,
as a missing browser does, so a green CI run has really run them.

    torch = need("torch", "torch")   # at the top of the test module, before other imports
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def need(module: str, extra: str) -> ModuleType:
    if os.environ.get("CI") == "true":
        return importlib.import_module(module)  # an ImportError here fails the run
    return pytest.importorskip(module, reason=f"needs the trainingrun[{extra}] extra")
