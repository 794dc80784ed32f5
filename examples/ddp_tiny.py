"""A tiny real DDP training job that reports every step to a `trainingrun watch` server.

    trainingrun watch --port 8000                     # in one terminal, then open the page
    torchrun --nproc-per-node 4 examples/ddp_tiny.py --report http://127.0.0.1:8000

On CPUs the ranks talk over gloo; on a machine with GPUs the same command uses nccl, one GPU
per rank. The model learns to continue a few short stories word by word (a small embedding,
an MLP over the last words, a softmax), so the loss visibly falls within a few hundred steps.
Without --report it trains exactly the same, unreported (bench/attach.py compares the two).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from app.reporter import Reporter  # noqa: E402

STORIES = (
    "once upon a time there was a little robot who loved to count the stars . "
    "every night the robot climbed the hill and counted one more star . "
    "once upon a time there was a small cat who wanted to fly . "
    "the cat watched the birds and one day it jumped into the wind . "
    "once upon a time a girl found a key under a stone and opened a tiny door . "
)
CONTEXT = 4  # words the model sees


def corpus() -> tuple[list[str], torch.Tensor]:
    words = STORIES.split()
    vocab = sorted(set(words))
    index = {w: i for i, w in enumerate(vocab)}
    return vocab, torch.tensor([index[w] for w in words], dtype=torch.long)


class TinyLM(nn.Module):
    def __init__(self, vocab: int, width: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.mlp = nn.Sequential(
            nn.Linear(CONTEXT * width, 4 * width), nn.GELU(), nn.Linear(4 * width, vocab)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, CONTEXT) -> (B, vocab)
        return self.mlp(self.embed(x).flatten(1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--report", help="the trainingrun server's URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--token", help="the server's token, when it is not on this machine")
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--max-seconds", type=float, default=0.0, help="stop after this long (0: no)")
    p.add_argument("--stop-file", help="stop, cleanly and on every rank, once this file exists")
    p.add_argument("--batch", type=int, default=32, help="sequences per rank per step")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--step-log", help="write each step's end time here (rank 0), JSON lines")
    args = p.parse_args(argv)

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
        torch.set_num_threads(1)  # several ranks share this machine's cores
    torch.manual_seed(0)  # the same initial weights on every rank
    vocab, tokens = corpus()
    model = DDP(TinyLM(len(vocab)).to(device), device_ids=[device.index] if cuda else None)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    reporter = Reporter(args.report, model=model, optimizer=opt, token=args.token)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own batches
    log = open(args.step_log, "w") if args.step_log and rank == 0 else None  # noqa: SIM115
    started = time.perf_counter()
    for step in range(1, args.steps + 1):
        with reporter.step(tokens=args.batch * (CONTEXT + 1)) as s:
            starts = torch.randint(0, len(tokens) - CONTEXT - 1, (args.batch,), generator=gen)
            window = torch.stack([tokens[i : i + CONTEXT + 1] for i in starts.tolist()])
            x, y = window[:, :CONTEXT].to(device), window[:, CONTEXT].to(device)
            with s.forward():
                loss = F.cross_entropy(model(x), y)
            with s.backward():
                loss.backward()
            with s.optimizer():
                s.grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                opt.zero_grad(set_to_none=True)
            s.loss = loss
        if log is not None:
            row = {"step": step, "t": time.perf_counter() - started, "reporter_s": reporter.cost_s}
            log.write(json.dumps(row) + "\n")
            log.flush()
        if (args.max_seconds or args.stop_file) and step % 10 == 0:
            # Every rank must stop at the same step, or the others wait for it forever.
            late = args.max_seconds and time.perf_counter() - started > args.max_seconds
            asked = args.stop_file and os.path.exists(args.stop_file)
            stop = torch.tensor([float(bool(late or asked))])
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            if stop.item():
                break
    elapsed = time.perf_counter() - started
    reporter.close()
    if rank == 0:
        done = {"steps": step, "seconds": round(elapsed, 3), "loss": round(loss.item(), 4)}
        done.update({"steps_per_s": round(step / elapsed, 2), "world_size": world})
        done.update({"reports_sent": reporter.sent, "reports_dropped": reporter.dropped})
        done["reporter_s"] = round(reporter.cost_s, 4)  # what reporting cost rank 0
        print(json.dumps(done), flush=True)
    if log is not None:
        log.close()
    # Leave together: a rank that tears gloo down while another is still finishing its last
    # all-reduce aborts the job ("terminate called without an active exception").
    dist.barrier()
    del model
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
