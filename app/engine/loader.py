"""CPU data loaders: worker threads that cut the lake into samples, shuffle, batch and prefetch.

A sample is a window of T+1 tokens (T inputs, T shifted targets) at a fixed stride in one
shard. The order is a stream of seeded permutations, one per epoch, so within an epoch every
sample is used exactly once across all GPUs, and batch k is a pure function of (seed, k):
the loader can be rewound to any batch after a restore and deliver the same data again.

Worker threads build batches ahead of the trainer into a bounded prefetch buffer; the trainer
takes them strictly in order and the report says how full the buffer was and whether the GPUs
had to wait.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .lake import DataLake, tokenize


@dataclass
class Batch:
    index: int  # global batch number since step 0
    idx: np.ndarray  # (G, b, T) input token ids
    targets: np.ndarray  # (G, b, T) next-token ids
    samples: np.ndarray  # (G, b) sample ids, for checking coverage
    epoch: int  # epoch of the batch's first sample


@dataclass
class TakeStats:
    queue_depth: int
    queue_capacity: int
    waited: bool
    wait_s: float


class Loader:
    def __init__(
        self,
        lake: DataLake,
        *,
        block_size: int,
        batch_size: int,
        gpus: int,
        seed: int,
        workers: int = 2,
        prefetch: int = 4,
        start_batch: int = 0,
    ):
        self.block_size, self.batch_size, self.gpus = block_size, batch_size, gpus
        self.seed, self.workers, self.prefetch = seed, workers, prefetch
        # Read and tokenise the shards in parallel on the worker threads.
        with ThreadPoolExecutor(max_workers=workers) as pool:
            ids = list(pool.map(lambda i: _encode(lake, i), range(len(lake.shards))))
        self.shard_tokens = ids
        shard_ids, starts = [], []
        for s, toks in enumerate(ids):
            n = (len(toks) - 1) // block_size
            shard_ids.extend([s] * n)
            starts.extend(range(0, n * block_size, block_size))
        if len(starts) < 1:
            raise ValueError(
                f"the data lake is too small: need at least {block_size + 1} tokens in a shard"
            )
        self.sample_shard = np.asarray(shard_ids, dtype=np.int64)
        self.sample_start = np.asarray(starts, dtype=np.int64)
        self.n_samples = len(starts)
        self._perms: dict[int, np.ndarray] = {}
        self._perm_lock = threading.Lock()

        self._cond = threading.Condition()
        self._ready: dict[int, Batch] = {}
        self._pos = start_batch  # next batch the trainer will take
        self._assign = start_batch  # next batch a worker will build
        self._generation = 0
        self._stopped = False
        self._threads = [
            threading.Thread(target=self._work, name=f"loader-{i}", daemon=True)
            for i in range(workers)
        ]
        for t in self._threads:
            t.start()

    # ---- order -------------------------------------------------------------------------
    @property
    def batches_per_epoch(self) -> float:
        return self.n_samples / self.batch_size

    def permutation(self, epoch: int) -> np.ndarray:
        with self._perm_lock:
            perm = self._perms.get(epoch)
            if perm is None:
                perm = np.random.default_rng([self.seed, epoch]).permutation(self.n_samples)
                self._perms = {e: p for e, p in self._perms.items() if e >= epoch - 1}
                self._perms[epoch] = perm
            return perm

    def sample_ids(self, k: int) -> np.ndarray:
        """The sample ids of global batch k, in order."""
        pos = np.arange(k * self.batch_size, (k + 1) * self.batch_size)
        epochs, offs = np.divmod(pos, self.n_samples)
        out = np.empty(self.batch_size, dtype=np.int64)
        for e in np.unique(epochs):
            m = epochs == e
            out[m] = self.permutation(int(e))[offs[m]]
        return out

    def build(self, k: int) -> Batch:
        T = self.block_size
        ids = self.sample_ids(k)
        rows = np.empty((self.batch_size, T + 1), dtype=np.int64)
        for j, sid in enumerate(ids):
            s, start = self.sample_shard[sid], self.sample_start[sid]
            rows[j] = self.shard_tokens[s][start : start + T + 1]
        rows = rows.reshape(self.gpus, self.batch_size // self.gpus, T + 1)
        return Batch(
            index=k,
            idx=np.ascontiguousarray(rows[..., :-1]),
            targets=np.ascontiguousarray(rows[..., 1:]),
            samples=ids.reshape(self.gpus, -1),
            epoch=(k * self.batch_size) // self.n_samples,
        )

    # ---- prefetch ----------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and self._assign >= self._pos + self.prefetch:
                    self._cond.wait()
                if self._stopped:
                    return
                k, gen = self._assign, self._generation
                self._assign += 1
            batch = self.build(k)
            with self._cond:
                if gen == self._generation and k >= self._pos:
                    self._ready[k] = batch
                    self._cond.notify_all()

    @property
    def position(self) -> int:
        return self._pos

    def next(self) -> tuple[Batch, TakeStats]:
        t0 = time.perf_counter()
        with self._cond:
            depth = len(self._ready)
            waited = self._pos not in self._ready
            while self._pos not in self._ready:
                if self._stopped:
                    raise RuntimeError("loader is closed")
                self._cond.wait(timeout=1.0)
            batch = self._ready.pop(self._pos)
            self._pos += 1
            self._cond.notify_all()
        wait_s = time.perf_counter() - t0 if waited else 0.0
        return batch, TakeStats(depth, self.prefetch, waited, wait_s)

    def seek(self, k: int) -> None:
        """Rewind or skip to batch k (after restoring a checkpoint)."""
        with self._cond:
            self._generation += 1
            self._ready.clear()
            self._pos = self._assign = k
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout=2.0)


def _encode(lake: DataLake, i: int) -> np.ndarray:
    return np.asarray(lake.vocab.encode(tokenize(lake.read_shard(i))), dtype=np.int64)
