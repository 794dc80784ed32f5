"""`Reporter`: what a real torch.distributed training script adds to show its run on a
`trainingrun watch` server.

    from app.reporter import Reporter

    reporter = Reporter("http://127.0.0.1:8000", model=ddp_model, optimizer=opt)
    for x, y in batches:
        with reporter.step(tokens=x.numel()) as s:
            with s.forward():
                loss = loss_fn(ddp_model(x), y)
            with s.backward():
                loss.backward()
            with s.optimizer():
                opt.step()
                opt.zero_grad()
            s.loss = loss  # a tensor is fine: it is read later, off the training thread
    reporter.close()

Every rank does the same. Each step is timed where it runs: wall clock on a CPU, CUDA events
on a GPU (read later by the sender thread, so the loop never synchronises for them); a DDP
model gets a communication hook that measures its gradient all-reduce and its bytes
(app/reporter/hook.py). Reports go into a bounded buffer that a background thread sends
(app/reporter/sender.py): a server that is away, slow or gone costs the job nothing but the
reports it drops, which are counted. Reporting to a server that is not on this machine's
loopback needs its token (`token=` or TRAININGRUN_TOKEN); without one the reporter says so
once and stays off, and the job trains on.

This module imports torch only when it is given a model or finds torch.distributed running,
so the server side never needs it.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import sys
import time
import uuid
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from app.reporter.hook import Bucket, CommState, install
from app.reporter.sender import Sender

log = logging.getLogger("trainingrun.attach")

PROTOCOL = 2  # app/protocol.py PROTOCOL_VERSION
MEMORY_EVERY = 50  # steps between readings of the model's memory


def _loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _dist() -> Any:
    """torch.distributed when torch is already imported and a process group is up."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        dist = torch.distributed
        return dist if dist.is_available() and dist.is_initialized() else None
    except Exception:
        return None


class _Phase:
    """One timed phase of a step: perf_counter on a CPU, CUDA events on a GPU."""

    __slots__ = ("t0", "t1", "e0", "e1")

    def __init__(self) -> None:
        self.t0 = self.t1 = 0.0
        self.e0: Any = None
        self.e1: Any = None


class StepTimer:
    """A step being measured: `with s.forward(): ...`, `with s.backward(): ...`,
    `with s.optimizer(): ...`, and `s.loss = loss`."""

    def __init__(self, reporter: Reporter, step: int, tokens: int) -> None:
        self._r = reporter
        self.step = step
        self.tokens = tokens
        self.loss: Any = None
        self.grad_norm: Any = None
        self.phases: dict[str, _Phase] = {}
        self.whole = _Phase()
        self.data_s = 0.0
        self.buckets: list[Bucket] = []
        self.lr: float | None = None
        self.tokens_total = 0

    @contextmanager
    def phase(self, name: str) -> Any:
        p = self.phases.setdefault(name, _Phase())
        self._r._mark(p, start=True)
        try:
            yield p
        finally:
            self._r._mark(p, start=False)

    def forward(self) -> Any:
        return self.phase("forward")

    def backward(self) -> Any:
        return self.phase("backward")

    def optimizer(self) -> Any:
        return self.phase("optimizer")


class Reporter:
    """Reports this rank's steps to a `trainingrun watch` server; see the module's text."""

    def __init__(
        self,
        url: str | None,
        *,
        model: Any = None,
        optimizer: Any = None,
        run_id: str | None = None,
        token: str | None = None,
        buffer: int = 4096,
        interval_s: float = 0.25,
        timeout_s: float = 2.0,
    ) -> None:
        self.url = url
        self.model = model
        self.optimizer_obj = optimizer
        self._step = 0
        self._tokens_total = 0
        self._last_end: float | None = None
        self._warned: set[str] = set()
        self._memory: dict[str, int] = {}
        self.comm: CommState | None = None
        self.loop_s = 0.0  # time spent in the reporter's own code on the training thread
        self.sender: Sender | None = None
        dist = _dist()
        env = os.environ
        self.rank = dist.get_rank() if dist else int(env.get("RANK", 0))
        self.world_size = dist.get_world_size() if dist else int(env.get("WORLD_SIZE", 1))
        self.local_rank = int(env.get("LOCAL_RANK", 0))
        self.local_world_size = int(env.get("LOCAL_WORLD_SIZE", self.world_size))
        self.node = int(env.get("GROUP_RANK", self.rank // max(1, self.local_world_size)))
        self.backend = str(dist.get_backend()) if dist else "none"
        self.device = self._device_type(model)
        self.cuda = self.device == "cuda"
        if not url:
            return  # reporting off: every call below is a no-op
        host = urlsplit(url).hostname or ""
        token = token or env.get("TRAININGRUN_TOKEN")
        if not _loopback(host) and not token:
            self._warn(
                "token",
                f"not reporting to {url}: a server that is not on this machine needs its "
                "token (Reporter(url, token=...) or TRAININGRUN_TOKEN); training goes on",
            )
            return
        self.run_id = run_id or env.get("TRAININGRUN_RUN_ID") or self._agree_run_id(dist)
        if model is not None:
            try:
                self.comm = install(model)
            except Exception as exc:
                self._warn("hook", f"the all-reduce will not be measured: {exc}")
        try:
            self.sender = Sender(
                url,
                self._head,
                self._resolve,
                capacity=buffer,
                interval_s=interval_s,
                timeout_s=timeout_s,
                token=token,
            )
        except ValueError as exc:
            self._warn("url", f"not reporting: {exc}")

    # --- who is reporting ---------------------------------------------------------------------

    @staticmethod
    def _device_type(model: Any) -> str:
        try:
            return next(model.parameters()).device.type if model is not None else "cpu"
        except Exception:
            return "cpu"

    def _agree_run_id(self, dist: Any) -> str:
        """Rank 0 names the run and tells the others (once, at start)."""
        name = f"job-{time.strftime('%H%M%S')}-{uuid.uuid4().hex[:6]}"
        if dist is None or self.world_size == 1:
            return name
        try:
            box = [name if self.rank == 0 else None]
            dist.broadcast_object_list(box, src=0)
            return str(box[0])
        except Exception as exc:
            self._warn("run_id", f"ranks could not agree a run id ({exc}); set TRAININGRUN_RUN_ID")
            port = os.environ.get("MASTER_PORT", "0")
            return f"job-{os.environ.get('MASTER_ADDR', 'local')}-{port}"

    def _head(self) -> dict[str, Any]:
        return {
            "type": "attach",
            "protocol": PROTOCOL,
            "run_id": self.run_id,
            "rank": {
                "rank": self.rank,
                "world_size": self.world_size,
                "local_rank": self.local_rank,
                "local_world_size": self.local_world_size,
                "node": self.node,
                "host": socket.gethostname()[:128] or "?",
                "backend": self.backend[:64] or "none",
                "device": self.device[:64] or "cpu",
                **self._memory,
            },
        }

    # --- the training loop's side -------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self.sender is not None

    @contextmanager
    def step(self, tokens: int = 0, step: int | None = None) -> Any:
        """Measure one training step (see the module's text). Never raises on its own
        account: a reporter that cannot measure or send leaves the step alone."""
        t_in = time.perf_counter()
        self._step = self._step + 1 if step is None else step
        timer = StepTimer(self, self._step, tokens)
        if self.enabled:
            try:
                now = t_in
                timer.data_s = 0.0 if self._last_end is None else now - self._last_end
                if self.comm is not None:
                    self.comm.take()  # buckets from outside a step are not this step's
                self._mark(timer.whole, start=True)
            except Exception as exc:
                self._warn("step", f"could not time a step: {exc}")
        self.loop_s += time.perf_counter() - t_in
        yield timer
        t_out = time.perf_counter()
        if self.enabled:
            try:
                self._finish(timer)
            except Exception as exc:
                self._warn("step", f"could not report a step: {exc}")
        self.loop_s += time.perf_counter() - t_out

    def _mark(self, p: _Phase, *, start: bool) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if start:
            p.t0 = now
        else:
            p.t1 = now
        self.loop_s += time.perf_counter() - now
        if self.cuda:
            import torch

            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            if start:
                p.e0 = ev
            else:
                p.e1 = ev

    def _finish(self, timer: StepTimer) -> None:
        self._mark(timer.whole, start=False)
        self._last_end = time.perf_counter()
        if self.comm is not None:
            timer.buckets = self.comm.take()
        self._tokens_total += int(timer.tokens)
        timer.tokens_total = self._tokens_total
        if self.optimizer_obj is not None:
            try:
                timer.lr = float(self.optimizer_obj.param_groups[0]["lr"])
            except Exception:
                timer.lr = None
        if timer.step == 1 or timer.step % MEMORY_EVERY == 0:
            self._read_memory()
        assert self.sender is not None
        if not self.cuda:
            # On a CPU every figure is ready now: buffer it as a flat dict of numbers, which
            # the garbage collector does not track, so thousands of them waiting for a server
            # that is away cost the job nothing.
            self.sender.put(self._resolve(timer))
            return
        loss = timer.loss
        if loss is not None and hasattr(loss, "detach"):
            timer.loss = loss.detach()  # read in the sender thread, not here
        self.sender.put(timer)

    def report(
        self, step: int, loss: float | None = None, tokens: int = 0, **seconds: float
    ) -> None:
        """Report a step measured by the script itself: `forward_s`, `backward_s`,
        `optimizer_s`, `step_s`, `allreduce_s`, `allreduce_bytes`, ... as in
        protocol.RankStep."""
        if not self.enabled:
            return
        self._tokens_total += int(tokens)
        item = {"step": int(step), "loss": loss, "tokens": int(tokens)}
        item["tokens_total"] = self._tokens_total
        item.update(seconds)
        assert self.sender is not None
        self.sender.put(item)

    def close(self, timeout_s: float = 2.0) -> None:
        """Send what is still buffered (for at most `timeout_s`) and stop."""
        if self.sender is not None:
            self.sender.close(timeout_s)

    @property
    def cost_s(self) -> float:
        """Seconds reporting has cost this process: its own time in the training loop plus
        the CPU time of its sender thread (bench/attach.py and the tests read it)."""
        return self.loop_s + (self.sender.cpu_s if self.sender else 0.0)

    @property
    def dropped(self) -> int:
        return self.sender.dropped if self.sender else 0

    @property
    def sent(self) -> int:
        return self.sender.sent if self.sender else 0

    # --- the sender thread's side -------------------------------------------------------------

    def _seconds(self, p: _Phase | None) -> float:
        if p is None:
            return 0.0
        if p.e0 is not None and p.e1 is not None:
            p.e1.synchronize()  # the sender's thread waits, not the training loop
            return max(0.0, p.e0.elapsed_time(p.e1) / 1000.0)
        return max(0.0, p.t1 - p.t0)

    def _resolve(self, item: Any) -> dict[str, Any] | None:
        if isinstance(item, dict):
            return item
        t: StepTimer = item
        out: dict[str, Any] = {
            "step": t.step,
            "tokens": int(t.tokens),
            "tokens_total": t.tokens_total,
            "data_s": max(0.0, t.data_s),
            "step_s": self._seconds(t.whole),
        }
        for name in ("forward", "backward", "optimizer"):
            out[f"{name}_s"] = self._seconds(t.phases.get(name))
        loss = _number(t.loss)
        if loss is not None:
            out["loss"] = loss
        grad_norm = _number(t.grad_norm)
        if grad_norm is not None and grad_norm >= 0:
            out["grad_norm"] = grad_norm
        if t.lr is not None and t.lr == t.lr and t.lr >= 0:
            out["lr"] = t.lr
        if t.buckets:
            out.update(self._allreduce(t))
        return out

    def _allreduce(self, t: StepTimer) -> dict[str, Any]:
        """The step's all-reduce: bytes, calls, its span from the first launch to the last
        end, and what the rank still waited for after its backward compute was done (from
        the last bucket's launch to the end of the backward call)."""
        buckets = t.buckets
        nbytes = sum(b.nbytes for b in buckets)
        elements = sum(b.elements for b in buckets)
        bwd = t.phases.get("backward")
        first, last = buckets[0], buckets[-1]
        if self.cuda and first.start_event is not None and last.end_event is not None:
            last.end_event.synchronize()
            span = first.start_event.elapsed_time(last.end_event) / 1000.0
            exposed = 0.0
            if bwd is not None and bwd.e1 is not None and last.start_event is not None:
                bwd.e1.synchronize()
                exposed = last.start_event.elapsed_time(bwd.e1) / 1000.0
        else:
            end = max(b.done or b.launched for b in buckets)
            span = end - first.launched
            exposed = (
                (bwd.t1 - last.launched) if bwd is not None and bwd.t1 else end - last.launched
            )
        return {
            "allreduce_s": max(0.0, span),
            "allreduce_exposed_s": max(0.0, exposed),
            "allreduce_bytes": nbytes,
            "allreduce_elements": elements,
            "allreduce_calls": len(buckets),
        }

    def _read_memory(self) -> None:
        """The rank's weights, gradients and optimizer state in bytes, and the device's
        memory on a GPU: read now and then, sent with every batch."""
        model = self.model
        if model is None:
            return
        try:
            params = list(model.parameters())
            weights = sum(p.numel() * p.element_size() for p in params)
            grads = sum(
                p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None
            )
            opt = 0
            if self.optimizer_obj is not None:
                for state in self.optimizer_obj.state.values():
                    for v in state.values():
                        if hasattr(v, "numel"):
                            opt += v.numel() * v.element_size()
            mem = {
                "params": sum(p.numel() for p in params),
                "weights_bytes": weights,
                "grads_bytes": grads,
                "optimizer_bytes": opt,
            }
            if self.cuda:
                import torch

                dev = next(model.parameters()).device
                mem["device_memory_bytes"] = torch.cuda.get_device_properties(dev).total_memory
                mem["peak_memory_bytes"] = torch.cuda.max_memory_allocated(dev)
            self._memory = mem
        except Exception as exc:
            self._warn("memory", f"could not read the model's memory: {exc}")

    def _warn(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            print(f"trainingrun reporter (rank {getattr(self, 'rank', '?')}): {message}",
                  file=sys.stderr, flush=True)  # fmt: skip


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value.item() if hasattr(value, "item") else value)
    except Exception:
        return None
    return number if number == number and abs(number) < 1e30 else None
