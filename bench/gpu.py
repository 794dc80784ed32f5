"""The engine on a CUDA GPU (`--backend torch --device cuda`): same numbers, and how fast.

For a machine with an NVIDIA GPU and a CUDA build of PyTorch. Two checks, one run:

  1. Same numbers: the default run (32 simulated GPUs on 4 servers, float32) trained for
     --steps steps with NumPy on the CPU and with torch on CUDA; every step's loss must agree
     within 1e-4 relative (exit status 1 if not).
  2. Speed: median step time and tokens per second of NumPy (CPU), torch (CPU) and torch
     (CUDA), for the default model and for a wider one (--wide: n_embd 256, 4 layers), where
     the GPU has enough work to pull ahead.

Run: python bench/gpu.py [--steps 100] [--speed-steps 20] [--no-wide]
Prints its figures; exit status 2 when there is no CUDA (nothing to measure).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# The product trains with one BLAS thread on the CPU (see app/cli/main.py); measure what it runs.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.engine import backend  # noqa: E402
from app.engine.config import RunConfig  # noqa: E402
from app.engine.trainer import Trainer  # noqa: E402

REL_TOL = 1e-4


def losses(name: str, device: str, steps: int, run_dir: Path, **config) -> list[float]:
    backend.use(name, device)
    trainer = Trainer(RunConfig(checkpoint_every=0, **config), run_dir, fresh=True)
    try:
        return [trainer.train_step().loss for _ in range(steps)]
    finally:
        trainer.close(final_checkpoint=False)
        backend.use("numpy")


def step_times(name: str, device: str, steps: int, run_dir: Path, **config) -> list[float]:
    backend.use(name, device)
    cfg = RunConfig(checkpoint_every=0, probe_every=0, **config)
    trainer = Trainer(cfg, run_dir, fresh=True)
    try:
        for _ in range(3):  # warm up: allocations, kernels, caches
            trainer.train_step()
        times = []
        for _ in range(steps):
            backend.xp.synchronize()
            t0 = time.perf_counter()
            trainer.train_step()
            backend.xp.synchronize()
            times.append(time.perf_counter() - t0)
        return times
    finally:
        trainer.close(final_checkpoint=False)
        backend.use("numpy")


def same_numbers(steps: int, d: Path) -> bool:
    print(f"1. Same numbers: the default run, {steps} steps, numpy (CPU) vs torch (CUDA)")
    ref = losses("numpy", "cpu", steps, d / "np")
    got = losses("torch", "cuda", steps, d / "cuda")
    worst = max(abs(a - b) / abs(b) for a, b in zip(got, ref, strict=True))
    ok = worst <= REL_TOL
    print(
        f"   loss at step 1 {ref[0]:.6f} vs {got[0]:.6f}; "
        f"at step {steps} {ref[-1]:.6f} vs {got[-1]:.6f}"
    )
    print(
        f"   largest relative difference {worst:.2e} (must be <= {REL_TOL:g}): "
        f"{'ok' if ok else 'FAIL'}"
    )
    return ok


def speed(label: str, steps: int, d: Path, **config) -> None:
    cfg = RunConfig(**config)
    tokens = cfg.batch_size * cfg.block_size
    print(
        f"\n2. Speed, {label}: {cfg.gpus} simulated GPUs, n_embd {cfg.n_embd}, {cfg.n_layer} layers"
    )
    sides = [("numpy", "cpu"), ("torch", "cpu"), ("torch", "cuda")]
    runs: dict[tuple[str, str], list[float]] = {s: [] for s in sides}
    for r in range(2):
        for name, device in sides:
            runs[(name, device)] += step_times(
                name, device, steps, d / f"{label}-{name}-{device}-{r}", **config
            )
    base = statistics.median(runs[("numpy", "cpu")])
    for (name, device), times in runs.items():
        m = statistics.median(times)
        print(
            f"   {name:5} on {device:4} {m * 1000:9.2f} ms/step {tokens / m:12,.0f} tokens/s  "
            f"({base / m:.2f}x numpy)"
        )


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--steps", type=int, default=100, help="steps for the same-numbers check")
    ap.add_argument("--speed-steps", type=int, default=20, help="timed steps per side and round")
    ap.add_argument("--no-wide", action="store_true", help="skip the wider model")
    args = ap.parse_args()
    if not backend.torch_available():
        print("PyTorch is not installed: pip install 'trainingrun[torch]' (a CUDA build)")
        return 2
    if not backend.cuda_available():
        import torch

        print(f"no CUDA here (torch {torch.__version__}): run this on a machine with an NVIDIA GPU")
        return 2
    import torch

    print(f"GPU: {torch.cuda.get_device_name(0)} · torch {torch.__version__} · CPU threads 1")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        ok = same_numbers(args.steps, d)
        speed("default model", args.speed_steps, d)
        if not args.no_wide:
            speed("wide model", args.speed_steps, d, n_embd=256, n_layer=4, n_head=8)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
