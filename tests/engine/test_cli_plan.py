"""`trainingrun train` under a parallel plan: the options, their one-line errors, and the
summary's plan, bubble, activation peak, parameter norm and traffic."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PLAN = ("--gpus", "8", "--servers", "2", "--tp", "2", "--pp", "2", "--microbatches", "4")


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
    return lines[:-1], lines[-1], proc.stderr


def test_a_planned_run_reports_its_plan_bubble_memory_and_traffic(tmp_path) -> None:
    common = ("--steps", "4", "--dtype", "float64", "--batch-size", "16", "--checkpoint-every", "0")
    out = tmp_path / "t.json"
    steps, summary, _ = train(
        *PLAN, "--schedule", "gpipe", *common, "--run-dir", str(tmp_path / "p"),
        "--trace-out", str(out),
    )  # fmt: skip
    assert summary["plan"] == {
        "dp": 2, "tp": 2, "pp": 2, "ep": 1, "microbatches": 4, "schedule": "gpipe",
    }  # fmt: skip
    assert 0 < summary["bubble_fraction"] < 1
    memory = steps[-1]["memory"]
    assert summary["peak_activation_bytes"] == max(m["activations"] for m in memory) > 0
    traffic = summary["traffic_bytes"]
    assert set(traffic) == {"allreduce", "tp_allreduce", "p2p"}
    assert all(v > 0 for v in traffic.values())
    assert traffic["allreduce"] == steps[-1]["ring"]["bytes_total"]
    assert len(steps[-1]["gpu_losses"]) == 8
    # The same model on one GPU: the plan changes how, not what.
    _, one, _ = train(
        "--gpus", "1", "--servers", "1", *common, "--run-dir", str(tmp_path / "one")
    )  # fmt: skip
    assert one["plan"]["dp"] == 1 and one["bubble_fraction"] == 0
    assert summary["params_l2"] == pytest.approx(one["params_l2"], rel=1e-9)
    assert summary["final_loss"] == pytest.approx(one["final_loss"], rel=1e-9)
    assert set(one["traffic_bytes"]) <= {"allreduce"}
    # The trace file has each GPU's copy engine beside it.
    names = {e["args"]["name"] for e in json.loads(out.read_text())["traceEvents"]
             if e["name"] == "thread_name"}  # fmt: skip
    assert {"GPU 1", "GPU 1 copies", "GPU 8 copies"} <= names


def test_experts_from_the_command_line(tmp_path) -> None:
    _, summary, _ = train(
        "--gpus", "4", "--servers", "1", "--experts", "4", "--top-k", "1", "--ep", "4",
        "--layers", "1", "--steps", "2", "--batch-size", "8", "--run-dir", str(tmp_path),
    )  # fmt: skip
    assert summary["plan"]["ep"] == 4 and summary["traffic_bytes"]["all_to_all"] > 0


BAD_PLANS = [
    (["--pp", "4", "--layers", "6"], "--pp (4) must divide --layers (6)"),
    (["--tp", "3"], "--tp * --pp (3) must divide --gpus (32)"),
    (["--tp", "16"], "--tp (16) must divide the GPUs per server (8)"),
    (["--ep", "2"], "--ep (2) needs experts"),
    (["--experts", "6", "--ep", "4"], "--ep (4) must divide --experts (6)"),
    (["--experts", "4", "--top-k", "5"], "--top-k (5) must be at most --experts (4)"),
    (["--microbatches", "3"], "--microbatches (3) must divide the batch per data-parallel"),
    (["--tp", "2", "--batch-size", "6"], "--batch-size (6) must be a positive multiple of dp"),
    (["--microbatches", "0"], "--microbatches must be at least 1, got 0"),
    (["--layers", "0"], "--layers must be at least 1, got 0"),
    (["--experts", "-1"], "--experts must be 0 (a dense MLP) or more, got -1"),
    (["--schedule", "zigzag"], "--schedule"),
    (["--tp", "two"], "--tp"),
]


@pytest.mark.parametrize(("args", "said"), BAD_PLANS, ids=lambda v: " ".join(v))
def test_a_bad_plan_is_a_one_line_error_naming_the_options(tmp_path, capsys, args, said):
    with pytest.raises(SystemExit) as exit_:
        main(["train", *args, "--run-dir", str(tmp_path / "run")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("trainingrun train: "), err
    assert said in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()
