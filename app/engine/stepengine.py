"""The one interface the trainer runs a step through, whatever the parallel plan.

A step engine owns everything that depends on how the model is laid out over the GPUs: the
parameters, gradients and optimizer state, which GPU holds which of them, the forward and
backward passes and the gradient all-reduce, clipping and the update, the step's trace on
the simulated hardware, and what the trainer reads back (checkpoint arrays, the probe, one
full copy of the parameters). The trainer owns the rest (data, checkpoints, failures, the
report) and calls the same sequence every step:

    losses, work = engine.forward_backward(idx, targets)
    engine.sync_grads(work)
    norm = engine.clip(work, max_norm)
    engine.update(work, lr)           # unless the step diverged
    outcome = engine.trace(work, costs)

A step may also skip `sync_grads` (drift.py shows what that does): `update` then applies to
each data-parallel copy the gradients of its own part of the batch, and the copies grow
apart; there is no `trace` of such a step.

Two engines implement it, and give the same numbers (tests/engine/test_parallel_equivalence.py):
`ReplicatedEngine` (replicated.py) for data parallelism with a dense model, every parameter
replica-stacked and all replicas in one batched pass (the fast path), and `ShardedEngine`
(sharded.py) for any other plan (tensor or pipeline parallel, or a model with experts), each
GPU with its own shards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from . import model as M
from .cluster import Topology
from .config import RunConfig
from .device import SimGpu
from .model import ModelConfig
from .parallel import StepStats
from .plan import Plan
from .report import GpuMemory, RingSummary
from .steptrace import Fault
from .timing import HardwarePreset
from .trace import StepTrace


@dataclass
class StepCosts:
    """What the trainer measured around the passes, for the step's trace."""

    step: int  # the step just done (faults are keyed by step)
    data_wall: float  # seconds taking the batch from the loaders
    batch_bytes: int  # one data-parallel replica's batch: token ids and targets
    tokens: int  # tokens of the whole batch
    checkpoint_bytes: int = 0  # written at the end of this step (0: none)
    checkpoint_wall: float | None = None
    faults: Sequence[Fault] = ()


@dataclass
class StepOutcome:
    trace: StepTrace
    ring: RingSummary  # the gradient all-reduce, summed over its groups


class StepEngine(Protocol):
    config: RunConfig
    model_cfg: ModelConfig
    last_stats: StepStats  # of the last step (a step's pipeline, bubble, activation peaks)
    draws_faults: bool  # stragglers, data stalls and cut links are drawn on its lanes

    # ---- state ------------------------------------------------------------------------
    def fresh(self) -> None:
        """Weights initialised from the run's seed (the same numbers under every plan);
        optimizer state zero."""

    def bind(self, gpus: list[SimGpu]) -> None:
        """Point each simulated GPU at the arrays it holds (and its activation bytes)."""

    @property
    def opt_t(self) -> int:
        """AdamW's step count."""

    def state_arrays(self) -> dict[str, np.ndarray]:
        """One full copy of the parameters and AdamW moments ("p.", "m.", "v." + name),
        whatever the plan, so a checkpoint resumes under any other."""

    def restore(self, arrays: Mapping[str, np.ndarray], opt_t: int) -> None:
        """Load state_arrays() (of any plan) into every GPU's arrays."""

    # ---- the step ---------------------------------------------------------------------
    def forward_backward(self, idx: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, Any]:
        """Every GPU's forward and backward on its part of the batch (idx, targets: (dp, B,
        T), each data-parallel replica's sequences). Returns each GPU's loss (gpus,) and the
        step's work record, which the calls below take."""

    def sync_grads(self, work: Any) -> None:
        """Average the gradients over the GPUs that hold the same parameters (ring
        all-reduces over the real topology)."""

    def clip(self, work: Any, max_norm: float) -> float:
        """Clip by the global gradient norm (each parameter counted once); returns the norm
        before clipping."""

    def update(self, work: Any, lr: float) -> None:
        """One AdamW update of every GPU's own arrays: after sync_grads, with the averaged
        gradients (every copy the same bits); without it, each copy with its own."""

    def trace(self, work: Any, costs: StepCosts) -> StepOutcome:
        """The step's lanes on the simulated hardware; updates last_stats."""

    # ---- looking inside ---------------------------------------------------------------
    def probe(
        self, prompt_ids: np.ndarray, weights_name: str
    ) -> tuple[np.ndarray, np.ndarray, list[tuple[list[int], list[float]]]]:
        """Next-token logits (V,) after the prompt, the full parameter `weights_name`, and
        for a model with experts where each layer's router sends the prompt's last token
        (experts, gates), layer by layer (empty for a dense model)."""

    def full_params(self, copy: int = 0) -> dict[str, np.ndarray]:
        """One full copy of the parameters, in the fixed order (gathered from shards): as
        data-parallel copy `copy` holds them (0 .. copies - 1; after every averaged step
        all copies hold the same)."""

    @property
    def copies(self) -> int:
        """How many whole copies of the model the GPUs hold between them."""

    def params_l2(self) -> float:
        """L2 norm of all the parameters, each counted once."""

    def copies_identical(self) -> bool:
        """Do all GPUs holding the same parameters (or shard) hold the same bits?"""

    def memory(self, gpus: list[SimGpu]) -> list[GpuMemory]:
        """Each GPU's memory account now."""


class EngineSetup:
    """What every engine is built from, kept as each engine reads it; then the engine's own
    `_build()` lays the model out."""

    def __init__(
        self,
        config: RunConfig,
        model_cfg: ModelConfig,
        plan: Plan,
        topology: Topology,
        preset: HardwarePreset,
    ) -> None:
        self.config, self.model_cfg, self.plan = config, model_cfg, plan
        self.topology, self.preset = topology, preset
        self.shapes = M.param_shapes(model_cfg)
        self._build()

    def _build(self) -> None:
        raise NotImplementedError
