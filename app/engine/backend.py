"""The one array namespace the engine's maths goes through.

Today it is NumPy. The model and collectives call `xp.<op>` with operations that exist in
the Python array API standard (matmul, exp, sum, max, ...), so a GPU array library such as
CuPy or PyTorch (through array-api-compat) can be dropped in here later.
"""

from __future__ import annotations

import numpy as np

xp = np


def dtype_of(name: str):
    """Map a config dtype name to the namespace's dtype."""
    return {"float32": xp.float32, "float64": xp.float64}[name]
