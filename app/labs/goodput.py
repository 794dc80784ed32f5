"""Goodput: what interruptions cost a run, and the checkpoint interval that costs least.

A synchronous job stops whole when any of its GPUs fails. Each interruption costs the
restart (find the failure, replace the machine, relaunch, load the last checkpoint) and the
work done since that checkpoint, on average half an interval; every checkpoint written costs
its write. Young's first-order rule (Young 1974, "A first order approximation to the optimum
checkpoint interval", CACM 17(9)) puts the interval where the two balance:

    interval = sqrt(2 x write time x mean time between interruptions)

With T hours of useful work, a write of d every interval t, and interruptions every M on
average, each costing R + t/2, the wall-clock time W satisfies W = T (1 + d/t) + (W / M)
(R + t/2), so the share of W that trains is

    effective = (1 - (R + t/2) / M) / (1 + d / t)

(first order, as Young's; Daly 2006 refines it when the interval nears M). The job's mean
time between interruptions follows from the per-GPU-hour rate of Llama 3's pre-training (419
unexpected interruptions in 54 days on 16,384 H100s), over its GPUs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from .memory import FieldError

# A checkpoint holds the weights (BF16, 2 bytes) and AdamW's FP32 master copy and two
# moments (12 bytes): 14 bytes a parameter (the gradients are not kept).
CHECKPOINT_BYTES_PER_PARAM = 14.0
# Llama 3's checkpoints went to Tectonic, which sustains 2 TB/s (peak 7 TB/s).
STORAGE_TBPS = 2.0
STORAGE_SOURCE = (
    "The Llama 3 Herd of Models (Meta, 2024), section 3.3.1: Tectonic sustains 2 TB/s, "
    "peak 7 TB/s, for checkpoints of 1 MB to 4 GB a GPU"
)
# A plain restart: find the failure, swap the machine, relaunch every rank, load the
# checkpoint. Assumed; systems built to shorten it report 20 s (TrainMover, 1,024 GPUs)
# to 150 s (FlashRecovery, 4,800 devices).
RESTART_S = 600.0
RESTART_SOURCE = (
    "Restart assumed 10 minutes; recovery systems report 20 s (TrainMover, arXiv 2412.12636, "
    "1,024 GPUs) to 150 s (FlashRecovery, arXiv 2509.03047, 4,800 devices)"
)
YOUNG_SOURCE = (
    "Young 1974, A first order approximation to the optimum checkpoint interval, CACM 17(9)"
)
RESTART_S_MAX = 7 * 86400.0
STORAGE_TBPS_MIN = 1e-6
STORAGE_TBPS_MAX = 1e4


@dataclass
class Goodput:
    """What interruptions cost a run of `compute_hours` of useful work on its GPUs."""

    mtbi_hours: float  # the job's mean time between interruptions
    checkpoint_bytes: float
    checkpoint_write_s: float  # one checkpoint, at the storage's sustained rate
    interval_s: float  # Young's interval (or the one given)
    restart_s: float
    effective: float  # the share of wall-clock time that trains
    wall_hours: float  # the run with its restarts, rework and checkpoint writes
    lost_hours: float  # wall_hours - compute_hours
    interruptions: float  # expected over wall_hours

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def young_interval(write_s: float, mtbi_s: float) -> float:
    """Young's checkpoint interval: sqrt(2 x write time x mean time between interruptions)."""
    return math.sqrt(2.0 * write_s * mtbi_s)


def goodput(
    params: float,
    gpus: int,
    compute_hours: float,
    rate_per_gpu_hour: float,
    *,
    storage_tbps: float = STORAGE_TBPS,
    restart_s: float = RESTART_S,
    interval_s: float | None = None,
) -> Goodput:
    """The run's goodput: `compute_hours` of useful wall-clock time on `gpus` GPUs that each
    fail at `rate_per_gpu_hour`; checkpoints of `params` parameters written at
    `storage_tbps`; each restart `restart_s`; checkpoints every `interval_s` (default:
    Young's). Raises FieldError naming a bad input, or when interruptions come faster than
    a restart and the rework after it (the run would never finish)."""
    if not STORAGE_TBPS_MIN <= storage_tbps <= STORAGE_TBPS_MAX:  # also refuses NaN
        raise FieldError(
            "storage_tbps", f"must be from {STORAGE_TBPS_MIN:g} to {STORAGE_TBPS_MAX:g} TB/s"
        )
    if not 0 <= restart_s <= RESTART_S_MAX:
        raise FieldError("restart_s", f"must be from 0 to {RESTART_S_MAX:g} seconds")
    if interval_s is not None and not 1 <= interval_s <= 365 * 86400:
        raise FieldError("interval_s", "must be from 1 second to a year")
    mtbi_s = 3600.0 / (rate_per_gpu_hour * gpus)
    ckpt = CHECKPOINT_BYTES_PER_PARAM * params
    write_s = ckpt / (storage_tbps * 1e12)
    every = young_interval(write_s, mtbi_s) if interval_s is None else float(interval_s)
    rework = (restart_s + every / 2.0) / mtbi_s
    if rework >= 1:
        raise FieldError(
            "gpus",
            f"an interruption every {mtbi_s / 60:,.0f} minutes leaves no time to train: "
            f"each costs a {restart_s / 60:,.0f}-minute restart and half an interval of work",
        )
    effective = (1.0 - rework) / (1.0 + write_s / every)
    wall = compute_hours / effective
    return Goodput(
        mtbi_hours=mtbi_s / 3600.0,
        checkpoint_bytes=ckpt,
        checkpoint_write_s=write_s,
        interval_s=every,
        restart_s=restart_s,
        effective=effective,
        wall_hours=wall,
        lost_hours=wall - compute_hours,
        interruptions=wall * 3600.0 / mtbi_s,
    )
