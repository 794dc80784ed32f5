"""Simulated GPUs: which GPU holds what, and each one's memory account.

Every GPU owns its own row of the stacked arrays (parameters, gradients, AdamW state):
`gpu.params[name]` is a view of that GPU's row, so nothing is shared implicitly. Under data
parallelism every GPU holds a full replica (row `gpu.id` of the replica-stacked arrays);
under a parallel plan it holds only its shards of its pipeline stage's layers (parallel.py),
and `holds` says which.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .report import GpuMemory


@dataclass
class SimGpu:
    id: int
    server: int
    capacity: int  # bytes of HBM on the simulated device
    params: dict[str, np.ndarray] = field(default_factory=dict)
    grads: dict[str, np.ndarray] = field(default_factory=dict)
    opt_state: dict[str, np.ndarray] = field(default_factory=dict)
    holds: str = "replica"  # data parallel: a full copy of the model; else its shards
    activation_bytes: int = 0
    failed: bool = False
    generation: int = 0  # bumped each time the GPU is replaced

    def bind(self, params, grads, opt_state) -> None:
        """Point this GPU at its own row of the stacked arrays."""
        self.params = {k: v[self.id] for k, v in params.items()}
        self.grads = {k: v[self.id] for k, v in grads.items()} if grads else {}
        self.opt_state = {k: v[self.id] for k, v in opt_state.items()}

    def bind_own(self, params, grads, opt_state, holds: str) -> None:
        """Point this GPU at arrays that are already its own (views of its rows)."""
        self.params, self.grads, self.opt_state, self.holds = params, grads, opt_state, holds

    def memory(self) -> GpuMemory:
        w = _nbytes(self.params)
        g = _nbytes(self.grads) if self.grads else w
        o = _nbytes(self.opt_state)
        a = self.activation_bytes
        return GpuMemory(
            gpu=self.id,
            weights=w,
            grads=g,
            optimizer=o,
            activations=a,
            total=w + g + o + a,
            capacity=self.capacity,
        )


def _nbytes(arrays: dict[str, np.ndarray]) -> int:
    return int(sum(a.nbytes for a in arrays.values()))
