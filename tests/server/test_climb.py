"""The long climb the story's "Again, and again" plays (app/run/climb.py): the shipped copy
is a real run of 100,000 steps with a look at every tenfold; a short climb with the same
settings reproduces its first tenfolds; each tenfold's writing is what the checkpoint saved
at that step writes; the command writes the summary; a damaged one is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli.climb import climb_main
from app.engine.trainer import Trainer
from app.run.climb import SHIPPED, climb_config, load_climb, run_climb, write_words


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("climb")
    return run_dir, run_climb(run_dir, 100)


def test_the_shipped_climb_is_a_long_real_run_of_this_model() -> None:
    data = load_climb()
    assert data["steps"] >= 100_000
    steps = [d["step"] for d in data["decades"]]
    assert steps == [10**i for i in range(6)], steps  # 1 ... 100,000
    assert data["config"] == climb_config().to_dict()
    first, last = data["decades"][0], data["decades"][-1]
    # It learned: the loss fell, the weights moved further at every tenfold, and the model
    # came to finish the prompt with "time".
    assert last["loss_avg"] < first["loss_avg"] / 3
    moved = [d["moved"] for d in data["decades"]]
    assert moved == sorted(moved) and moved[0] < moved[-1]
    assert last["top"][0]["token"] == "time" and first["top"][0]["token"] != "time"
    assert all(len(d["writing"].split()) == 16 for d in data["decades"])


def test_a_short_climb_reproduces_the_shipped_first_tenfolds(short) -> None:
    _, climb = short
    shipped = load_climb()["decades"]
    assert [d.step for d in climb.decades] == [1, 10, 100]
    for mine, theirs in zip(climb.decades, shipped, strict=False):
        assert mine.step == theirs["step"]
        assert mine.writing == theirs["writing"], mine.step
        assert mine.loss == pytest.approx(theirs["loss"], rel=1e-4)
        assert mine.moved == pytest.approx(theirs["moved"], rel=1e-4)


def test_each_tenfold_has_its_checkpoint_and_the_writing_is_that_models(short) -> None:
    run_dir, climb = short
    resumed = Trainer(climb_config(), run_dir)  # from the latest checkpoint: step 100
    assert [c["step"] for c in resumed.checkpoints()] == [1, 10, 100]
    assert resumed.step == 100
    assert resumed.params_sha256() == climb.decades[-1].params_sha256
    assert write_words(resumed) == climb.decades[-1].writing


def test_the_command_writes_the_summary(tmp_path: Path, capsys) -> None:
    out = tmp_path / "climb.json"
    assert climb_main(["--steps", "10", "--out", str(out), "--run-dir", str(tmp_path / "r")]) == 0
    data = load_climb(out)
    assert [d["step"] for d in data["decades"]] == [1, 10] and data["steps"] == 10
    assert "written to" in capsys.readouterr().out
    assert climb_main(["--steps", "0", "--out", str(out)]) == 2


def test_a_damaged_climb_is_refused(tmp_path: Path) -> None:
    data = json.loads(SHIPPED.read_text())
    data["decades"] = data["decades"][1:]  # starts at 10
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="decades must be 1, 10, 100"):
        load_climb(bad)
    bad.write_text(json.dumps({**data, "format": 9}))
    with pytest.raises(ValueError, match="not a climb"):
        load_climb(bad)
