"""The parallel plan: which GPU does what.

A run's GPUs are laid out as dp x pp x tp = gpus. Tensor-parallel ranks are innermost, so a
TP group is `tp` consecutive GPUs (the same server: its traffic stays on NVLink); pipeline
stages come next, and data-parallel copies of the whole pipeline are outermost:

    gpu = d * (pp * tp) + s * tp + t      (d: data-parallel rank, s: stage, t: tensor rank)

Expert parallelism splits each data-parallel group into EP groups of `ep` consecutive
data-parallel ranks (same stage, same tensor rank); each GPU of an EP group holds
experts / ep of every MoE layer's experts, and the GPUs that hold the same experts (same
d % ep) form the expert-data-parallel group that averages those experts' gradients.

The rules a plan must follow are written once here (`plan_problems`) and read by RunConfig
and by the command line, each naming the fields in its own words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

SCHEDULES = ("gpipe", "1f1b")


def plan_problems(
    *,
    gpus: int,
    servers: int,
    n_layer: int,
    n_head: int,
    n_embd: int,
    batch_size: int,
    tp: int,
    pp: int,
    ep: int,
    microbatches: int,
    schedule: str,
    experts: int,
    top_k: int,
    names: Mapping[str, str] | None = None,
) -> list[str]:
    """Every rule of a parallel plan that these values break, one message each.

    `names` renames fields in the messages (the command line says --layers for n_layer)."""
    names = names or {}

    def n(field: str) -> str:
        return names.get(field, field)

    out: list[str] = []
    for field, v in (("tp", tp), ("pp", pp), ("ep", ep), ("microbatches", microbatches)):
        if v < 1:
            out.append(f"{n(field)} must be at least 1, got {v}")
    if experts < 0:
        out.append(f"{n('experts')} must be 0 (a dense MLP) or more, got {experts}")
    if top_k < 1:
        out.append(f"{n('top_k')} must be at least 1, got {top_k}")
    if schedule not in SCHEDULES:
        out.append(f"{n('schedule')} must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    if out or gpus < 1 or servers < 1 or gpus % servers:
        return out  # the rest divide by these
    per_server = gpus // servers
    if gpus % (tp * pp):
        out.append(f"{n('tp')} * {n('pp')} ({tp * pp}) must divide {n('gpus')} ({gpus})")
        return out
    dp = gpus // (tp * pp)
    if n_head % tp:
        out.append(f"{n('tp')} ({tp}) must divide {n('n_head')} ({n_head})")
    if (4 * n_embd) % tp:
        out.append(f"{n('tp')} ({tp}) must divide the MLP width ({4 * n_embd})")
    if tp > per_server or per_server % tp:
        out.append(
            f"{n('tp')} ({tp}) must divide the GPUs per server ({per_server}): "
            "a tensor-parallel group stays inside one server, on NVLink"
        )
    if n_layer % pp:
        out.append(f"{n('pp')} ({pp}) must divide {n('n_layer')} ({n_layer})")
    if dp % ep:
        out.append(
            f"{n('ep')} ({ep}) must divide dp ({dp} = {n('gpus')} / ({n('tp')} * {n('pp')}))"
        )
    if experts == 0 and ep > 1:
        out.append(f"{n('ep')} ({ep}) needs experts: set {n('experts')} to a multiple of it")
    elif experts > 0 and experts % ep:
        out.append(f"{n('ep')} ({ep}) must divide {n('experts')} ({experts})")
    if experts > 0 and top_k > experts:
        out.append(f"{n('top_k')} ({top_k}) must be at most {n('experts')} ({experts})")
    if batch_size < 1 or batch_size % dp:
        shown = (
            f"{n('gpus')} ({gpus})"
            if dp == gpus
            else f"dp ({dp} = {n('gpus')} / ({n('tp')} * {n('pp')}))"
        )
        out.append(f"{n('batch_size')} ({batch_size}) must be a positive multiple of {shown}")
    elif (batch_size // dp) % microbatches:
        out.append(
            f"{n('microbatches')} ({microbatches}) must divide the batch per data-parallel "
            f"replica ({batch_size // dp} = {n('batch_size')} {batch_size} / dp {dp})"
        )
    return out


@dataclass(frozen=True)
class Plan:
    """A checked layout of `gpus` GPUs: see the module docstring for the mapping."""

    gpus: int
    gpus_per_server: int
    tp: int = 1
    pp: int = 1
    ep: int = 1
    microbatches: int = 1
    schedule: str = "1f1b"

    def __post_init__(self) -> None:
        if self.gpus % (self.tp * self.pp) or self.dp % self.ep:
            raise ValueError(
                f"plan tp {self.tp} x pp {self.pp} (ep {self.ep}) does not fit {self.gpus} GPUs"
            )

    @classmethod
    def of(cls, config) -> Plan:
        """The plan of a RunConfig (already validated)."""
        return cls(
            gpus=config.gpus,
            gpus_per_server=config.gpus_per_server,
            tp=config.tp,
            pp=config.pp,
            ep=config.ep,
            microbatches=config.microbatches,
            schedule=config.schedule,
        )

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    @property
    def data_parallel_only(self) -> bool:
        return self.tp == 1 and self.pp == 1

    def gpu(self, d: int, s: int, t: int) -> int:
        """The GPU of data-parallel rank d, pipeline stage s, tensor rank t."""
        return (d * self.pp + s) * self.tp + t

    def coords(self, g: int) -> tuple[int, int, int]:
        """(data-parallel rank, stage, tensor rank) of GPU g."""
        t = g % self.tp
        s = (g // self.tp) % self.pp
        return g // (self.tp * self.pp), s, t

    def ep_rank(self, g: int) -> int:
        return self.coords(g)[0] % self.ep

    def stage_gpus(self, s: int) -> list[int]:
        """The GPUs of stage s in the order of a stage's rows: tensor rank, then dp rank."""
        return [self.gpu(d, s, t) for t in range(self.tp) for d in range(self.dp)]

    @cached_property
    def tp_groups(self) -> list[list[int]]:
        """One per (dp rank, stage): the GPUs that split each of the stage's layers."""
        return [
            [self.gpu(d, s, t) for t in range(self.tp)]
            for d in range(self.dp)
            for s in range(self.pp)
        ]

    @cached_property
    def dp_groups(self) -> list[list[int]]:
        """One per (stage, tensor rank): the GPUs holding the same shard, which average its
        gradients."""
        return [
            [self.gpu(d, s, t) for d in range(self.dp)]
            for s in range(self.pp)
            for t in range(self.tp)
        ]

    @cached_property
    def pipelines(self) -> list[list[int]]:
        """One per (dp rank, tensor rank): the GPUs of stages 0..pp-1 that pass activations
        forward and gradients back."""
        return [
            [self.gpu(d, s, t) for s in range(self.pp)]
            for d in range(self.dp)
            for t in range(self.tp)
        ]

    @cached_property
    def ep_groups(self) -> list[list[int]]:
        """One per (stage, tensor rank, block of ep dp ranks): the GPUs that share out the
        experts and send each other tokens."""
        return [
            [self.gpu(b * self.ep + e, s, t) for e in range(self.ep)]
            for s in range(self.pp)
            for t in range(self.tp)
            for b in range(self.dp // self.ep)
        ]

    @cached_property
    def expert_dp_groups(self) -> list[list[int]]:
        """One per (stage, tensor rank, ep rank): the GPUs holding the same experts."""
        return [
            [self.gpu(d, s, t) for d in range(e, self.dp, self.ep)]
            for s in range(self.pp)
            for t in range(self.tp)
            for e in range(self.ep)
        ]

    def describe(self, g: int) -> str:
        """What GPU g holds, in words (the memory account's `holds`), counting from 1 as
        people do: "replica 1, stage 2 of 2"."""
        d, s, t = self.coords(g)
        if self.data_parallel_only and self.ep == 1:
            return "replica"
        parts = [f"replica {d + 1}"]
        if self.pp > 1:
            parts.append(f"stage {s + 1} of {self.pp}")
        if self.tp > 1:
            parts.append(f"tensor shard {t + 1} of {self.tp}")
        if self.ep > 1:
            parts.append(f"expert shard {d % self.ep + 1} of {self.ep}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, int | str]:
        return {
            "dp": self.dp,
            "tp": self.tp,
            "pp": self.pp,
            "ep": self.ep,
            "microbatches": self.microbatches,
            "schedule": self.schedule,
        }
