"""How fast the numpy engine trains, next to the same model in PyTorch eager on the CPU.

Both sides run the same architecture (see app/engine/model.py): token + position embeddings,
pre-norm blocks with fused-qkv causal attention and a tanh-GELU MLP, final layer norm, untied
head, mean cross-entropy; both take one AdamW step per batch on random token data, float32.

Fairness: PyTorch is limited (torch.set_num_threads) to the number of threads numpy's BLAS
uses, so neither side gets more cores than the other.

Run directly to print a comparison:  python bench/engine_torch.py [--seconds 3]
bench/engine.py imports numpy_tokens_per_s and torch_tokens_per_s.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.engine.model import Model, ModelConfig, init_params, n_params  # noqa: E402
from app.engine.optim import AdamW  # noqa: E402

WARMUP_STEPS = 3


def blas_threads() -> int:
    """Threads numpy's BLAS (OpenBLAS) will use: asked of the library itself when possible."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "openblas" in line.lower()}
        for path in libs:
            lib = ctypes.CDLL(path)
            for sym in (
                "scipy_openblas_get_num_threads64_",
                "openblas_get_num_threads64_",
                "openblas_get_num_threads",
            ):
                fn = getattr(lib, sym, None)
                if fn is not None:
                    return int(fn())
    except OSError:
        pass
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return os.cpu_count() or 1


def _time_loop(step, tokens_per_step: int, seconds: float) -> float:
    for _ in range(WARMUP_STEPS):
        step()
    steps, start = 0, time.perf_counter()
    while True:
        step()
        steps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps * tokens_per_step / elapsed


def numpy_tokens_per_s(cfg: ModelConfig, batch: int, replicas: int, seconds: float) -> float:
    """Training tokens per second of the numpy engine: forward_backward + AdamW step.

    `batch` is the global batch in sequences, split evenly over `replicas` simulated GPUs.
    """
    if batch % replicas:
        raise ValueError("batch must be a multiple of replicas")
    micro = batch // replicas
    rng = np.random.default_rng(0)
    params = init_params(cfg, seed=0, replicas=replicas)
    shape = (replicas, micro, cfg.block_size)
    idx = rng.integers(0, cfg.vocab_size, shape)
    tgt = rng.integers(0, cfg.vocab_size, shape)
    model = Model(cfg)
    opt = AdamW(params)
    grads = {k: np.empty_like(v) for k, v in params.items()}

    def step() -> None:
        model.forward_backward(params, idx, tgt, grads=grads)
        opt.step(params, grads, 1e-3)

    return _time_loop(step, batch * cfg.block_size, seconds)


def torch_tokens_per_s(cfg: ModelConfig, batch: int, seconds: float) -> float | None:
    """Training tokens per second of the same model in PyTorch eager (CPU), or None."""
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

    return _time_loop(step, batch * T, seconds)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--replicas", type=int, nargs="*", default=[1, 16])
    args = ap.parse_args(argv)
    cfg = ModelConfig(vocab_size=args.vocab, n_layer=2, n_head=4, n_embd=64, block_size=16)
    threads = blas_threads()
    print(f"model {cfg}, {n_params(cfg):,} parameters, global batch {args.batch} sequences")
    print(f"threads: numpy BLAS {threads}; torch.set_num_threads({threads})")
    results = {}
    for r in args.replicas:
        results[r] = numpy_tokens_per_s(cfg, args.batch, r, args.seconds)
        ms = 1000 * args.batch * cfg.block_size / results[r]
        print(f"numpy, {r:>2} replica(s): {results[r]:>10,.0f} tokens/s  ({ms:.2f} ms/step)")
    tt = torch_tokens_per_s(cfg, args.batch, args.seconds)
    if tt is None:
        print("torch: not installed")
    else:
        ms = 1000 * args.batch * cfg.block_size / tt
        print(f"torch eager, 1 device: {tt:>10,.0f} tokens/s  ({ms:.2f} ms/step)")
        if 1 in results:
            print(f"numpy / torch (1 replica): {results[1] / tt:.2f}")
    if 1 in results:
        for r in args.replicas:
            if r != 1:
                print(f"{r}-replica step / 1-replica step: {results[1] / results[r]:.2f}x")


if __name__ == "__main__":
    main()
