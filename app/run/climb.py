"""The long climb: the tiny model trained for real, far past what a lesson's live run reaches,
with a checkpoint at every tenfold of steps (1, 10, 100, ... 100,000) and, at each, what the
model writes after "Once upon a" and how far its weights have moved.

The story's "Again, and again" chapter plays this back: the field re-tones and the writing
improves one tenfold at a time. `trainingrun climb` makes it (about 5 minutes for 100,000
steps on one core) and the shipped copy is scenes/climb/tiny.json; a short climb with the
same settings reproduces the shipped copy's first tenfolds (tests/run/test_climb.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.engine import model as M
from app.engine.config import RunConfig
from app.engine.lake import tokenize
from app.engine.trainer import PROBE_PROMPT, Trainer
from app.paths import SCENES_DIR

CLIMBS_DIR = SCENES_DIR / "climb"
SHIPPED = CLIMBS_DIR / "tiny.json"
DEFAULT_STEPS = 100_000
WORDS = 16  # words the model writes after the prompt, at each tenfold
FORMAT = 1


def climb_config(seed: int = 0) -> RunConfig:
    """The tiny model on one GPU, a small batch: quick steps, many of them."""
    return RunConfig(
        seed=seed, gpus=1, servers=1, batch_size=16, checkpoint_every=0, keep_checkpoints=8,
        probe_every=0,
    )  # fmt: skip


@dataclass
class Decade:
    step: int  # 1, 10, 100, ...
    loss: float  # this step's training loss
    loss_avg: float  # the mean loss of the steps since the last tenfold
    writing: str  # the model's own words after the prompt (greedy, WORDS words)
    top: list[dict[str, Any]]  # its five best next words after the prompt, with p
    moved: float  # how far the weights are from where they started (relative L2)
    params_sha256: str  # the weights at this step (the checkpoint's)


@dataclass
class Climb:
    format: int
    prompt: str
    config: dict[str, Any]
    n_params: int
    steps: int
    seconds: float
    made_with: str
    decades: list[Decade] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"


def write_words(trainer: Trainer, prompt: str = PROBE_PROMPT, words: int = WORDS) -> str:
    """What the model writes after `prompt`: its most likely next word, again and again."""
    params = {k: v[None] for k, v in trainer.full_params().items()}
    vocab = trainer.lake.vocab
    ids = vocab.encode(tokenize(prompt))
    out: list[str] = []
    block = trainer.model_cfg.block_size
    for _ in range(words):
        logits = M.logits_last(params, np.asarray(ids[-block:], dtype=np.int64), trainer.model_cfg)
        nxt = int(np.argmax(logits))
        ids.append(nxt)
        out.append(vocab.decode([nxt])[0])
    return " ".join(out)


def _flat(trainer: Trainer) -> np.ndarray:
    return np.concatenate([p.ravel() for p in trainer.full_params().values()]).astype(np.float64)


def run_climb(
    run_dir: str | Path,
    steps: int = DEFAULT_STEPS,
    *,
    seed: int = 0,
    made_with: str = "trainingrun climb",
    progress: Callable[[int, float], None] | None = None,
) -> Climb:
    """Train `steps` steps from scratch in `run_dir`, a checkpoint and a look at every tenfold."""
    config = climb_config(seed)
    trainer = Trainer(config, run_dir, fresh=True)
    start = _flat(trainer)
    scale = float(np.linalg.norm(start)) or 1.0
    out = Climb(
        format=FORMAT, prompt=PROBE_PROMPT, config=config.to_dict(), n_params=trainer.n_params,
        steps=steps, seconds=0.0, made_with=made_with,
    )  # fmt: skip
    began = time.monotonic()
    since: list[float] = []
    mark = 1
    while trainer.step < steps:
        report = trainer.train_step()
        since.append(float(report.loss))
        if trainer.step == mark:
            trainer.checkpoint_now()
            probe = trainer.probe()
            out.decades.append(
                Decade(
                    step=trainer.step,
                    loss=round(float(report.loss), 5),
                    loss_avg=round(float(np.mean(since)), 5),
                    writing=write_words(trainer),
                    top=[{"token": t.token, "p": round(t.p, 4)} for t in probe.top],
                    moved=round(float(np.linalg.norm(_flat(trainer) - start)) / scale, 5),
                    params_sha256=trainer.params_sha256(),
                )
            )
            since = []
            mark *= 10
        if progress is not None and trainer.step % 1000 == 0:
            progress(trainer.step, time.monotonic() - began)
    out.seconds = round(time.monotonic() - began, 1)
    return out


def load_climb(path: str | Path = SHIPPED) -> dict[str, Any]:
    """A climb as written (the shipped one by default), checked for its shape."""
    data = json.loads(Path(path).read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a climb of format {FORMAT}")
    steps = [d["step"] for d in data["decades"]]
    if steps != [10**i for i in range(len(steps))]:
        raise ValueError(f"{path}: decades must be 1, 10, 100, ...; got {steps}")
    return data
