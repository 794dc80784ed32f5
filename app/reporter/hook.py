"""A DDP communication hook that does what DDP does by default (average each gradient bucket
with an all-reduce) and measures it: when each bucket's all-reduce was launched and when it
finished, and its bytes. Wall clock on a CPU; on a GPU, CUDA events recorded on the streams
the collective is ordered on, read later by the reporter's sender thread, so the training
loop never waits for them.

Imports torch only when installed on a model (the server never needs it).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Bucket:
    nbytes: int
    elements: int
    launched: float  # perf_counter seconds
    done: float | None = None
    start_event: Any = None  # torch.cuda.Event on a GPU
    end_event: Any = None


@dataclass
class CommState:
    """What the hook saw since the reporter last took it (one step's buckets)."""

    process_group: Any = None
    buckets: list[Bucket] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    failed: int = 0  # buckets whose measuring failed (the all-reduce itself still ran)

    def take(self) -> list[Bucket]:
        with self.lock:
            out, self.buckets = self.buckets, []
        return out


def timed_allreduce_hook(state, bucket):  # noqa: ANN001, ANN201 - DDP checks annotations
    """DDP's default all-reduce hook, with each bucket's launch, end and bytes recorded.
    (Unannotated: DDP refuses a hook whose annotations are not torch's own types.)"""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    record: Bucket | None = None
    try:
        buf = bucket.buffer()
        record = Bucket(
            nbytes=buf.numel() * buf.element_size(),
            elements=buf.numel(),
            launched=time.perf_counter(),
        )
        if buf.is_cuda:
            import torch

            record.start_event = torch.cuda.Event(enable_timing=True)
            record.start_event.record()
    except Exception:
        state.failed += 1
        record = None
    fut = default_hooks.allreduce_hook(state.process_group, bucket)
    if record is None:
        return fut

    def finished(f: Any) -> Any:
        try:
            record.done = time.perf_counter()
            if record.start_event is not None:
                import torch

                record.end_event = torch.cuda.Event(enable_timing=True)
                record.end_event.record()
            with state.lock:
                state.buckets.append(record)
        except Exception:
            state.failed += 1
        return f.value()

    return fut.then(finished)


def install(model: Any, process_group: Any = None) -> CommState | None:
    """Register the measuring hook on a DistributedDataParallel model; None for anything else
    (FSDP and plain modules report their compute times without the all-reduce)."""
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:
        return None
    if not isinstance(model, DistributedDataParallel):
        return None
    state = CommState(process_group=process_group)
    model.register_comm_hook(state, timed_allreduce_hook)
    return state
