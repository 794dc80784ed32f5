"""`trainingrun memory` prints the same numbers as the API, as a table or JSON."""

from __future__ import annotations

import json

import pytest

from app.cli.main import main
from app.cli.memory import _parser


def test_table(capsys) -> None:
    assert main(["memory", "--params", "70B", "--precision", "bf16", "--gpu", "h100-80gb"]) == 0
    out = capsys.readouterr().out
    assert "140 GB" in out and "1.12 TB" in out
    assert "GPUs just to fit training" in out and "16" in out


def test_json(capsys) -> None:
    assert main(["memory", "--params", "7B", "--precision", "int4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["weights_bytes"] == 3.5e9
    assert data["gpus_to_serve"] == 1


def test_bad_size_is_an_error(capsys) -> None:
    assert main(["memory", "--params", "0"]) == 2
    assert "--params" in capsys.readouterr().err


def test_help_lists_every_option_with_its_help(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["memory", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for action in _parser()._actions:
        assert action.help, f"{action.option_strings} has no help text"
        assert action.option_strings[-1] in out


def test_bad_choice_is_one_line(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["memory", "--gpu", "h100-8gb"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("trainingrun memory: ") and "--gpu" in err
