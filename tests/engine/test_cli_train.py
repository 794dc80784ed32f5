"""`trainingrun train`: learning, resume and failure give the promised numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def train(*args: str) -> tuple[list[dict], dict, str]:
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


def test_default_run_learns_once_upon_a_time(tmp_path):
    steps, summary, _ = train("--steps", "1000", "--run-dir", str(tmp_path))
    assert len(steps) == 1000 and summary["steps"] == 1000
    assert summary["final_loss"] <= 0.4 * summary["initial_loss"]
    assert summary["probe"]["prompt"] == "Once upon a"
    assert summary["probe"]["top"][0]["token"] == "time"
    assert summary["restarts"] == 0 and len(summary["params_sha256"]) == 64
    assert steps[0]["type"] == "step" and steps[0]["step"] == 1


def test_resume_and_failure_reach_the_same_weights(tmp_path):
    common = ["--gpus", "8", "--servers", "2", "--checkpoint-every", "50"]
    _, straight, _ = train("--steps", "100", "--run-dir", str(tmp_path / "a"), *common)
    _, first, _ = train("--steps", "60", "--run-dir", str(tmp_path / "b"), *common)
    assert first["steps"] == 60
    _, resumed, _ = train("--steps", "100", "--run-dir", str(tmp_path / "b"), *common)
    assert resumed["steps_run"] == 40
    assert resumed["params_sha256"] == straight["params_sha256"]
    _, failed, err = train(
        "--steps", "100", "--run-dir", str(tmp_path / "c"), "--fail-at", "75:3", *common
    )
    assert failed["restarts"] == 1
    assert failed["params_sha256"] == straight["params_sha256"]
    assert "GPU 3 failed during step 75" in err


def test_bad_arguments_get_clear_errors(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "train",
            "--data",
            str(tmp_path / "none"),
            "--run-dir",
            str(tmp_path / "r"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "train", "--fail-at", "seven"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "STEP:GPU" in proc.stderr
