"""Run configuration: everything a training run is a function of, plus how it is kept.

A run is deterministic given the fields in `RunConfig.identity()`; the rest (how often to
checkpoint, how many loader threads, the parallel plan) change how it is carried out, not its
numbers.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from .plan import plan_problems


@dataclass(frozen=True)
class RunConfig:
    # Reproducibility
    seed: int = 0
    # Simulated cluster: `gpus` in total, spread evenly over `servers`.
    gpus: int = 32
    servers: int = 4
    leaves: int = 2
    spines: int = 2
    preset: str = "h100"
    # Model (word-level decoder-only transformer)
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    block_size: int = 16  # tokens of context (T)
    experts: int = 0  # experts per MoE layer; 0 = a dense MLP
    top_k: int = 2  # experts each token is routed to (with experts > 0)
    dtype: str = "float32"
    # Optimisation
    batch_size: int = 128  # sequences per step, all GPUs together (the global batch)
    lr: float = 3e-3
    warmup_steps: int = 20
    weight_decay: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.99
    eps: float = 1e-8
    grad_clip: float = 1.0
    # Data
    data: str | None = None  # a file or folder of the user's own text; None = built-in stories
    corpus_stories: int = 1600
    # How the run is carried out (not part of its identity)
    loader_workers: int = 2
    prefetch: int = 4
    checkpoint_every: int = 50
    keep_checkpoints: int = 3
    probe_every: int = 5
    # The parallel plan (app/engine/plan.py): dp = gpus / (tp * pp) data-parallel copies of
    # a pipeline of pp stages, each layer split over tp GPUs, experts over ep GPUs; each
    # replica's batch is cut into `microbatches`, run in the `schedule`'s order.
    tp: int = 1
    pp: int = 1
    ep: int = 1
    microbatches: int = 1
    schedule: str = "1f1b"

    _NOT_IDENTITY = (
        "loader_workers",
        "prefetch",
        "checkpoint_every",
        "keep_checkpoints",
        "probe_every",
        "preset",
        "leaves",
        "spines",
        "servers",
        "gpus",  # data parallelism does not change the maths: same global batch, same sums
        # Nor does the plan: the same sums, cut and carried differently.
        "tp",
        "pp",
        "ep",
        "microbatches",
        "schedule",
    )

    def __post_init__(self) -> None:
        problems = []
        if self.gpus < 1:
            problems.append("gpus must be at least 1")
        if self.servers < 1:
            problems.append("servers must be at least 1")
        elif self.gpus % self.servers:
            problems.append(f"gpus ({self.gpus}) must divide evenly over servers ({self.servers})")
        if self.leaves < 1 or self.spines < 1:
            problems.append("leaves and spines must be at least 1")
        if self.n_embd % self.n_head:
            problems.append("n_embd must be divisible by n_head")
        if self.dtype not in ("float32", "float64"):
            problems.append("dtype must be float32 or float64")
        for name in ("lr", "eps"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                problems.append(f"{name} must be a positive finite number, got {v!r}")
        for name in ("weight_decay", "grad_clip"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                problems.append(f"{name} must be a finite number, 0 or more, got {v!r}")
        if not (0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            problems.append("beta1 and beta2 must be in [0, 1)")
        if self.checkpoint_every < 0:
            problems.append("checkpoint_every must be 0 (off) or more")
        if self.keep_checkpoints < 1:
            problems.append("keep_checkpoints must be at least 1")
        if self.loader_workers < 1 or self.prefetch < 1:
            problems.append("loader_workers and prefetch must be at least 1")
        problems += plan_problems(
            gpus=self.gpus,
            servers=self.servers,
            n_layer=self.n_layer,
            n_head=self.n_head,
            n_embd=self.n_embd,
            batch_size=self.batch_size,
            tp=self.tp,
            pp=self.pp,
            ep=self.ep,
            microbatches=self.microbatches,
            schedule=self.schedule,
            experts=self.experts,
            top_k=self.top_k,
        )
        if problems:
            raise ValueError("; ".join(problems))

    @classmethod
    def batch_for(cls, gpus: int, requested: int | None = None) -> int:
        """The global batch for `gpus` GPUs: the one asked for, else the default, or one
        sequence per GPU when there are more GPUs than that; rounded up to a multiple of
        the GPU count so every GPU gets the same share."""
        wanted = requested or max(cls.batch_size, gpus)
        return -(-wanted // gpus) * gpus

    @property
    def gpus_per_server(self) -> int:
        return self.gpus // self.servers

    @property
    def dp(self) -> int:
        """Data-parallel replicas: gpus / (tp * pp)."""
        return self.gpus // (self.tp * self.pp)

    @property
    def micro_batch(self) -> int:
        """Sequences each data-parallel replica works on in one microbatch."""
        return self.batch_size // self.dp // self.microbatches

    def identity(self) -> dict[str, Any]:
        """The fields that decide the run's numbers (model, data, seed, batch, optimiser).

        A dense model (experts 0) leaves out experts and top_k, which do not touch its
        numbers: dense runs keep the identity they had before models could have experts."""
        out = {k: v for k, v in asdict(self).items() if k not in self._NOT_IDENTITY}
        if self.experts == 0:
            del out["experts"], out["top_k"]
        return out

    def config_hash(self) -> str:
        blob = json.dumps(self.identity(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def with_(self, **changes: Any) -> RunConfig:
        return replace(self, **changes)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunConfig:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})
