"""The engine's maths through PyTorch tensors (`--backend torch`): the same numbers as NumPy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from extras import need

torch = need("torch", "torch")

from app.engine import backend  # noqa: E402
from app.engine.config import RunConfig  # noqa: E402
from app.engine.trainer import Trainer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
REL_TOL = 1e-4


def train_json(*args: str) -> tuple[list[dict], dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "train", "--json", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[-1]["type"] == "summary"
    return lines[:-1], lines[-1], proc.stderr


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One thread, as the product trains (app/cli/main.py): on a shared machine more threads only
    fight each other."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def numpy_after():
    """Tests that switch the backend in this process put NumPy back afterwards."""
    yield
    backend.use("numpy")


def test_default_run_matches_numpy_for_200_steps(tmp_path):
    """The default run (32 GPUs on 4 servers, float32), 200 steps: every step's loss within
    1e-4 relative of the NumPy run's, and the probe guesses the same top word."""
    common = ("--steps", "200", "--checkpoint-every", "0", "--fresh")
    np_steps, np_sum, _ = train_json(*common, "--run-dir", str(tmp_path / "np"))
    t_steps, t_sum, _ = train_json(
        *common, "--backend", "torch", "--device", "cpu", "--run-dir", str(tmp_path / "t")
    )
    assert np_sum["backend"] == "numpy on cpu" and t_sum["backend"] == "torch on cpu"
    assert [s["step"] for s in t_steps] == list(range(1, 201))
    worst = max(
        abs(t["loss"] - n["loss"]) / abs(n["loss"]) for t, n in zip(t_steps, np_steps, strict=True)
    )
    assert worst <= REL_TOL, f"largest relative loss difference {worst:.2e}"
    assert t_sum["final_loss"] < 0.8 * t_sum["initial_loss"]  # it learns, not just matches
    assert t_sum["probe"]["top"][0]["token"] == np_sum["probe"]["top"][0]["token"]


def test_cuda_asked_for_without_cuda_falls_back_with_a_message(tmp_path):
    _, summary, err = train_json(
        "--steps", "2", "--gpus", "2", "--servers", "1", "--backend", "torch", "--device", "cuda",
        "--run-dir", str(tmp_path),
    )  # fmt: skip
    if torch.cuda.is_available():
        assert summary["backend"] == "torch on cuda"
    else:
        assert summary["backend"] == "torch on cpu"
        assert "--device cuda: CUDA is not available here" in err
        assert "running on the CPU" in err


def test_numpy_on_cuda_is_refused_in_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "train", "--device", "cuda", "--run-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "trainingrun train: --backend numpy: the numpy backend runs on the CPU; "
        "use --backend torch for cuda"
    ]


def _losses(tmp: Path, name: str, steps: int, **config) -> tuple[list[float], Trainer]:
    backend.use(name, "cpu")
    trainer = Trainer(RunConfig(checkpoint_every=0, **config), tmp / name, fresh=True)
    losses = [trainer.train_step().loss for _ in range(steps)]
    return losses, trainer


@pytest.mark.parametrize(
    "plan",
    [
        {"gpus": 8, "servers": 2, "tp": 2},
        {"gpus": 4, "servers": 1, "pp": 2, "microbatches": 2, "schedule": "1f1b"},
        {"gpus": 4, "servers": 1, "experts": 4, "ep": 2},
        {"gpus": 4, "servers": 1, "microbatches": 2},
    ],
    ids=["tensor", "pipeline-1f1b", "experts", "microbatches"],
)
def test_planned_runs_match_numpy(tmp_path, numpy_after, plan):
    config = {"batch_size": 8, **plan}
    ref, t_np = _losses(tmp_path, "numpy", 4, **config)
    got, t_torch = _losses(tmp_path, "torch", 4, **config)
    for a, b in zip(got, ref, strict=True):
        assert abs(a - b) <= REL_TOL * abs(b)
    sharded = getattr(t_torch.engine, "sharded", None)  # the engine a plan chose
    held = sharded.params[0] if sharded is not None else t_torch.engine.params
    assert all(isinstance(v, torch.Tensor) for v in held.values())
    assert t_torch.replicas_identical()
    np_params, t_params = t_np.full_params(), t_torch.full_params()
    for name, p in np_params.items():
        assert isinstance(t_params[name], np.ndarray)
        np.testing.assert_allclose(t_params[name], p, rtol=2e-3, atol=2e-5)
    t_np.close(False)
    t_torch.close(False)


def test_torch_run_resumes_a_numpy_checkpoint_and_keeps_going(tmp_path, numpy_after):
    """Checkpoints hold NumPy arrays whatever computed them: a run started in NumPy goes on
    in torch from its checkpoint and lands where the NumPy run does."""
    config = RunConfig(gpus=4, servers=1, batch_size=8, checkpoint_every=5)
    backend.use("numpy")
    a = Trainer(config, tmp_path / "run", fresh=True)
    for _ in range(5):
        a.train_step()
    a.close()
    ref = Trainer(config, tmp_path / "ref", fresh=True)
    expected = [ref.train_step().loss for _ in range(8)][5:]
    ref.close(False)
    backend.use("torch", "cpu")
    b = Trainer(config, tmp_path / "run")
    assert b.step == 5
    assert isinstance(b.engine.params["wte"], torch.Tensor)
    got = [b.train_step().loss for _ in range(3)]
    b.close(False)
    for x, y in zip(got, expected, strict=True):
        assert abs(x - y) <= REL_TOL * abs(y)


def test_namespace_keeps_numpy_meaning(numpy_after):
    """The few operations whose torch spelling differs: repeated-index add, take into a
    preallocated output, reductions with keepdims into `out`, scalar-first divide."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    idx = np.array([0, 2, 2, 1, 0], dtype=np.int64)
    vals = rng.standard_normal((5, 5)).astype(np.float32)

    def run(name: str) -> list[np.ndarray]:
        backend.use(name, "cpu")
        xp = backend.xp
        x = xp.asarray(a, dtype=xp.float32)
        table = xp.zeros((3, 5), dtype=xp.float32)
        xp.add_at(table, (idx,), xp.asarray(vals))
        out = xp.empty((5, 5), dtype=xp.float32)
        xp.take(xp.reshape(x, (12, 5)), xp.asarray(idx), axis=0, out=out)
        row = xp.empty((3, 4, 1), dtype=xp.float32)
        xp.max(x, axis=-1, keepdims=True, out=row)
        inv = xp.empty((3, 4, 1), dtype=xp.float32)
        xp.divide(1.0, row, out=inv)
        s = xp.empty((3, 5), dtype=xp.float32)
        xp.sum(x, axis=1, out=s)
        return [backend.to_numpy(v) for v in (table, out, row, inv, s, xp.mean(x, axis=1))]

    for got, want in zip(run("torch"), run("numpy"), strict=True):
        assert isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_unknown_backend_and_missing_torch_are_named():
    with pytest.raises(backend.BackendError, match="backend must be one of numpy, torch"):
        backend.use("jax")
    with pytest.raises(backend.BackendError, match="device must be one of cpu, cuda"):
        backend.use("torch", "tpu")
