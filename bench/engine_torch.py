"""How fast the numpy engine trains, next to the same model in PyTorch eager on the CPU.

Both sides run the same architecture (see app/engine/model.py): token + position embeddings,
pre-norm blocks with fused-qkv causal attention and a tanh-GELU MLP, final layer norm, untied
head, mean cross-entropy; both take one AdamW step per batch on random token data, float32.

Fairness: PyTorch is limited (torch.set_num_threads) to the number of threads numpy's BLAS
uses, so neither side gets more cores than the other. Both are timed step by step and report
tokens per *median* step time, which holds steady when other work shares the machine (a mean
would mostly measure the neighbours).

Run directly to print a comparison:  python bench/engine_torch.py [--seconds 3]
bench/engine.py imports numpy_tokens_per_s and torch_tokens_per_s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.engine.backend import blas_threads, set_blas_threads  # noqa: E402
from app.engine.model import Model, ModelConfig, init_params, n_params  # noqa: E402
from app.engine.optim import AdamW  # noqa: E402

WARMUP_STEPS = 3


class Rates(NamedTuple):
    """Tokens per second at the median step time, by the wall clock and by this process's
    CPU time (time.process_time): on a machine shared with other work the second is close
    to what the step would take alone, as long as the step runs on one thread."""

    wall: float
    cpu: float


def _time_loop(step, tokens_per_step: int, seconds: float) -> Rates:
    """Time `step` over about `seconds` (at least 5 steps) by both clocks at once."""
    for _ in range(WARMUP_STEPS):
        step()
    walls: list[float] = []
    cpus: list[float] = []
    start = time.perf_counter()
    while len(walls) < 5 or time.perf_counter() - start < seconds:
        w0, c0 = time.perf_counter(), time.process_time()
        step()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return Rates(
        tokens_per_step / max(statistics.median(walls), 1e-9),
        tokens_per_step / max(statistics.median(cpus), 1e-9),
    )


def numpy_tokens_per_s(
    cfg: ModelConfig, batch: int, replicas: int, seconds: float, *, cpu_time: bool = False
) -> float:
    """Training tokens per second of the numpy engine: forward_backward + AdamW step.

    `batch` is the global batch in sequences, split evenly over `replicas` simulated GPUs.
    cpu_time=True: by this process's CPU time rather than the wall clock (see Rates).
    """
    return _numpy(cfg, batch, replicas, seconds, optimizer=True, cpu_time=cpu_time)


def numpy_rates(cfg: ModelConfig, batch: int, replicas: int, seconds: float) -> Rates:
    """numpy_tokens_per_s by both clocks, from the same steps."""
    return _numpy(cfg, batch, replicas, seconds, optimizer=True, cpu_time=None)


def _numpy(
    cfg: ModelConfig,
    batch: int,
    replicas: int,
    seconds: float,
    optimizer: bool,
    cpu_time: bool | None = False,
    shared: bool = False,
) -> Any:
    """shared=True gives every replica the same microbatch, so their gradients agree as after
    an all-reduce, and takes AdamW's shared update (rows_identical=True)."""
    if batch % replicas:
        raise ValueError("batch must be a multiple of replicas")
    micro = batch // replicas
    rng = np.random.default_rng(0)
    params = init_params(cfg, seed=0, replicas=replicas)
    shape = (replicas, micro, cfg.block_size)
    idx = rng.integers(0, cfg.vocab_size, shape)
    tgt = rng.integers(0, cfg.vocab_size, shape)
    if shared:
        idx[1:], tgt[1:] = idx[0], tgt[0]
    model = Model(cfg)
    opt = AdamW(params)
    grads = {k: np.empty_like(v) for k, v in params.items()}

    def step() -> None:
        model.forward_backward(params, idx, tgt, grads=grads)
        if optimizer:
            opt.step(params, grads, 1e-3, rows_identical=shared)

    return _pick(_time_loop(step, batch * cfg.block_size, seconds), cpu_time)


def _pick(rates: Rates, cpu_time: bool | None) -> Any:
    """cpu_time None: both clocks (Rates); else the one asked for."""
    return rates if cpu_time is None else rates.cpu if cpu_time else rates.wall


def torch_rates(cfg: ModelConfig, batch: int, seconds: float) -> Rates | None:
    """torch_tokens_per_s by both clocks, from the same steps (None without torch)."""
    return torch_tokens_per_s(cfg, batch, seconds, cpu_time=None)


def torch_tokens_per_s(
    cfg: ModelConfig, batch: int, seconds: float, *, cpu_time: bool | None = False
) -> Any:
    """Training tokens per second of the same model in PyTorch eager (CPU), or None.
    cpu_time: as for numpy_tokens_per_s; None gives both clocks (Rates)."""
    try:
        import torch
        import torch.nn.functional as F
        from torch import nn
    except ImportError:
        return None

    torch.set_num_threads(blas_threads())
    torch.manual_seed(0)
    C, H, V, T = cfg.n_embd, cfg.n_head, cfg.vocab_size, cfg.block_size

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(C)
            self.qkv = nn.Linear(C, 3 * C)
            self.wo = nn.Linear(C, C)
            self.ln2 = nn.LayerNorm(C)
            self.w1 = nn.Linear(C, 4 * C)
            self.w2 = nn.Linear(4 * C, C)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, H, C // H).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.wo(y.transpose(1, 2).reshape(b, t, C))
            return x + self.w2(F.gelu(self.w1(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(V, C)
            self.wpe = nn.Embedding(T, C)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg.n_layer))
            self.lnf = nn.LayerNorm(C)
            self.head = nn.Linear(C, V, bias=False)
            self.register_buffer("pos", torch.arange(T))

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(self.pos[: idx.shape[1]])
            for blk in self.blocks:
                x = blk(x)
            logits = self.head(self.lnf(x))
            return F.cross_entropy(logits.view(-1, V), targets.view(-1))

    model = GPT()
    n_torch = sum(p.numel() for p in model.parameters())
    if n_torch != n_params(cfg):
        raise AssertionError(f"torch model has {n_torch} parameters, numpy {n_params(cfg)}")
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
        lr=1e-3,
        betas=(0.9, 0.99),
        eps=1e-8,
    )
    gen = torch.Generator().manual_seed(0)
    idx = torch.randint(0, V, (batch, T), generator=gen)
    tgt = torch.randint(0, V, (batch, T), generator=gen)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        model(idx, tgt).backward()
        opt.step()

    return _pick(_time_loop(step, batch * T, seconds), cpu_time)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds; best kept")
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--replicas", type=int, default=16, help="the many-GPU case")
    ap.add_argument("--threads", type=int, default=None, help="BLAS threads for both sides")
    ap.add_argument(
        "--cpu-time",
        action="store_true",
        help="time steps by process CPU time (for busy shared machines; use with --threads 1)",
    )
    args = ap.parse_args(argv)
    if args.threads is not None and not set_blas_threads(args.threads):
        print("note: could not set numpy's BLAS threads; set OPENBLAS_NUM_THREADS instead")
    cfg = ModelConfig(vocab_size=args.vocab, n_layer=2, n_head=4, n_embd=64, block_size=16)
    threads = blas_threads()
    R, secs, cpu = args.replicas, args.seconds, args.cpu_time
    print(f"model {cfg}, {n_params(cfg):,} parameters, global batch {args.batch} sequences")
    print(f"threads: numpy BLAS {threads}; torch.set_num_threads({threads})")
    print(f"clock: {'process CPU time' if cpu else 'wall'}, median step of each measurement")
    # Rounds alternate between the measurements, so a burst of outside load hurts them alike;
    # the best round of each is kept.
    cases = {
        "numpy, 1 replica, fwd+bwd+AdamW": lambda: _numpy(cfg, args.batch, 1, secs, True, cpu),
        f"numpy, {R} replicas, fwd+bwd+AdamW": lambda: _numpy(cfg, args.batch, R, secs, True, cpu),
        f"numpy, {R} replicas, +shared AdamW": lambda: _numpy(
            cfg, args.batch, R, secs, True, cpu, shared=True
        ),
        "numpy, 1 replica, fwd+bwd": lambda: _numpy(cfg, args.batch, 1, secs, False, cpu),
        f"numpy, {R} replicas, fwd+bwd": lambda: _numpy(cfg, args.batch, R, secs, False, cpu),
        "torch eager, fwd+bwd+AdamW": lambda: torch_tokens_per_s(
            cfg, args.batch, secs, cpu_time=cpu
        ),
    }
    best: dict[str, float | None] = dict.fromkeys(cases)
    for _ in range(args.rounds):
        for name, run in cases.items():
            got = run()
            if got is not None:
                best[name] = max(best[name] or 0.0, got)
    step_tokens = args.batch * cfg.block_size
    for name, tps in best.items():
        if tps is None:
            print(f"{name:34s} not available (torch is not installed)")
        else:
            print(f"{name:34s} {tps:>9,.0f} tokens/s  {1000 * step_tokens / tps:7.2f} ms/step")
    one, many, shared, one_fb, many_fb, torch_name = cases
    if best[torch_name]:
        print(f"numpy / torch, tokens/s (1 replica):  {best[one] / best[torch_name]:.2f}")
    print(f"{R}-replica step / 1-replica step:")
    print(f"  forward+backward                   {best[one_fb] / best[many_fb]:.2f}x")
    print(f"  with AdamW on every row            {best[one] / best[many]:.2f}x")
    print(f"  with AdamW's shared update         {best[one] / best[shared]:.2f}x")


if __name__ == "__main__":
    main()
