"""`trainingrun train`: learning, resume and failure give the promised numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.main import main
from app.cli.train import build_parser

ROOT = Path(__file__).resolve().parents[2]
TINY = ("--gpus", "2", "--servers", "1")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


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


def train_here(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[list[dict], dict, str]:
    """`trainingrun train --json` run in this process (the command's own code, without
    starting a Python): its step lines, its summary and what it said on stderr."""
    capsys.readouterr()
    assert main(["train", "--json", *args]) == 0
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[-1]["type"] == "summary"
    return lines[:-1], lines[-1], err


def test_default_run_learns_once_upon_a_time(tmp_path, capsys):
    # The default run has "time" on top from about step 20 and its loss below 0.4 of the
    # first step's from about step 40; 100 steps leave room.
    steps, summary, _ = train_here(capsys, "--steps", "100", "--run-dir", str(tmp_path))
    assert len(steps) == 100 and summary["steps"] == 100 and summary["gpus"] == 32
    assert summary["final_loss"] <= 0.4 * summary["initial_loss"]
    assert summary["probe"]["prompt"] == "Once upon a"
    assert summary["probe"]["top"][0]["token"] == "time"
    assert summary["restarts"] == 0 and len(summary["params_sha256"]) == 64
    assert steps[0]["type"] == "step" and steps[0]["step"] == 1


def test_resume_and_failure_reach_the_same_weights(tmp_path, capsys):
    common = ["--gpus", "8", "--servers", "2", "--checkpoint-every", "5"]
    _, straight, _ = train_here(capsys, "--steps", "10", "--run-dir", str(tmp_path / "a"), *common)
    _, first, _ = train_here(capsys, "--steps", "6", "--run-dir", str(tmp_path / "b"), *common)
    assert first["steps"] == 6
    _, resumed, _ = train_here(capsys, "--steps", "10", "--run-dir", str(tmp_path / "b"), *common)
    assert resumed["steps_run"] == 4 and resumed["resumed_from"] == 6
    assert resumed["params_sha256"] == straight["params_sha256"]
    # Failing at step 8 rolls back to the checkpoint of step 5, three steps lost.
    _, failed, err = train_here(
        capsys, "--steps", "10", "--run-dir", str(tmp_path / "c"), "--fail-at", "8:3", *common
    )
    assert failed["restarts"] == 1
    assert failed["params_sha256"] == straight["params_sha256"]
    assert "GPU 4 failed during step 8" in err  # GPU id 3, counted from 1
    assert first["params_sha256"] != straight["params_sha256"]  # the runs really moved on


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


def test_help_lists_every_option_with_its_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: trainingrun train")
    for action in build_parser()._actions:
        assert action.help, f"{action.option_strings} has no help text"
        assert action.option_strings[-1] in out


def _bad(tmp_path: Path, name: str) -> str:
    if name == "file":
        (tmp_path / "file").write_text("not a folder")
    if name == "empty.txt":
        (tmp_path / "empty.txt").write_text("")
    return str(tmp_path / name)


BAD_TRAIN_OPTIONS = [
    (["--gpus", "0"], "--gpus"),
    (["--gpus", "-4"], "--gpus"),
    (["--gpus", "two"], "--gpus"),
    (["--servers", "0"], "--servers"),
    (["--gpus", "6", "--servers", "4"], "--servers"),
    (["--steps", "-1"], "--steps"),
    (["--batch-size", "0"], "--batch-size"),
    (["--batch-size", "10", "--gpus", "4", "--servers", "1"], "--batch-size"),
    (["--checkpoint-every", "-1"], "--checkpoint-every"),
    (["--seed", "-1"], "--seed"),
    (["--fail-at", "5:8", "--gpus", "8", "--servers", "2"], "--fail-at"),
    (["--fail-at", "0:1"], "--fail-at"),
    (["--fail-at", "seven"], "STEP:GPU"),
    (["--fail-at", "2000:1", "--steps", "1000"], "--steps"),
    (["--preset", "tpu"], "--preset"),
    (["--dtype", "float16"], "--dtype"),
    (["--data", "{missing}"], "does not exist"),
    (["--data", "{empty.txt}", *TINY], "empty"),
    (["--run-dir", "{file}"], "--run-dir"),
    (["--no-such-option"], "--no-such-option"),
]


@pytest.mark.parametrize(("args", "named"), BAD_TRAIN_OPTIONS, ids=lambda v: " ".join(v))
def test_bad_options_are_one_line_errors(tmp_path, capsys, args, named):
    args = [_bad(tmp_path, a[1:-1]) if a.startswith("{") else a for a in args]
    if "--run-dir" not in args:
        args += ["--run-dir", str(tmp_path / "run")]
    with pytest.raises(SystemExit) as exit_:
        main(["train", *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("trainingrun train: "), err
    assert named in err and "Traceback" not in err
    run = tmp_path / "run"
    assert not run.exists() or not any(run.iterdir())  # nothing was started


def test_zero_gpus_on_the_real_command_is_not_a_traceback(tmp_path):
    proc = run_cli("train", "--gpus", "0", "--run-dir", str(tmp_path / "r"))
    assert proc.returncode == 2
    assert proc.stderr == "trainingrun train: --gpus must be at least 1, got 0\n"
    assert proc.stdout == ""


def err_lines_starting(err: str, word: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(word)]


def test_resuming_says_so_and_a_finished_run_has_nothing_to_do(tmp_path):
    run_dir = str(tmp_path / "r")
    common = [*TINY, "--run-dir", run_dir]
    _, first, err = train("--steps", "3", *common)
    assert first["steps_run"] == 3 and first["resumed_from"] is None
    assert not err_lines_starting(err, "resuming")

    _, resumed, err = train("--steps", "5", "--fail-at", "2:1", *common)
    assert resumed["steps_run"] == 2 and resumed["resumed_from"] == 3
    assert resumed["restarts"] == 0  # step 2 was behind the run already
    assert "--fail-at 2:1" in err and "will not happen" in err
    (note,) = err_lines_starting(err, "resuming")
    assert run_dir in note and "step 3" in note and "--fresh" in note

    # Nothing left to do: said plainly, and the summary is still JSON with nulls and numbers.
    proc = run_cli("train", "--json", "--steps", "5", *common)
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    summary = json.loads(line)
    assert summary["steps"] == 5 and summary["steps_run"] == 0
    assert summary["initial_loss"] is None and summary["final_loss"] is None
    assert summary["steps_per_s"] == 0 and summary["tokens_per_s"] == 0
    assert f"{run_dir} is already at step 5; nothing to do" in proc.stderr
    assert "--fresh" in proc.stderr

    proc = run_cli("train", "--steps", "4", *common)  # past --steps, without --json
    assert proc.returncode == 0, proc.stderr
    assert f"{run_dir} is already at step 5; nothing to do" in proc.stderr
    assert "None" not in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr

    _, fresh, err = train("--steps", "2", "--fresh", *common)
    assert fresh["steps_run"] == 2 and fresh["resumed_from"] is None
    assert not err_lines_starting(err, "resuming") and "nothing to do" not in err


def test_trace_out_writes_the_last_steps_chrome_trace(tmp_path) -> None:
    out = tmp_path / "t.json"
    run_dir = str(tmp_path / "run")
    steps, summary, err = train("--steps", "3", "--trace-out", str(out), "--run-dir", run_dir)
    assert summary["trace_out"] == str(out) and f"to {out}" in err
    doc = json.loads(out.read_text())
    last = steps[-1]
    assert doc["otherData"]["step"] == last["step"] == 3
    events = doc["traceEvents"]
    gpus = summary["gpus"]
    threads = {e["tid"]: e["pid"] for e in events if e["name"] == "thread_name"}
    assert sorted(threads) == list(range(gpus))
    assert len({e["pid"] for e in events if e["name"] == "process_name"}) == 4  # 4 servers
    slices = [e for e in events if e["ph"] == "X"]
    for g in range(gpus):
        mine = [e for e in slices if e["tid"] == g]
        names = [e["name"] for e in mine]
        assert names[:3] == ["data", "forward", "backward"] and names[-1] == "optimizer"
        assert len([n for n in names if n.startswith("allreduce pass")]) == 2 * (gpus - 1)
        assert all(e["pid"] == threads[g] for e in mine)
        assert sum(e["dur"] for e in mine) == pytest.approx(last["sim_step_s"] * 1e6, rel=1e-9)
    flows = [e for e in events if e["ph"] in ("s", "f")]
    assert len(flows) == 2 * gpus * 2 * (gpus - 1)


def test_trace_out_with_nothing_run_says_so(tmp_path) -> None:
    out = tmp_path / "t.json"
    proc = run_cli("train", *TINY, "--steps", "0", "--trace-out", str(out), "--run-dir",
                   str(tmp_path / "run"))  # fmt: skip
    assert proc.returncode == 1 and "no step was run" in proc.stderr
    assert not out.exists() and "Traceback" not in proc.stderr
    proc = run_cli("train", *TINY, "--trace-out", str(tmp_path / "missing" / "t.json"))
    assert proc.returncode == 2 and "--trace-out" in proc.stderr
