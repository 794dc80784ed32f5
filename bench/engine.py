"""Engine benchmark: prints its figures side by side in one run (not a timed test).

  1. tokens/s of the numpy engine vs the same architecture in PyTorch CPU eager
  2. a 16-GPU data-parallel step vs a 1-GPU step on the same global batch
  3. seconds of compute until "time" is the top-1 guess after "Once upon a" (default run)
  4. peak memory (max RSS) of `trainingrun train --steps 200`
  5. a dp2 x tp2 x pp2 step (8 GPUs, 4 microbatches, 1F1B) vs the same model on 1 GPU
  6. the default run's step in the engine itself: --backend numpy vs --backend torch (CPU, and
     CUDA when there is one)

Run: python bench/engine.py [--quick] [--only 2,5,6]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The product trains with one BLAS thread (see app/cli/main.py); measure what it runs.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from app.engine.config import RunConfig  # noqa: E402
from app.engine.lake import DataLake  # noqa: E402
from app.engine.model import ModelConfig  # noqa: E402
from app.engine.trainer import Trainer  # noqa: E402


def model_config() -> tuple[ModelConfig, RunConfig]:
    cfg = RunConfig()
    with tempfile.TemporaryDirectory() as d:
        vocab = len(DataLake(Path(d) / "lake", stories=cfg.corpus_stories).vocab)
    mc = ModelConfig(
        vocab_size=vocab,
        n_layer=cfg.n_layer,
        n_head=cfg.n_head,
        n_embd=cfg.n_embd,
        block_size=cfg.block_size,
    )
    return mc, cfg


def bench_torch(seconds: float) -> None:
    from engine_torch import numpy_rates, torch_rates

    mc, cfg = model_config()
    print(f"\n1. numpy vs PyTorch CPU eager, default model ({mc}), batch {cfg.batch_size}")
    # Alternate the two so machine noise hits both alike.
    np_runs, torch_runs = [], []
    for _ in range(3):
        np_runs.append(numpy_rates(mc, cfg.batch_size, 1, seconds))
        t = torch_rates(mc, cfg.batch_size, seconds)
        if t is None:
            print("   torch is not installed: `pip install torch==2.13.0` to compare")
            print(f"   numpy: {statistics.median(r.wall for r in np_runs):,.0f} tokens/s")
            return
        torch_runs.append(t)
    n, t = (statistics.median(r.wall for r in runs) for runs in (np_runs, torch_runs))
    nc, tc = (statistics.median(r.cpu for r in runs) for runs in (np_runs, torch_runs))
    print(f"   numpy  {n:12,.0f} tokens/s   (median of 3)   {nc:12,.0f} by CPU time")
    print(f"   torch  {t:12,.0f} tokens/s   (median of 3)   {tc:12,.0f} by CPU time")
    print(f"   ratio  numpy/torch = {n / t:.2f}x   (target >= 1.0x)")
    # Both run on one thread, so on a machine shared with other work the CPU time each step
    # took is close to what it would take alone, where the wall clock also counts waiting.
    print(f"          by CPU time  = {nc / tc:.2f}x")


def _step_times(gpus: int, servers: int, steps: int, run_dir: Path, **plan) -> list[float]:
    cfg = RunConfig(gpus=gpus, servers=servers, checkpoint_every=0, probe_every=0, **plan)
    trainer = Trainer(cfg, run_dir, fresh=True)
    try:
        for _ in range(3):
            trainer.train_step()
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            trainer.train_step()
            times.append(time.perf_counter() - t0)
        return times
    finally:
        trainer.close(final_checkpoint=False)


def bench_data_parallel(steps: int) -> None:
    batch = RunConfig().batch_size
    print(f"\n2. 16-GPU data-parallel step vs 1-GPU step, same global batch ({batch} sequences)")
    with tempfile.TemporaryDirectory() as d:
        one, sixteen = [], []
        for r in range(3):  # interleave rounds so noise hits both alike
            one += _step_times(1, 1, steps, Path(d) / f"g1-{r}")
            sixteen += _step_times(16, 2, steps, Path(d) / f"g16-{r}")
    a, b = statistics.median(one), statistics.median(sixteen)
    print(f"   1 GPU    {a * 1000:8.2f} ms/step (median)")
    print(f"   16 GPUs  {b * 1000:8.2f} ms/step (median)")
    print(f"   ratio    {b / a:.2f}x   (target <= 1.3x)")


def bench_time_to_time(limit_s: float) -> None:
    print('\n3. Compute time until "time" is the top-1 guess after "Once upon a" (default run)')
    with tempfile.TemporaryDirectory() as d:
        trainer = Trainer(RunConfig(checkpoint_every=0, probe_every=0), Path(d), fresh=True)
        try:
            spent, found = 0.0, None
            while spent < limit_s:
                t0 = time.perf_counter()
                trainer.train_step()
                spent += time.perf_counter() - t0
                if trainer.step % 10 == 0 and trainer.probe().top[0].token == "time":
                    found = (trainer.step, spent)
                    break
        finally:
            trainer.close(final_checkpoint=False)
    if found:
        print(f"   top-1 'time' at step {found[0]} after {found[1]:.1f} s of compute (target 30 s)")
    else:
        print(f"   not top-1 within {limit_s:.0f} s")


def bench_peak_memory(steps: int) -> None:
    print(f"\n4. Peak memory of `trainingrun train --steps {steps}`")
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "app.cli", "train", "--steps", str(steps), "--run-dir", d],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - t0
    kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"   max RSS {kib / 1024:.0f} MiB, {wall:.1f} s wall for {steps} steps")


def bench_plan(steps: int) -> None:
    batch = RunConfig().batch_size
    plan = dict(tp=2, pp=2, microbatches=4)
    print(
        f"\n5. dp2 x tp2 x pp2 step (8 GPUs, 4 microbatches, 1F1B) vs 1 GPU, same model and "
        f"global batch ({batch} sequences)"
    )
    with tempfile.TemporaryDirectory() as d:
        one, planned = [], []
        for r in range(3):  # interleave rounds so noise hits both alike
            one += _step_times(1, 1, steps, Path(d) / f"g1-{r}")
            planned += _step_times(8, 1, steps, Path(d) / f"plan-{r}", **plan)
    a, b = statistics.median(one), statistics.median(planned)
    print(f"   1 GPU           {a * 1000:8.2f} ms/step (median)")
    print(f"   dp2 x tp2 x pp2 {b * 1000:8.2f} ms/step (median)")
    print(f"   ratio           {b / a:.2f}x   (target <= 3x)")


def _backend_step_times(name: str, device: str, steps: int, run_dir: Path) -> list[float]:
    from app.engine import backend

    backend.use(name, device)
    try:
        times = _step_times(RunConfig.gpus, RunConfig.servers, steps, run_dir)
        backend.xp.synchronize()
        return times
    finally:
        backend.use("numpy")


def bench_backends(steps: int) -> None:
    from app.engine import backend

    cfg = RunConfig()
    tokens = cfg.batch_size * cfg.block_size
    print(
        f"\n6. The default run ({cfg.gpus} GPUs on {cfg.servers} servers) in the engine: "
        "numpy vs torch backends"
    )
    if not backend.torch_available():
        print("   torch is not installed: `pip install 'trainingrun[torch]'` to compare")
        return
    import torch

    print(f"   torch threads {torch.get_num_threads()} (OMP_NUM_THREADS), as numpy's BLAS")
    sides = [("numpy", "cpu"), ("torch", "cpu")]
    if backend.cuda_available():
        sides.append(("torch", "cuda"))
    runs: dict[tuple[str, str], list[float]] = {s: [] for s in sides}
    with tempfile.TemporaryDirectory() as d:
        for r in range(3):  # interleave rounds so noise hits every side alike
            for name, device in sides:
                runs[(name, device)] += _backend_step_times(
                    name, device, steps, Path(d) / f"{name}-{device}-{r}"
                )
    base = statistics.median(runs[("numpy", "cpu")])
    for (name, device), times in runs.items():
        m = statistics.median(times)
        print(
            f"   {name:5} on {device:4} {m * 1000:8.2f} ms/step  {tokens / m:10,.0f} tokens/s"
            f"   ({base / m:.2f}x numpy's speed)"
        )
    if ("torch", "cuda") not in runs:
        print("   no CUDA here: bench/gpu.py measures the GPU on a machine that has one")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="shorter measurements")
    ap.add_argument("--only", default="1,2,3,4,5,6", help="which sections, e.g. 2,5")
    args = ap.parse_args()
    q = args.quick
    only = {int(x) for x in args.only.split(",") if x.strip()}
    print(f"engine benchmark ({os.cpu_count()} CPUs)")
    if 1 in only:
        bench_torch(1.0 if q else 3.0)
    if 2 in only:
        bench_data_parallel(10 if q else 30)
    if 3 in only:
        bench_time_to_time(60.0)
    if 4 in only:
        bench_peak_memory(200)
    if 5 in only:
        bench_plan(10 if q else 30)
    if 6 in only:
        bench_backends(10 if q else 30)


if __name__ == "__main__":
    main()
